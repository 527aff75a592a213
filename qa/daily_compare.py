"""The comparisons printed with each day's report: selective vs broad jobs of the day, each
harvest definition's run of the day against its previous run, and the day against the same day
a year before.

Why in the daily report: curators read the report and its copy in the DB (shown in the
Airflow UI), not a CLI; the comparisons belong beside the figures they compare.
``harvestflow qa compare years|kinds|runs`` (qa.compare) still gives any period on demand.

Why these three and not, say, year-to-date: a day's files must depend only on inputs that are
settled once the day is over, so that a re-run or a backfill gives the same files whatever order
the days were computed in (two days may run at once). Selective vs broad uses the day's own
figures; a previous run's harvest history and last year's stored figures do not change any more.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any

import pandas as pd

from qa import store
from qa.compare import RunComparison, combine_stats, compare_runs, diff_tables
from qa.texttable import table_text

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from qa.day import DayComputation

log = logging.getLogger(__name__)

# Families shown in the text file (the CSV has every key); per-type lists (MIME types, codes,
# TLDs) would drown the handful of lines a curator reads first.
TEXT_FAMILIES = ("general", "mime_family", "domain_sizes", "origins", "stop_reasons", "hits")
DIFF_COLUMNS = ["family", "key", "a", "b", "change", "change_pct"]
RUN_GROUPS = ("grew", "shrank", "newly_failed", "hit_limits", "new", "gone")
NAMES_SHOWN = 20


@dataclass
class RunOfDay:
    """One harvest definition that ran that day, and how its run compares with the one before."""

    harvest_id: int
    harvest_name: str
    run: int
    result: RunComparison | None = None
    note: str = ""


@dataclass
class DayComparisons:
    day: date
    last_year: date
    kinds: pd.DataFrame | None = None  # a = selective, b = broad; None: not both ran
    year: pd.DataFrame | None = None  # a = same day last year, b = the day; None: not stored
    runs: list[RunOfDay] = field(default_factory=list)
    jobs: int = 0
    with_db: bool = False  # False: built from the day's figures alone (no year, no runs)


def same_day_last_year(day: date) -> date:
    """The same date a year before (29 February → 28 February)."""
    try:
        return day.replace(year=day.year - 1)
    except ValueError:
        return day.replace(year=day.year - 1, day=28)


def _totals(comp: DayComputation, scope: str) -> dict[tuple[str, str], float]:
    return combine_stats(comp.scopes[scope].stats)


def build(comp: DayComputation, engine: Engine | None = None) -> DayComparisons:
    """All comparisons of the day; without ``engine`` only selective vs broad (no DB needed)."""
    result = DayComparisons(comp.day, same_day_last_year(comp.day), jobs=len(comp.outcomes))
    result.with_db = engine is not None
    if "kind:partial" in comp.scopes and "kind:full" in comp.scopes:
        result.kinds = diff_tables(_totals(comp, "kind:partial"), _totals(comp, "kind:full"))
    if engine is None:
        return result
    stored = store.load_stats(engine, result.last_year, result.last_year, "day")
    if stored:
        before = combine_stats((f, k, v) for _d, f, k, v in stored)
        result.year = diff_tables(before, _totals(comp, "day"))
    runs: dict[int, RunOfDay] = {}
    for out in comp.outcomes:
        job = out.job
        known = runs.get(job.harvest_id)
        if known is None or job.harvest_num > known.run:
            runs[job.harvest_id] = RunOfDay(job.harvest_id, job.harvest_name, job.harvest_num)
    for hid in sorted(runs):
        entry = runs[hid]
        try:
            entry.result = compare_runs(engine, hid, run_b=entry.run)
        except ValueError as exc:
            entry.note = str(exc)
        else:
            if not entry.result.table["objects_b"].notna().any():
                entry.result, entry.note = None, f"run {entry.run} has no harvest history yet"
        result.runs.append(entry)
    log.info("QA %s: comparisons with %d harvest runs", comp.day, len(result.runs))
    return result


def _diff_text(table: pd.DataFrame) -> str:
    shown = table[table["family"].isin(TEXT_FAMILIES) & ((table["a"] != 0) | (table["b"] != 0))]
    shown = shown.assign(change_pct=[
        "" if pd.isna(v) else f"{v:+.2f}%" for v in shown["change_pct"]
    ])  # fmt: skip
    return table_text(shown, DIFF_COLUMNS)


def render_text(cmp: DayComparisons) -> str:
    """comparisons.txt: the three comparisons, each saying which side is a and which b."""
    day = cmp.day.isoformat()
    head = f"Comparisons — {day}"
    out = [f"{head}\n{'=' * len(head)}\n"]
    out.append("Selective (a) vs broad (b) jobs that ended this day")
    if cmp.kinds is not None:
        out.append(_diff_text(cmp.kinds))
    elif cmp.jobs:
        out.append("(jobs of one kind only ended this day: nothing to compare)\n")
    else:
        out.append("(no job ended this day)\n")
    out.append(f"This day (b) vs the same day a year before, {cmp.last_year} (a)")
    no_db = "(not computed: no harvest DB)\n"
    if cmp.year is not None:
        out.append(_diff_text(cmp.year))
    else:
        out.append(f"(no figures stored for {cmp.last_year})\n" if cmp.with_db else no_db)
    out.append("Harvest definitions that ran this day: this run (b) vs the previous run (a)")
    if not cmp.runs:
        out.append("(no harvest definition ran this day)\n" if cmp.with_db else no_db)
    for entry in cmp.runs:
        title = f"- {entry.harvest_name} (harvest {entry.harvest_id}), run {entry.run}"
        if entry.result is None:
            out.append(f"{title}: {entry.note}")
            continue
        out.append(f"{title} vs run {entry.result.run_a}:")
        for name in RUN_GROUPS:
            domains = entry.result.groups.get(name, [])
            more = " ..." if len(domains) > NAMES_SHOWN else ""
            names = f" ({', '.join(domains[:NAMES_SHOWN])}{more})" if domains else ""
            out.append(f"    {name}: {len(domains)}{names}")
    return "\n".join(out) + "\n"


def csv_rows(cmp: DayComparisons) -> list[tuple[Any, ...]]:
    """comparisons.csv rows: comparison, family, key, a, b, change, change_pct (every key)."""
    rows: list[tuple[Any, ...]] = []
    for name, table in (("selective_vs_broad", cmp.kinds),
                        (f"day_vs_{cmp.last_year}", cmp.year)):  # fmt: skip
        if table is None:
            continue
        for r in table.itertuples(index=False):
            values = (r.a, r.b, r.change, r.change_pct)
            rows.append((name, r.family, r.key, *(_cell(v) for v in values)))
    return rows


RUN_COLUMNS = ["harvest_id", "run_a", "run_b", "domain", "groups", "objects_a", "objects_b",
               "objects_change_pct", "bytes_a", "bytes_b", "stop_a", "stop_b"]  # fmt: skip


def _cell(value: Any) -> Any:
    """CSV cell: blank for a missing side, whole numbers without '.0' (outer joins make floats)."""
    if isinstance(value, float):
        if pd.isna(value):
            return ""
        if value.is_integer():
            return int(value)
    return value


def run_rows(cmp: DayComparisons) -> list[tuple[Any, ...]]:
    """runs.csv rows: the domains of each run comparison that fall in at least one group."""
    rows: list[tuple[Any, ...]] = []
    for entry in cmp.runs:
        res = entry.result
        if res is None:
            continue
        member: dict[str, list[str]] = {}
        for name in RUN_GROUPS:
            for domain in res.groups.get(name, []):
                member.setdefault(domain, []).append(name)
        for r in res.table.to_dict("records"):
            if r["domain"] not in member:
                continue
            values = {k: _cell(v) for k, v in r.items()}
            rows.append((res.harvest_id, res.run_a, res.run_b, r["domain"],
                         ";".join(member[r["domain"]]),
                         *(values[c] for c in RUN_COLUMNS[5:])))  # fmt: skip
    return rows
