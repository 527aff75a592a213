"""``harvestflow selection``: curators' selection records from the command line.

``import`` reads a CSV or UKWA JSON crawl feed, ``transfer`` turns active records into harvest
definitions; ``annotate``, ``annotations`` and ``export`` are the curator pages' annotations of
targets and the crawl feed's export, through the same functions
(:mod:`harvest.selection.annotations`, :mod:`harvest.selection.feed_export`); who writes is
``--user`` (default ``$USER``). Exit codes: 0 done; 1 refused (the reason on stderr), some rows
refused on import, or records left out of an export (named); 2 the file cannot be read or written.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
from pathlib import Path


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    """Add ``selection`` and its subcommands (handlers import lazily: a fast start)."""
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
    ann = sub.add_parser(
        "annotate", help="a record's scope evidence, licence and notes (a new version)"
    )
    ann.add_argument("record_id", type=int)
    ann.add_argument(
        "--evidence",
        action="append",
        metavar="KIND[:TEXT]",
        help="scope evidence: domain, address or manual:TEXT (repeatable; replaces the list)",
    )
    ann.add_argument("--no-evidence", action="store_true", help="clear the scope evidence")
    ann.add_argument("--licence", default=None, help="not_requested, requested, granted or refused")
    ann.add_argument("--licence-date", default=None, help="YYYY-MM-DD ('' clears)")
    ann.add_argument("--licence-note", default=None)
    ann.add_argument("--notes", default=None, help="free notes ('' clears)")
    ann.add_argument("--user", default=None, help="who writes (default: $USER)")
    ann.set_defaults(func=cmd_annotate)
    show = sub.add_parser("annotations", help="a record's annotation and its history")
    show.add_argument("record_id", type=int)
    show.set_defaults(func=cmd_annotations)
    exp = sub.add_parser(
        "export", help="write the records as a crawl feed (JSON) with annotations and QA"
    )
    exp.add_argument("file", type=Path)
    exp.add_argument("--collection", default=None, help="only this collection")
    exp.set_defaults(func=cmd_export)


def _user(args: argparse.Namespace) -> str:
    return str(args.user or os.environ.get("USER") or getpass.getuser())


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


def _evidence(values: list[str]) -> list[dict[str, str]]:
    found = []
    for value in values:
        kind, _, text = value.partition(":")
        found.append({"kind": kind, "text": text})
    return found


def cmd_annotate(args: argparse.Namespace) -> int:
    from harvest import rights
    from harvest.common import engine_or_default
    from harvest.selection.annotations import AnnotationError, annotate
    from harvest.selection.record_search import collections_of

    evidence = [] if args.no_evidence else (_evidence(args.evidence) if args.evidence else None)
    try:
        with engine_or_default(None).begin() as conn:
            where = collections_of(conn, [args.record_id])
            rights.check(conn, _user(args), where.values(), rights.Role.CURATOR,
                         rights.COMMAND_LINE, what="annotate targets")  # fmt: skip
            now = annotate(
                conn,
                args.record_id,
                _user(args),
                scope_evidence=evidence,
                licence_status=args.licence,
                licence_date=args.licence_date,
                licence_note=args.licence_note,
                notes=args.notes,
            )
    except (AnnotationError, rights.RightsError) as exc:
        print(f"harvestflow selection annotate: {exc}", file=sys.stderr)
        return 1
    from access import licences

    done = licences.sync(engine_or_default(None))  # the licence's access rule, in force now
    for rule in done.added:
        print(f"in force: {rule.describe()}", file=sys.stderr)
    for rule in done.removed:
        print(f"removed: {rule.describe()}", file=sys.stderr)
    print(json.dumps(now.as_feed(), indent=1, ensure_ascii=False))
    return 0


def cmd_annotations(args: argparse.Namespace) -> int:
    from harvest.common import engine_or_default
    from harvest.selection.annotations import history

    with engine_or_default(None).connect() as conn:
        versions = history(conn, args.record_id)
    if not versions:
        print(f"record {args.record_id}: never annotated")
    for number, version in enumerate(versions):
        label = "now" if number == 0 else f"version {version.version_id}"
        print(f"{label}: {json.dumps(version.as_feed(), ensure_ascii=False)}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from harvest.selection.feed_export import export_feed

    try:
        count, left_out = export_feed(args.file, collection=args.collection)
    except OSError as exc:
        print(f"harvestflow selection export: {exc}", file=sys.stderr)
        return 2
    for line in left_out:
        print(f"harvestflow selection export: {line}", file=sys.stderr)
    print(f"{args.file}: {count} targets")
    return 1 if left_out else 0
