"""``harvestflow domain configure|alias|unalias``: the domain page's forms on the command line
(``domain show`` is in :mod:`app.cli.harvest`); the same checks (harvest.office), the changes
audited with ``--user`` (default: the login name), refused unless that user is a crawl engineer
(given the role in every collection, ``*``: ``harvestflow rights grant '*' USER engineer``), as
on the pages (:data:`harvest.office.office_rights.DOMAINS`)."""

from __future__ import annotations

import argparse
import getpass
import sys
from pathlib import Path


def add_domain_cli(sub: argparse._SubParsersAction) -> None:
    """Add configure, alias and unalias under ``domain``."""
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
