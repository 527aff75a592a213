"""``harvestflow qa`` subcommands: the daily statistics and the comparisons, outside Airflow.

Registered by app/cli/main.py through :func:`add_cli`; runs exactly what the
``daily_qa_stats`` DAG runs (``qa.daily.run_daily``). Handlers import lazily so that a problem
here cannot break the other subcommands.
"""

from __future__ import annotations

import argparse
import sys
from datetime import date, timedelta
from typing import Any


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date (YYYY-MM-DD)") from exc


def add_cli(subparsers: Any) -> None:
    """Add ``qa daily`` and ``qa compare {years,kinds,runs}``."""
    p = subparsers.add_parser("qa", help="daily QA statistics and comparisons")
    sub = p.add_subparsers(dest="qa_command", required=True)

    d = sub.add_parser("daily", help="compute one day's QA statistics (or a range: backfill)")
    d.add_argument("--date", type=_day, required=True, help="YYYY-MM-DD (jobs that ended then)")
    d.add_argument("--until", type=_day, default=None, help="last day of a backfill range")
    d.set_defaults(func=cmd_daily)

    c = sub.add_parser("compare", help="compare stored daily figures or two harvest runs")
    csub = c.add_subparsers(dest="qa_compare", required=True)
    y = csub.add_parser("years", help="a year against the year before")
    y.add_argument("--year", type=int, required=True)
    y.add_argument("--csv", default=None, help="also write the table to this CSV file")
    y.set_defaults(func=cmd_compare_years)
    k = csub.add_parser("kinds", help="selective against broad jobs over the same days")
    k.add_argument("--from", dest="start", type=_day, required=True)
    k.add_argument("--to", dest="end", type=_day, required=True)
    k.add_argument("--csv", default=None)
    k.set_defaults(func=cmd_compare_kinds)
    r = csub.add_parser("runs", help="two runs of one harvest definition, per domain")
    r.add_argument("--harvest", type=int, required=True, help="harvest definition id")
    r.add_argument("--run-a", type=int, default=None, help="default: the run before run-b")
    r.add_argument("--run-b", type=int, default=None, help="default: the last run")
    r.add_argument("--threshold", type=float, default=0.1, help="relative change (0.1 = 10%%)")
    r.add_argument("--csv", default=None)
    r.set_defaults(func=cmd_compare_runs)


def cmd_daily(args: argparse.Namespace) -> int:
    from qa.daily import run_daily, summary_lines

    last = args.until or args.date
    if last < args.date:
        print("qa daily: --until is before --date", file=sys.stderr)
        return 2
    day = args.date
    while day <= last:
        result = run_daily(day)
        print("\n".join(summary_lines(result)))
        day += timedelta(days=1)
    return 0


def _emit(table: Any, csv_path: str | None, title: str) -> None:
    import pandas as pd

    print(title)
    with pd.option_context("display.max_rows", 500, "display.width", 160):
        print(table.to_string(index=False) if len(table) else "(nothing to compare)")
    if csv_path:  # a host a spreadsheet would run as a formula is escaped (csvcells)
        from harvestflow.formats.csvcells import safe_cell

        table.map(safe_cell).to_csv(csv_path, index=False)
        print(f"written: {csv_path}")


def cmd_compare_years(args: argparse.Namespace) -> int:
    from harvestflow import db
    from qa.compare import year_over_year

    table = year_over_year(db.get_engine(), args.year)
    _emit(table, args.csv, f"QA figures: a = {args.year - 1}, b = {args.year}")
    return 0


def cmd_compare_kinds(args: argparse.Namespace) -> int:
    from harvestflow import db
    from qa.compare import selective_vs_broad

    table = selective_vs_broad(db.get_engine(), args.start, args.end)
    _emit(table, args.csv, f"QA figures {args.start}..{args.end}: a = selective, b = broad")
    return 0


def cmd_compare_runs(args: argparse.Namespace) -> int:
    from harvestflow import db
    from qa.compare import compare_runs

    try:
        result = compare_runs(
            db.get_engine(), args.harvest, args.run_a, args.run_b, threshold=args.threshold
        )
    except ValueError as exc:
        print(f"qa compare runs: {exc}", file=sys.stderr)
        return 2
    title = f"harvest {result.harvest_id}: run {result.run_a} (a) vs run {result.run_b} (b)"
    _emit(result.table, args.csv, title)
    for name, domains in result.groups.items():
        shown = ", ".join(domains[:20]) + (" ..." if len(domains) > 20 else "")
        print(f"{name}: {len(domains)}" + (f" ({shown})" if domains else ""))
    return 0
