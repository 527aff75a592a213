"""``harvestflow`` subcommands of the planning stage: selection import, domain show, jobs list.

Registered by app/cli/main.py through :func:`add_cli`. Handlers import lazily so that the
command line starts fast and a problem here cannot break the other subcommands.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    """Add ``selection``, ``domain``, ``jobs`` and ``harvest`` subcommands."""
    p = subparsers.add_parser("selection", help="curators' selection records")
    sub = p.add_subparsers(dest="selection_command", required=True)
    imp = sub.add_parser("import", help="import a CSV or UKWA JSON crawl feed (re-import updates)")
    imp.add_argument("file", type=Path)
    imp.add_argument(
        "--format", choices=["auto", "csv", "json"], default="auto", help="default: by extension"
    )
    imp.add_argument(
        "--no-url-check", action="store_true", help="skip the online check of new URLs"
    )
    imp.add_argument("--user", default=None, help="recorded as creator/modifier")
    imp.add_argument("--collection", default="ukwa", help="collection of feed items that name none")
    imp.add_argument("--theme", default=None, help="theme of feed items that name none")
    imp.add_argument(
        "--rejects",
        type=Path,
        default=None,
        help="where the refused rows go (default <data_dir>/selection/rejects/FILE.rejects.tsv)",
    )
    imp.set_defaults(func=cmd_selection_import)
    tr = sub.add_parser("transfer", help="transfer active records to harvest definitions")
    tr.add_argument("--frequency", default=None)
    tr.set_defaults(func=cmd_selection_transfer)
    from app.cli.selection_feedback import add_qa_cli, add_selection_cli

    add_selection_cli(sub)

    p = subparsers.add_parser("traps", help="global crawler-trap lists")
    sub = p.add_subparsers(dest="traps_command", required=True)
    load = sub.add_parser("load", help="create or replace a global list from a file")
    load.add_argument("name")
    load.add_argument("file", type=Path)
    load.add_argument("--inactive", action="store_true")
    load.set_defaults(func=cmd_traps_load)

    p = subparsers.add_parser("domain", help="domains of the harvest database")
    sub = p.add_subparsers(dest="domain_command", required=True)
    show = sub.add_parser("show", help="configurations, seeds, aliases and harvest history")
    show.add_argument("name")
    show.add_argument("--history", type=int, default=20, help="history rows shown (default 20)")
    show.set_defaults(func=cmd_domain_show)
    from app.cli.domain_edits import add_domain_cli

    add_domain_cli(sub)

    p = subparsers.add_parser("definitions", help="harvest definitions")
    sub = p.add_subparsers(dest="definitions_command", required=True)
    dl = sub.add_parser("list", help="definitions with schedule, next date and state")
    dl.set_defaults(func=cmd_definitions_list)
    from app.cli.definitions import add_definitions_cli

    add_definitions_cli(sub)

    p = subparsers.add_parser("jobs", help="crawl jobs")
    sub = p.add_subparsers(dest="jobs_command", required=True)
    ls = sub.add_parser("list", help="jobs with status, channel and counts, newest first")
    ls.add_argument("--harvest", type=int, default=None, help="only this harvest definition id")
    ls.add_argument("--status", default=None, help="NEW, SUBMITTED, STARTED, DONE, FAILED...")
    ls.add_argument("--limit", type=int, default=50)
    ls.add_argument("--json", action="store_true", help="JSON lines instead of a table")
    ls.set_defaults(func=cmd_jobs_list)
    gen = sub.add_parser("generate", help="generate the jobs of a definition for a date")
    gen.add_argument("harvest_id", type=int)
    gen.add_argument("--date", default=None, help="logical date (ISO; default now)")
    gen.add_argument("--generator", choices=["default", "fixed"], default=None)
    gen.set_defaults(func=cmd_jobs_generate)
    dead = sub.add_parser("resubmit-dead", help="resubmit jobs left by a dead worker")
    dead.add_argument("--older-than", type=int, default=3600, help="seconds without progress")
    dead.set_defaults(func=cmd_jobs_resubmit_dead)
    from app.cli.jobs_control import add_control_cli

    add_control_cli(sub)
    add_qa_cli(sub)


def _fmt_size(n: int | None) -> str:
    if n is None or n < 0:
        return "unlimited"
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n = n / 1000  # type: ignore[assignment]
    return str(n)


def cmd_selection_import(args: argparse.Namespace) -> int:
    """Exit 0: every record imported; 1: some refused (named, in the rejects file), the
    others imported; 2: the file could not be read as records at all (nothing imported)."""
    from harvest.selection.importer import import_file
    from harvest.selection.records import SelectionFileError

    try:
        report = import_file(
            args.file,
            fmt=args.format,
            check_urls=not args.no_url_check,
            user=args.user,
            collection=args.collection,
            theme=args.theme,
            rejects_path=args.rejects,
        )
    except (OSError, SelectionFileError) as exc:
        print(f"harvestflow selection import: {exc}", file=sys.stderr)
        return 2
    print(report.text())
    return 0 if not report.errors else 1


def cmd_selection_transfer(args: argparse.Namespace) -> int:
    from harvest.selection.transfer import transfer_selection_records

    result = transfer_selection_records(args.frequency)
    print(json.dumps(result, indent=1, default=str))
    return 0


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
            f"{_fmt_size(cfg['maxbytes'])}, seed lists {', '.join(cfg['seedlists']) or '-'}"
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
            f" config {h['config']}: {h['objectcount']} objects, {_fmt_size(h['bytecount'])},"
            f" stopped: {h['stop_reason']}"
        )
    return "\n".join(lines)


def cmd_jobs_list(args: argparse.Namespace) -> int:
    from harvest.jobs import list_jobs
    from harvestflow.formats.job_status import JobStatus

    status = None
    if args.status is not None:
        key = args.status.upper()
        status = JobStatus[key] if key in JobStatus.__members__ else int(args.status)
    rows = list_jobs(harvest_id=args.harvest, status=status, limit=args.limit)
    if args.json:
        for row in rows:
            print(json.dumps(row, default=str))
        return 0
    # the harvest column as wide as its longest name: a one-off's name ends in its run's
    # date and time, which tells two one-offs apart
    width = max([24, *(len(r["harvest_name"]) for r in rows)])
    header = f"{'job':>7} {'harvest':<{width}} {'run':>4} {'status':<12} {'channel':<8} "
    header += f"{'configs':>7} {'objects':>9} {'bytes':>10}  created"
    print(header)
    for r in rows:
        status_text = r["status_name"]
        if r["resubmitted_as_job"]:
            status_text += f"->{r['resubmitted_as_job']}"
        print(
            f"{r['job_id']:>7} {r['harvest_name']:<{width}} {r['harvest_num']:>4} "
            f"{status_text:<12} {r['channel']:<8} {r['num_configs']:>7} {r['objects']:>9} "
            f"{_fmt_size(r['bytes']):>10}  {r['creationdate']:%Y-%m-%d %H:%M}"
        )
    return 0


def cmd_jobs_resubmit_dead(args: argparse.Namespace) -> int:
    from harvest.recovery import resubmit_dead_jobs

    result = resubmit_dead_jobs(stale_after_s=args.older_than)
    print(json.dumps(result, indent=1, default=str))
    return 0


def cmd_traps_load(args: argparse.Namespace) -> int:
    from harvest.traps import load_global_trap_list

    count = load_global_trap_list(args.name, args.file, active=not args.inactive)
    print(f"global crawler-trap list {args.name}: {count} expressions")
    return 0


def cmd_jobs_generate(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from harvest.planning import generate_jobs

    when = datetime.fromisoformat(args.date) if args.date else datetime.now(UTC)
    jobs = generate_jobs(args.harvest_id, when, generator=args.generator)
    print(f"definition {args.harvest_id} at {when.isoformat()}: jobs {jobs}")
    return 0


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
