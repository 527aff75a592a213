"""``harvestflow index ...`` subcommands (registered by harvestflow's CLI through :func:`add_cli`).

- ``index cdx FILE... [--format cdxj|cdx11]``: index lines of WARC or ARC files on stdout, in
  record order, exactly what cdxj-indexer (or ``cdxj-indexer -11``) prints for the same files:
  the code the chain runs. Exit 1 when a file is damaged (its readable records are printed, the
  damage is named with its offset on stderr), 2 when a file could not be indexed at all.
- ``index delivery DIR --name NAME``: a retrospective delivery as one job (indexing.delivery).
- ``index run``: ingest + every pending file through the chain; ``index merge [--day D]``;
  ``index bigmerge``; ``index clean``; ``index dedup OUT DOMAIN... [--collection NAME]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from harvestflow.formats.cdx import FORMATS
from indexing.cdx import NotAWarcError, index_warc


@dataclass
class FileLines:
    """One file's index lines as text (built in the worker: line building is half the work)."""

    path: str
    text: str = ""
    records: int = 0
    damage: str | None = None
    error: str | None = None


def _index_one(job: tuple[str, bool, str]) -> FileLines:
    path, verify, fmt = job
    try:
        result = index_warc(path, verify=verify)
    except NotAWarcError as exc:
        return FileLines(path, error=str(exc))
    except OSError as exc:
        return FileLines(path, error=f"cannot read: {exc}")
    lines = result.lines(fmt, Path(path).name)
    text = "\n".join(lines) + "\n" if lines else ""
    return FileLines(path, text, len(result.captures), result.damage_text())


def iter_results(
    paths: list[str], processes: int, verify: bool = True, fmt: str = "cdxj"
) -> Iterator[FileLines]:
    """Index ``paths`` (in parallel when several), yielding results in input order."""
    jobs = [(p, verify, fmt) for p in paths]
    if processes <= 1 or len(paths) <= 1:
        yield from (_index_one(j) for j in jobs)
        return
    with get_context(_start_method()).Pool(min(processes, len(paths))) as pool:
        yield from pool.imap(_index_one, jobs)


def _start_method() -> str:
    """ "fork" from a single-threaded parent (the CLI), else "spawn".

    Why: a spawned worker starts an interpreter and imports the indexing stack again (~0.15
    CPU-seconds each, measured); a forked one inherits the parent's modules. Forking a
    threaded parent (an Airflow task, DB pools) can copy a lock held by another thread, so a
    parent with threads keeps "spawn".
    """
    return "fork" if threading.active_count() == 1 else "spawn"


def cmd_cdx(args: argparse.Namespace) -> int:
    status = 0
    out = sys.stdout
    processes = args.processes
    if processes is None:
        from harvestflow.settings import get_settings

        processes = int(get_settings()["indexing"]["scan_processes"])
    for res in iter_results(args.warcs, processes, args.verify, args.format):
        if res.error is not None:
            print(f"index cdx: {res.path}: {res.error}", file=sys.stderr)
            status = max(status, 2)
            continue
        out.write(res.text)
        if res.damage is not None:
            print(
                f"index cdx: {res.path}: {res.damage} ({res.records} records indexed)",
                file=sys.stderr,
            )
            status = max(status, 1)
    out.flush()
    return status


def _print(obj: object) -> int:
    print(json.dumps(obj, indent=1, default=str))
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from indexing.chain import run_chain

    return _print(run_chain())


def cmd_merge(args: argparse.Namespace) -> int:
    from indexing.merge import daily_merge

    day = args.day or (datetime.now(UTC).date() - timedelta(days=1))
    return _print(daily_merge(day))


def cmd_bigmerge(args: argparse.Namespace) -> int:
    from indexing.merge import bigmerge

    return _print(bigmerge())


def cmd_clean(args: argparse.Namespace) -> int:
    from indexing.cleanup import clean_arc_repository

    return _print(clean_arc_repository(preserved=args.preserved))


def _file_preserved(engine: Any, job_id: int | None, file_name: str) -> bool:
    """Preservation's answer for ``index clean``: indexing.cleanup asks it before deleting an
    original (indexing may not import preservation, so the command hands it in)."""
    from preservation.records import file_preserved

    return file_preserved(engine, job_id, file_name)


def cmd_dedup(args: argparse.Namespace) -> int:
    from indexing.dedup_index import write_index

    captures = write_index(args.out, args.domain, collection=args.collection)
    return _print({"dedup_index": str(args.out), "captures": captures})


def cmd_delivery(args: argparse.Namespace) -> int:
    from indexing.delivery import register_delivery

    result = register_delivery(args.directory, args.name)
    _print(result.as_dict())
    for name, why in result.refused.items():
        print(f"index delivery: {args.directory}/{name}: refused: {why}", file=sys.stderr)
    return 1 if result.refused or not (result.registered or result.already) else 0


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    """Register ``index`` and its subcommands; each sets ``func`` returning an exit code."""
    index = subparsers.add_parser("index", help="CDX indexing chain")
    sub = index.add_subparsers(dest="index_command", required=True)

    cdx = sub.add_parser("cdx", help="print the CDX/CDXJ lines of WARC or ARC files")
    cdx.add_argument("warcs", nargs="+", metavar="WARC_OR_ARC")
    cdx.add_argument("--format", choices=FORMATS, default="cdxj")
    cdx.add_argument(
        "--processes",
        type=int,
        default=None,
        help="files indexed in parallel (default: [indexing] scan_processes)",
    )
    cdx.add_argument(
        "--no-verify",
        dest="verify",
        action="store_false",
        help="do not inflate payloads (much faster; corrupt payload bytes go unnoticed)",
    )
    cdx.set_defaults(func=cmd_cdx)

    delivery = sub.add_parser(
        "delivery",
        help="register a directory of delivered ARC/WARC files as one job (indexed and"
        " preserved like a harvest's)",
    )
    delivery.add_argument("directory", type=Path)
    delivery.add_argument("--name", required=True, help="the delivery's name (unique)")
    delivery.set_defaults(func=cmd_delivery)

    sub.add_parser("run", help="ingest and run every pending file through the chain").set_defaults(
        func=cmd_run
    )
    merge = sub.add_parser("merge", help="daily merge (default: yesterday, UTC)")
    merge.add_argument("--day", type=date.fromisoformat)
    merge.set_defaults(func=cmd_merge)
    sub.add_parser("bigmerge", help="merge daily files into the big CDX/PATH").set_defaults(
        func=cmd_bigmerge
    )
    sub.add_parser("clean", help="cleanarcrepository: delete safe job WARCs").set_defaults(
        func=cmd_clean, preserved=_file_preserved
    )
    dedup = sub.add_parser(
        "dedup", help="write the dedup index of domains (their latest captures, every job)"
    )
    dedup.add_argument("out", type=Path)
    dedup.add_argument("domain", nargs="+", help="registered domains (subdomains included)")
    dedup.add_argument("--collection", default="", help="index root (default: the archive's)")
    dedup.set_defaults(func=cmd_dedup)


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry (``python -m app.cli.index``) beside ``harvestflow index``."""
    parser = argparse.ArgumentParser(prog="harvestflow")
    add_cli(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
