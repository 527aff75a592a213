"""``harvestflow definitions``: the harvest definitions (``list``) and the curator pages'
definition forms (create, edit, show, deactivate, reactivate) on the command line.

The options are the form's fields, checked by the same function (harvest.office); ``edit``
changes only the options given. Every change is a version with ``--user`` (default: the
login name) and the time, and is refused when that user's role in the definition's collections
does not allow it (:mod:`harvest.office.office_rights`, as the pages; the user is a curator
where a collection names nobody: :data:`harvest.rights.COMMAND_LINE`).
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sqlalchemy as sa

    from harvest.office.office_rights import Needed

# the options that are the form's fields of the same name (the values are the form's, as text)
FORM_OPTIONS = ("name", "comments", "collection", "template", "max_objects", "max_bytes", "schedule", "every",
                "unit", "at_minute", "at_hour", "weekday", "day", "start", "end", "repeats",
                "cron")  # fmt: skip


def _user_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--user", default=None, help="recorded as the author (default: login)")


def _form_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--name")
    parser.add_argument("--comments")
    parser.add_argument("--collection", help="its collection: its curators may change it")
    parser.add_argument("--seed", action="append", help="a seed URL (repeat it)")
    parser.add_argument("--seeds-file", type=Path, help="seed URLs, one per line")
    parser.add_argument("--template", help="crawl template (harvestflow templates list)")
    parser.add_argument("--max-objects", help="per-domain object limit (-1 unlimited)")
    parser.add_argument("--max-bytes", help="per-domain byte limit (-1 unlimited)")
    parser.add_argument("--schedule", choices=["none", "every", "cron"],
                        help="none: a one-off; every: every N units; cron: a cron expression")  # fmt: skip
    parser.add_argument("--every", help="every N units")
    parser.add_argument("--unit", choices=["hour", "day", "week", "month"])
    parser.add_argument("--at-minute", help="hourly and longer: the minute (0-59)")
    parser.add_argument("--at-hour", help="daily and longer: the hour (0-23, UTC)")
    parser.add_argument("--weekday", help="weekly: monday..sunday")
    parser.add_argument("--day", help="monthly: the day of the month (1-31)")
    parser.add_argument("--start", help="YYYY-MM-DD[ HH:MM] UTC (default: now)")
    parser.add_argument("--end", help="YYYY-MM-DD[ HH:MM] UTC")
    parser.add_argument("--repeats", help="number of harvests, then it stops")
    parser.add_argument("--cron", help="cron expression (minute hour day month weekday, UTC)")
    _user_option(parser)


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    """Add ``definitions`` and its subcommands."""
    p = subparsers.add_parser("definitions", help="harvest definitions")
    sub = p.add_subparsers(dest="definitions_command", required=True)
    dl = sub.add_parser("list", help="definitions with schedule, next date and state")
    dl.set_defaults(func=cmd_definitions_list)
    create = sub.add_parser("create", help="a selective or one-off definition with its seeds")
    _form_options(create)
    create.set_defaults(func=cmd_create)
    edit = sub.add_parser("edit", help="change a definition (only the options given)")
    edit.add_argument("harvest_id", type=int)
    _form_options(edit)
    edit.set_defaults(func=cmd_edit)
    show = sub.add_parser("show", help="a definition, its schedule, seeds and versions")
    show.add_argument("harvest_id", type=int)
    show.add_argument("--json", action="store_true")
    show.set_defaults(func=cmd_show)
    for name, helptext in (("deactivate", "switch a definition off (with --reason)"),
                           ("reactivate", "switch a definition back on")):  # fmt: skip
        p = sub.add_parser(name, help=helptext)
        p.add_argument("harvest_id", type=int)
        if name == "deactivate":
            p.add_argument("--reason", default="")
        _user_option(p)
        p.set_defaults(func=cmd_switch, active=name == "reactivate")


def cmd_definitions_list(args: argparse.Namespace) -> int:
    from harvest.overview import list_definitions

    print(f"{'id':>5} {'name':<32} {'kind':<8} {'frequency':<10} {'configs':>7} {'runs':>4}  state")
    for d in list_definitions():
        kind = "selective" if d["kind"] == "partial" else "snapshot"
        state = "active" if d["isactive"] else f"INACTIVE: {d['inactive_reason']}"
        if d["isactive"] and d["nextdate"] is not None:
            state += f", next {d['nextdate']:%Y-%m-%d %H:%M}"
        print(
            f"{d['harvest_id']:>5} {d['name'][:32]:<32} {kind:<8} {d['frequency'] or '-':<10} "
            f"{d['configs']:>7} {d['numevents']:>4}  {state}"
        )
    return 0


def _given(args: argparse.Namespace) -> dict[str, str]:
    values = {
        name: str(getattr(args, name)) for name in FORM_OPTIONS if getattr(args, name) is not None
    }
    seeds = list(args.seed or [])
    if args.seeds_file is not None:
        seeds += args.seeds_file.read_text(encoding="utf-8").splitlines()
    if seeds:
        values["seeds"] = "\n".join(seeds)
    return values


def _user(args: argparse.Namespace) -> str:
    return str(args.user or getpass.getuser())


def _refused(exc: Exception) -> int:
    print(f"harvestflow definitions: refused: {exc}", file=sys.stderr)
    return 1


def _check(engine: sa.Engine, user: str, needed: Callable[[sa.Connection], Needed]) -> None:
    """The user's right to the write (:class:`harvest.rights.Forbidden` otherwise)."""
    from harvest import rights

    with engine.connect() as conn:
        needed(conn).check(conn, user, rights.COMMAND_LINE)


def cmd_create(args: argparse.Namespace) -> int:
    from harvest.common import engine_or_default
    from harvest.office.definition_edits import save_definition
    from harvest.office.definition_form import OfficeError
    from harvest.office.office_rights import definition_write
    from harvest.rights import RightsError

    engine = engine_or_default(None)
    try:
        values = {"schedule": "none", **_given(args)}
        _check(engine, _user(args), lambda conn: definition_write(conn, None, values))
        hid = save_definition(values, _user(args), engine=engine)
    except (OfficeError, RightsError, OSError) as exc:
        return _refused(exc)
    print(f"definition {hid} created")
    return cmd_show(argparse.Namespace(harvest_id=hid, json=False))


def cmd_edit(args: argparse.Namespace) -> int:
    from harvest.common import engine_or_default
    from harvest.office.definition_edits import form_values, read_definition, save_definition
    from harvest.office.definition_form import OfficeError
    from harvest.office.office_rights import definition_write
    from harvest.rights import RightsError

    engine = engine_or_default(None)
    with engine.connect() as conn:
        found = read_definition(conn, args.harvest_id)
    if found is None:
        return _refused(Exception(f"no harvest definition {args.harvest_id}"))
    values = form_values(found)
    try:
        given = _given(args)
        if given.get("schedule", values["schedule"]) != values["schedule"]:
            values = {k: v for k, v in values.items() if k in ("name", "comments", "collection",
                      "seeds", "template", "max_objects", "max_bytes", "edition")}  # fmt: skip
        values = {**values, **given}
        _check(engine, _user(args), lambda conn: definition_write(conn, args.harvest_id, values))
        save_definition(values, _user(args), args.harvest_id, engine=engine)
    except (OfficeError, RightsError, OSError) as exc:
        return _refused(exc)
    print(f"definition {args.harvest_id} saved")
    return cmd_show(argparse.Namespace(harvest_id=args.harvest_id, json=False))


def cmd_switch(args: argparse.Namespace) -> int:
    from harvest.common import engine_or_default
    from harvest.office.definition_edits import set_active
    from harvest.office.definition_form import OfficeError
    from harvest.office.office_rights import definition_switch
    from harvest.rights import RightsError

    engine = engine_or_default(None)
    try:
        _check(engine, _user(args), lambda conn: definition_switch(conn, args.harvest_id))
        set_active(args.harvest_id, args.active, _user(args), getattr(args, "reason", ""),
                   engine=engine)  # fmt: skip
    except (OfficeError, RightsError) as exc:
        return _refused(exc)
    state = "reactivated" if args.active else "deactivated"
    print(f"definition {args.harvest_id} {state}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from harvest.common import engine_or_default
    from harvest.office.definition_edits import definition_history, read_definition

    with engine_or_default(None).connect() as conn:
        found = read_definition(conn, args.harvest_id)
        history = definition_history(conn, args.harvest_id, limit=20) if found else []
    if found is None:
        return _refused(Exception(f"no harvest definition {args.harvest_id}"))
    if args.json:
        shown = {k: v for k, v in found.items() if k != "schedule"}
        print(json.dumps({**shown, "history": history}, default=str, indent=1))
        return 0
    print(_text(found, history))
    return 0


def _text(found: dict[str, Any], history: list[dict[str, Any]]) -> str:
    state = "active" if found["isactive"] else f"INACTIVE: {found['inactive_reason']}"
    lines = [
        f"definition {found['harvest_id']} {found['name']} ({state}, edition {found['edition']})",
        f"  schedule: {found['schedule_text']}",
        f"  collection(s): {', '.join(found['collections']) or 'none (the global roles)'}",
    ]
    if found["isactive"] and found["nextdate"] is not None:
        lines.append(f"  next harvest: {found['nextdate']:%Y-%m-%d %H:%M} UTC")
    lines.append(
        f"  template {found['template']}, per domain: max objects {found['max_objects']},"
        f" max bytes {found['max_bytes']}"
    )
    if found["editable"]:
        lines.append(f"  not editable here: {found['editable']}")
    lines.append(f"  seeds ({len(found['seeds'])}):")
    lines.extend(f"    {seed}" for seed in found["seeds"])
    lines.append("  versions (newest first):")
    for h in history:
        lines.append(
            f"    {h['edition']:>4} {h['changed_at']:%Y-%m-%d %H:%M} {h['changed_by']}"
            f" {h['action']}: {h['definition'].get('schedule_text', '')}"
        )
    return "\n".join(lines)
