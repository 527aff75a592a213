"""``harvestflow access ...``: the replay service (registered through :func:`add_cli`).

- ``access setup``: create the replay virtualenv with pywb (``access/setup-replay.sh``);
- ``access serve``: pywb + our WARC resolver until Ctrl-C (what ``harvestflow up`` starts);
- ``access reindex [--force]``: rebuild the ZipNum indexes (``all``, each collection, each
  harvest definition) whose big CDXJ changed, refresh the
  flat files not merged yet (what the ``indexing_merge`` DAG runs after its big merge), and
  publish the per-definition collections, the rules' ACL file and the home page;
- ``access config``: print the generated pywb configuration;
- ``access rules add|list|remove``: access rules by SURT prefix (:mod:`access.rules`);
- ``access tours add|list|show|remove|add-site|remove-site``: guided tours (:mod:`access.tours`);
- ``access curated create|add|drop|remove|list``: curated collections (:mod:`access.curated`).

A change to rules or tours is published at once (ACL file, home page) for a service reading
this data directory; a service elsewhere picks it up at its next refresh.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
from typing import Any


def cmd_setup(args: argparse.Namespace) -> int:
    from access.service import setup

    setup()
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from access.service import ReplayService

    return ReplayService().serve_forever()


def cmd_reindex(args: argparse.Namespace) -> int:
    from access.pipeline import refresh_access

    result = refresh_access(force=args.force)
    print(json.dumps(result, indent=1, sort_keys=True))
    return 0


def cmd_config(args: argparse.Namespace) -> int:
    from access.pywbconfig import render

    print(render(), end="")
    return 0


def _user(args: argparse.Namespace) -> str:
    return str(args.user or os.environ.get("USER") or getpass.getuser())


def _published() -> None:
    """Bring the served files up to date now (the service's refresh would, later)."""
    from access.publish import publish

    try:
        publish()
    except OSError as exc:  # stored all the same: a running service publishes it on its refresh
        print(
            f"harvestflow access: stored; not published here ({exc}): the replay service applies"
            " it at its next refresh",
            file=sys.stderr,
        )


def _refused(exc: Exception) -> int:
    print(f"harvestflow access: {exc}", file=sys.stderr)
    return 1


def _rule_dict(rule: Any) -> dict[str, Any]:
    from dataclasses import asdict

    return {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in asdict(rule).items()}


def cmd_rules(args: argparse.Namespace) -> int:
    from access import rules
    from harvestflow.db import get_engine

    engine = get_engine()
    try:
        if args.rules_command == "add":
            rule = rules.add(
                engine,
                args.prefix,
                args.policy,
                user=_user(args),
                reason=args.reason,
                embargo_days=args.embargo_days,
            )
            _published()
            if rule.surt != args.prefix.strip():
                print(f"prefix {args.prefix.strip()!r} canonicalised to {rule.surt!r}")
            print(f"in force: {rule.describe()}")
        elif args.rules_command == "remove":
            rule = rules.remove(engine, args.rule, user=_user(args))
            _published()
            print(f"removed: {rule.describe()}")
        else:
            shown = rules.history(engine) if args.history else rules.active(engine)
            if args.json:
                print(json.dumps([_rule_dict(r) for r in shown], indent=1))
            for r in [] if args.json else shown:
                removed = (
                    f"  removed {r.removed_at:%Y-%m-%d %H:%M} by {r.removed_by}"
                    if (r.removed_at)
                    else ""
                )
                never = "" if rules.canonical(r) else "  NEVER MATCHES: not canonical, add it again"
                print(
                    f"{r.describe()}  added {r.created_at:%Y-%m-%d %H:%M} by {r.created_by}"
                    f"{removed}{never}"
                )
    except rules.RuleError as exc:
        return _refused(exc)
    return 0


def cmd_tours(args: argparse.Namespace) -> int:
    from access import tours
    from harvestflow.db import get_engine

    engine = get_engine()
    cmd = args.tours_command
    try:
        if cmd == "add":
            tours.add(engine, args.name, args.title, args.description, user=_user(args))
        elif cmd == "add-site":
            tours.add_site(
                engine,
                args.name,
                args.url,
                args.capture,
                collection=args.collection,
                title=args.title,
                description=args.description,
            )
        elif cmd == "remove-site":
            tours.remove_site(engine, args.name, args.position)
        elif cmd == "remove":
            tours.remove(engine, args.name)
        elif cmd == "show":
            tour = tours.get(engine, args.name)
            print(f"{tour.name}: {tour.title}\n{tour.description}".rstrip())
            for site in tour.sites:
                print(
                    f"  {site.position}. /{site.collection}/{site.capture}/{site.url}  {site.title}"
                )
            return 0
        else:
            for tour in tours.all_tours(engine):
                print(f"{tour.name}\t{len(tour.sites)} site(s)\t{tour.title}")
            return 0
    except tours.TourError as exc:
        return _refused(exc)
    _published()
    return 0


def cmd_curated(args: argparse.Namespace) -> int:
    from access import curated
    from harvestflow.db import get_engine

    engine = get_engine()
    cmd = args.curated_command
    try:
        if cmd == "create":
            curated.create(engine, args.name, args.title, args.description, user=_user(args))
        elif cmd == "add":
            curated.choose(engine, args.name, args.record_id, args.job_id, user=_user(args))
        elif cmd == "drop":
            curated.unchoose(engine, args.name, args.record_id, args.job_id)
        elif cmd == "remove":
            curated.remove(engine, args.name)
        else:
            for coll in curated.all_curated(engine):
                print(f"{coll.name}\t{len(coll.choices)} choice(s)\t{coll.title}")
                for c in coll.choices:
                    print(f"  record {c.record_id} ({c.seed_url}) from job {c.job_id}")
            return 0
    except curated.CuratedError as exc:
        return _refused(exc)
    _published()
    return 0


def _add_curated_cli(acc: argparse._SubParsersAction) -> None:
    p = acc.add_parser("curated", help="curated collections: targets with chosen captures")
    sub = p.add_subparsers(dest="curated_command", required=True)
    s = sub.add_parser("create", help="a new curated collection (served as /<name>/)")
    s.add_argument("name", help="lower-case letters, digits, '-'")
    s.add_argument("--title", required=True)
    s.add_argument("--description", default="")
    s.add_argument("--user", help="who makes it (default $USER)")
    s.set_defaults(func=cmd_curated)
    for verb, what in (("add", "show a job's captures of a target"),
                       ("drop", "stop showing them")):  # fmt: skip
        s = sub.add_parser(verb, help=what)
        s.add_argument("name")
        s.add_argument("record_id", type=int, help="the target (selection record)")
        s.add_argument("job_id", type=int, help="the job whose captures (any job, broad too)")
        s.add_argument("--user", help="who chooses (default $USER)")
        s.set_defaults(func=cmd_curated)
    s = sub.add_parser("remove", help="delete a curated collection")
    s.add_argument("name")
    s.set_defaults(func=cmd_curated)
    s = sub.add_parser("list", help="the curated collections and their choices")
    s.set_defaults(func=cmd_curated)


def _add_rules_cli(acc: argparse._SubParsersAction) -> None:
    from access import POLICIES

    p = acc.add_parser("rules", help="access rules by SURT prefix (allow/block/exclude, embargo)")
    sub = p.add_subparsers(dest="rules_command", required=True)
    s = sub.add_parser("add", help="put a rule in force for a SURT prefix (replaces its rule)")
    s.add_argument("prefix", help="SURT prefix (org,example)/private) or URL; '*' = everything")
    s.add_argument(
        "--policy",
        required=True,
        choices=POLICIES,
        help="open: allowed, and open outside the reading room (what a granted licence makes)",
    )
    s.add_argument(
        "--embargo-days",
        type=int,
        help="apply only to captures younger than this many days (block/exclude)",
    )
    s.add_argument("--reason", default="", help="why (shown in the refusal log)")
    s.add_argument("--user", help="who makes the change (default $USER)")
    s.set_defaults(func=cmd_rules)
    s = sub.add_parser("list", help="the rules in force (--history: every version)")
    s.add_argument("--history", action="store_true")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_rules)
    s = sub.add_parser("remove", help="take a rule out of force (kept as history)")
    s.add_argument("rule", help="rule id or its SURT prefix")
    s.add_argument("--user", help="who makes the change (default $USER)")
    s.set_defaults(func=cmd_rules)


def _add_tours_cli(acc: argparse._SubParsersAction) -> None:
    p = acc.add_parser("tours", help="guided tours shown on the access home page")
    sub = p.add_subparsers(dest="tours_command", required=True)
    s = sub.add_parser("add", help="create a tour")
    s.add_argument("name", help="short name: lower-case letters, digits, '-'")
    s.add_argument("--title", required=True)
    s.add_argument("--description", default="")
    s.add_argument("--user", help="who creates it (default $USER)")
    s = sub.add_parser("add-site", help="append an entry point with its chosen capture")
    s.add_argument("name")
    s.add_argument("url")
    s.add_argument("--capture", required=True, help="timestamp YYYY[MMDDhhmmss] of the capture")
    s.add_argument("--collection", default="all")
    s.add_argument("--title", default="")
    s.add_argument("--description", default="")
    s = sub.add_parser("remove-site", help="remove a tour's site by its position")
    s.add_argument("name")
    s.add_argument("position", type=int)
    s = sub.add_parser("remove", help="delete a tour and its sites")
    s.add_argument("name")
    s = sub.add_parser("show", help="a tour and its sites")
    s.add_argument("name")
    sub.add_parser("list", help="every tour")
    p.set_defaults(func=cmd_tours)


def add_cli(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("access", help="the replay service (pywb): setup, serve, reindex")
    acc = p.add_subparsers(dest="access_command", required=True)
    s = acc.add_parser("setup", help="create the replay virtualenv with pywb (idempotent)")
    s.set_defaults(func=cmd_setup)
    s = acc.add_parser("serve", help="serve replay (pywb + WARC resolver) until Ctrl-C")
    s.set_defaults(func=cmd_serve)
    s = acc.add_parser("reindex", help="rebuild ZipNum and collection indexes (idempotent)")
    s.add_argument("--force", action="store_true", help="rebuild even if the inputs are unchanged")
    s.set_defaults(func=cmd_reindex)
    s = acc.add_parser("config", help="print the generated pywb config.yaml")
    s.set_defaults(func=cmd_config)
    _add_rules_cli(acc)
    _add_tours_cli(acc)
    _add_curated_cli(acc)
