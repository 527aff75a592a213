"""``harvestflow selection annotate|annotations|export`` and ``harvestflow jobs qa``: curators'
annotations of targets, QA feedback on jobs and the crawl feed's export, from the command line.

The same functions as the curator pages (:mod:`harvest.selection.annotations`,
:mod:`harvest.selection.qa_feedback`, :mod:`harvest.selection.feed_export`); who writes is
``--user`` (default ``$USER``). Exit codes: 0 done; 1 refused (the reason on stderr), or for
``jobs qa`` stored with URLs that the next transfer will not add, or for ``export`` records
left out (named); 2 the file cannot be written.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
from pathlib import Path


def _user(args: argparse.Namespace) -> str:
    return str(args.user or os.environ.get("USER") or getpass.getuser())


def add_selection_cli(selection: argparse._SubParsersAction) -> None:
    """``annotate``, ``annotations`` and ``export`` under ``harvestflow selection``."""
    ann = selection.add_parser(
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
    show = selection.add_parser("annotations", help="a record's annotation and its history")
    show.add_argument("record_id", type=int)
    show.set_defaults(func=cmd_annotations)
    exp = selection.add_parser(
        "export", help="write the records as a crawl feed (JSON) with annotations and QA"
    )
    exp.add_argument("file", type=Path)
    exp.add_argument("--collection", default=None, help="only this collection")
    exp.set_defaults(func=cmd_export)


def add_qa_cli(jobs: argparse._SubParsersAction) -> None:
    """``harvestflow jobs qa JOB``: show, or write a QA comment."""
    qa = jobs.add_parser(
        "qa", help="a job's QA status and comments; with options, write a QA comment"
    )
    qa.add_argument("job_id", type=int)
    qa.add_argument("--status", default=None, help="not_checked, passed, issues or failed")
    qa.add_argument("--comment", default="", help="the comment's text")
    qa.add_argument(
        "--add-url", action="append", default=[], metavar="URL", help="add to the next harvest"
    )
    qa.add_argument("--max-objects", type=int, default=None, help="raise the budget (-1: none)")
    qa.add_argument("--max-bytes", type=int, default=None, help="raise the budget (-1: none)")
    qa.add_argument("--record", type=int, default=None, help="the record the directives are for")
    qa.add_argument("--user", default=None, help="who writes (default: $USER)")
    qa.set_defaults(func=cmd_jobs_qa)


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


def cmd_jobs_qa(args: argparse.Namespace) -> int:
    from harvest import rights
    from harvest.common import engine_or_default
    from harvest.office import office_rights
    from harvest.selection import qa_feedback

    writes = args.status or args.comment or args.add_url
    writes = writes or args.max_objects is not None or args.max_bytes is not None
    engine = engine_or_default(None)
    problems: list[tuple[str, str]] = []
    if writes:
        try:
            with engine.begin() as conn:
                needed = office_rights.job_write(
                    conn, args.job_id, "comment jobs", record_id=args.record,
                    directives=bool(args.add_url) or args.max_objects is not None
                    or args.max_bytes is not None,
                )  # fmt: skip
                needed.check(conn, _user(args), rights.COMMAND_LINE)
                comment = qa_feedback.write_comment(
                    conn,
                    args.job_id,
                    _user(args),
                    args.comment,
                    status=args.status,
                    record_id=args.record,
                    add_urls=args.add_url,
                    max_objects=args.max_objects,
                    max_bytes=args.max_bytes,
                )
        except (qa_feedback.FeedbackError, rights.RightsError) as exc:
            print(f"harvestflow jobs qa: {exc}", file=sys.stderr)
            return 1
        problems = comment.url_problems()
        for url, why in problems:
            print(f"harvestflow jobs qa: {url!r} will not be added: {why}", file=sys.stderr)
    with engine.connect() as conn:
        status = qa_feedback.job_status(conn, args.job_id)
        comments = qa_feedback.comments(conn, job_id=args.job_id)
    print(f"job {args.job_id}: QA {status}")
    for c in comments:
        print(f"  {json.dumps(c.as_feed(), ensure_ascii=False)}")
    return 1 if problems else 0
