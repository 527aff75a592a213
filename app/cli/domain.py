"""``harvestflow domain``: a domain's configurations, seeds, aliases and history (``show``), and
the domain page's forms (``configure``, ``alias``, ``unalias``) on the command line.

The changes go through the same checks as the pages (harvest.office), audited with ``--user``
(default: the login name), refused unless that user is a crawl engineer (given the role in every
collection, ``*``: ``harvestflow rights grant '*' USER engineer``), as on the pages
(:data:`harvest.office.office_rights.DOMAINS`).
"""

from __future__ import annotations

import argparse
import getpass
import sys
from pathlib import Path
from typing import Any


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    """Add ``domain`` and its subcommands."""
    p = subparsers.add_parser("domain", help="domains of the harvest database")
    sub = p.add_subparsers(dest="domain_command", required=True)
    show = sub.add_parser("show", help="configurations, seeds, aliases and harvest history")
    show.add_argument("name")
    show.add_argument("--history", type=int, default=20, help="history rows shown (default 20)")
    show.set_defaults(func=cmd_domain_show)
    conf = sub.add_parser("configure", help="change or add a configuration of a domain")
    conf.add_argument("name")
    conf.add_argument("--config", default=None, help="configuration name (default: defaultconfig)")
    conf.add_argument("--template", default=None)
    conf.add_argument("--max-objects", default=None, help="-1 unlimited")
    conf.add_argument("--max-bytes", default=None, help="-1 unlimited")
    conf.add_argument("--seed", action="append", help="a seed URL of the domain (repeat it)")
    conf.add_argument("--seeds-file", type=Path, default=None, help="seed URLs, one per line")
    conf.add_argument("--default", action="store_true", help="make it the domain's default")
    conf.add_argument("--user", default=None)
    conf.set_defaults(func=cmd_configure)
    alias = sub.add_parser("alias", help="make a domain an alias of another (again: renew it)")
    alias.add_argument("name")
    alias.add_argument("--of", required=True, dest="alias_of", help="the domain it mirrors")
    alias.add_argument("--user", default=None)
    alias.set_defaults(func=cmd_alias)
    unalias = sub.add_parser("unalias", help="a domain is no alias any more")
    unalias.add_argument("name")
    unalias.add_argument("--user", default=None)
    unalias.set_defaults(func=cmd_unalias)


def fmt_size(n: int | None) -> str:
    """A byte count for people (``jobs list`` shows it too); None or negative: no limit."""
    if n is None or n < 0:
        return "unlimited"
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n = n / 1000  # type: ignore[assignment]
    return str(n)


def cmd_domain_show(args: argparse.Namespace) -> int:
    from harvest.overview import domain_report

    info = domain_report(args.name, history_limit=args.history)
    if info is None:
        print(f"domain {args.name!r} is not in the harvest database")
        return 1
    print(_domain_text(info))
    return 0


def _domain_text(info: dict[str, Any]) -> str:
    lines = [f"domain {info['name']} (id {info['domain_id']})"]
    state = "active" if info["active"] else f"INACTIVE: {info['inactive_reason'] or '?'}"
    lines.append(f"  state: {state}")
    if info["alias_of"]:
        by = f", by {info['alias_set_by']}" if info["alias_set_by"] else ""
        lines.append(f"  alias of {info['alias_of']} (since {info['lastaliasupdate']}{by})")
    if info["aliases"]:
        lines.append(f"  aliases: {', '.join(info['aliases'])}")
    if info["crawlertraps"]:
        lines.append(f"  crawler traps: {', '.join(info['crawlertraps'])}")
    lines.append("  configurations:")
    for cfg in info["configurations"]:
        default = " (default)" if cfg["default"] else ""
        lines.append(
            f"    {cfg['name']}{default}: template {cfg['template']}, max objects "
            f"{cfg['maxobjects'] if cfg['maxobjects'] >= 0 else 'unlimited'}, max bytes "
            f"{fmt_size(cfg['maxbytes'])}, seed lists {', '.join(cfg['seedlists']) or '-'}"
        )
    lines.append("  seed lists:")
    for sl in info["seedlists"]:
        lines.append(f"    {sl['name']}:")
        lines.extend(f"      {seed}" for seed in sl["seeds"])
    lines.append("  harvest history (newest first):")
    if not info["history"]:
        lines.append("    never harvested")
    for h in info["history"]:
        lines.append(
            f"    {h['harvest_time']:%Y-%m-%d %H:%M} {h['harvest_name']} job {h['job_id']}"
            f" config {h['config']}: {h['objectcount']} objects, {fmt_size(h['bytecount'])},"
            f" stopped: {h['stop_reason']}"
        )
    return "\n".join(lines)


def _refused(exc: Exception) -> int:
    print(f"harvestflow domain: refused: {exc}", file=sys.stderr)
    return 1


def _allowed(args: argparse.Namespace) -> str:
    """The user, when they may change domains (:class:`harvest.rights.Forbidden` otherwise)."""
    from harvest.common import engine_or_default
    from harvest.office.office_rights import DOMAINS
    from harvest.rights import COMMAND_LINE

    user = str(args.user or getpass.getuser())
    with engine_or_default(None).connect() as conn:
        return DOMAINS.check(conn, user, COMMAND_LINE)


def cmd_configure(args: argparse.Namespace) -> int:
    from harvest.office.definition_form import OfficeError
    from harvest.office.domain_edits import save_configuration
    from harvest.rights import RightsError

    values = {
        "config": args.config, "template": args.template, "max_objects": args.max_objects,
        "max_bytes": args.max_bytes, "default": "yes" if args.default else None,
    }  # fmt: skip
    seeds = list(args.seed or [])
    try:
        if args.seeds_file is not None:
            seeds += args.seeds_file.read_text(encoding="utf-8").splitlines()
        given = {k: str(v) for k, v in values.items() if v is not None}
        if seeds:
            given["seeds"] = "\n".join(seeds)
        cid = save_configuration(args.name, given, _allowed(args))
    except (OfficeError, RightsError, OSError) as exc:
        return _refused(exc)
    print(f"domain {args.name}: configuration {args.config or 'defaultconfig'} saved (id {cid})")
    return 0


def cmd_alias(args: argparse.Namespace) -> int:
    from harvest.office.definition_form import OfficeError
    from harvest.office.domain_edits import set_alias
    from harvest.rights import RightsError

    try:
        expiry = set_alias(args.name, args.alias_of, _allowed(args))
    except (OfficeError, RightsError) as exc:
        return _refused(exc)
    print(
        f"{args.name} is an alias of {args.alias_of} until {expiry:%Y-%m-%d %H:%M} UTC"
        " (left out of snapshots until then)"
    )
    return 0


def cmd_unalias(args: argparse.Namespace) -> int:
    from harvest.office.definition_form import OfficeError
    from harvest.office.domain_edits import remove_alias
    from harvest.rights import RightsError

    try:
        remove_alias(args.name, _allowed(args))
    except (OfficeError, RightsError) as exc:
        return _refused(exc)
    print(f"{args.name} is no alias any more: the next snapshot harvests it")
    return 0
