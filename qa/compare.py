"""Comparisons: this year vs last year, selective vs broad, two runs of one harvest definition.

Why from the stored figures: the daily computation already wrote every scope's counts to
qa_stats (scopes 'day', 'kind:partial', 'kind:full', 'harvest:<id>', 'job:<id>'), so a
comparison over any period is a sum of rows, not a re-read of months of crawl logs. Counts add
up over days; shares and rates do not, so they are recomputed from the summed counts. Two runs
of a harvest definition are compared per domain from the harvest history (historyinfo), which
is what NetarchiveSuite curators look at: which domains grew, shrank, newly failed or hit a
limit.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING

import pandas as pd

from harvestflow.formats.stop_reasons import LIMITS, StopReason

# harvest.results (SQLAlchemy) is imported where the DB is read: the benchmark and file-only runs
# do not pay its import
if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

# Families whose values are not meaningful once summed over days (top-N lists, log states).
_SKIP_FAMILIES = {"top_domains_urls", "top_domains_bytes", "logs"}
_RECOMPUTED = {("general", "urls_per_s"), ("general", "bytes_per_s"),
               ("general", "duplicate_share")}  # fmt: skip


@dataclass(frozen=True)
class Selection:
    """Days [start, end] of one qa_stats scope."""

    start: date
    end: date
    scope: str = "day"

    def label(self) -> str:
        span = self.start.isoformat() if self.start == self.end else f"{self.start}..{self.end}"
        return f"{self.scope} {span}"


def combine_stats(rows: Iterable[tuple[str, str, float]]) -> dict[tuple[str, str], float]:
    """Sum (family, key, value) rows of several days; recompute shares and rates."""
    total: dict[tuple[str, str], float] = defaultdict(float)
    for family, key, value in rows:
        if family in _SKIP_FAMILIES or (family, key) in _RECOMPUTED or key.endswith("|share"):
            continue
        total[(family, key)] += float(value)
    # shares of families measured in URLs
    urls_by_family: dict[str, float] = defaultdict(float)
    for (family, key), value in total.items():
        if key.endswith("|urls"):
            urls_by_family[family] += value
    for (family, key), value in list(total.items()):
        if key.endswith("|urls") and urls_by_family[family]:
            item = key[: -len("|urls")]
            total[(family, f"{item}|share")] = round(value / urls_by_family[family], 6)
    urls = total.get(("general", "urls"), 0.0)
    duration = total.get(("general", "duration_s"), 0.0)
    if ("general", "urls") in total:
        total[("general", "urls_per_s")] = round(urls / duration, 3) if duration else 0.0
        byt = total.get(("general", "bytes"), 0.0)
        total[("general", "bytes_per_s")] = round(byt / duration, 3) if duration else 0.0
        dup = total.get(("general", "duplicate_urls"), 0.0)
        total[("general", "duplicate_share")] = round(dup / urls, 6) if urls else 0.0
    return dict(total)


def diff_tables(a: dict[tuple[str, str], float], b: dict[tuple[str, str], float]) -> pd.DataFrame:
    """family, key, a, b, change, change_pct for every key of either side (sorted)."""
    rows = []
    for family, key in sorted(set(a) | set(b)):
        va, vb = a.get((family, key), 0.0), b.get((family, key), 0.0)
        pct = round(100.0 * (vb - va) / va, 2) if va else None
        rows.append((family, key, va, vb, vb - va, pct))
    return pd.DataFrame(rows, columns=["family", "key", "a", "b", "change", "change_pct"])


def load_selection(engine: Engine, sel: Selection) -> dict[tuple[str, str], float]:
    import sqlalchemy as sa

    sql = sa.text(
        "SELECT family, key, value FROM qa_stats"
        " WHERE day BETWEEN :a AND :b AND scope = :s ORDER BY day, family, key"
    )
    with engine.connect() as conn:
        rows = conn.execute(sql, {"a": sel.start, "b": sel.end, "s": sel.scope}).all()
    return combine_stats((r.family, r.key, r.value) for r in rows)


def compare_selections(engine: Engine, a: Selection, b: Selection) -> pd.DataFrame:
    """Any two periods/scopes of stored daily figures side by side."""
    return diff_tables(load_selection(engine, a), load_selection(engine, b))


def year_over_year(engine: Engine, year: int) -> pd.DataFrame:
    """``year`` (column b) against the year before (column a), whole days of the 'day' scope."""
    last = Selection(date(year - 1, 1, 1), date(year - 1, 12, 31))
    this = Selection(date(year, 1, 1), date(year, 12, 31))
    return compare_selections(engine, last, this)


def selective_vs_broad(engine: Engine, start: date, end: date) -> pd.DataFrame:
    """Selective (column a) against broad/snapshot (column b) jobs over the same days."""
    return compare_selections(
        engine, Selection(start, end, "kind:partial"), Selection(start, end, "kind:full")
    )


# --- two runs of one harvest definition ---------------------------------------------------


@dataclass
class RunComparison:
    """Per-domain differences between run ``run_a`` and run ``run_b`` of a definition."""

    harvest_id: int
    run_a: int
    run_b: int
    table: pd.DataFrame
    groups: dict[str, list[str]] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        return {name: len(domains) for name, domains in self.groups.items()}


def diff_runs(
    a: pd.DataFrame, b: pd.DataFrame, *, threshold: float = 0.1
) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """Compare per-domain (domain, objects, bytes, stopreason) tables of two runs.

    grew / shrank: objects changed by more than ``threshold`` (relative); newly_failed:
    objects > 0 before and 0 now; hit_limits: stopped on a limit (object, size, time) now but
    not before; new / gone: present in one run only.
    """

    def per_domain(t: pd.DataFrame) -> pd.DataFrame:
        if t.empty:
            return pd.DataFrame(columns=["objects", "bytes", "stopreason"])
        return t.groupby("domain").agg(
            objects=("objects", "sum"), bytes=("bytes", "sum"), stopreason=("stopreason", "max")
        )

    da, db = per_domain(a), per_domain(b)
    table = pd.merge(
        da, db, left_index=True, right_index=True, how="outer", suffixes=("_a", "_b")
    ).sort_index()
    table.index.name = "domain"
    groups: dict[str, list[str]] = {
        "grew": [], "shrank": [], "newly_failed": [], "hit_limits": [], "new": [], "gone": []
    }  # fmt: skip
    changes = []
    for domain, r in table.iterrows():
        oa, ob = r["objects_a"], r["objects_b"]
        change = None
        if pd.isna(oa):
            groups["new"].append(str(domain))
        elif pd.isna(ob):
            groups["gone"].append(str(domain))
        else:
            if oa > 0 and ob == 0:
                groups["newly_failed"].append(str(domain))
            elif oa > 0 and (ob - oa) / oa > threshold:
                groups["grew"].append(str(domain))
            elif oa > 0 and (oa - ob) / oa > threshold:
                groups["shrank"].append(str(domain))
            elif oa == 0 and ob > 0:
                groups["grew"].append(str(domain))
            sa_, sb = int(r["stopreason_a"]), int(r["stopreason_b"])
            if sb in LIMITS and sa_ not in LIMITS:
                groups["hit_limits"].append(str(domain))
            change = round(100.0 * (ob - oa) / oa, 2) if oa else None
        changes.append(change)
    table["objects_change_pct"] = changes
    for side in ("a", "b"):
        table[f"stop_{side}"] = [
            StopReason.text_of(int(v), str(v)) if not pd.isna(v) else ""
            for v in table[f"stopreason_{side}"]
        ]
    return table.reset_index(), groups


def run_history(engine: Engine, harvest_id: int, runs: list[int] | None = None) -> pd.DataFrame:
    """(run, domain, objects, bytes, stopreason) of a definition's historyinfo rows.

    ``runs`` limits the rows to those runs: a broad definition's history holds millions of
    rows per run, and the daily report compares two runs only.
    """
    from harvest import results

    with engine.connect() as conn:
        rows = results.history_rows(conn, harvest_id, runs)
    return pd.DataFrame(
        [tuple(r) for r in rows], columns=["run", "domain", "objects", "bytes", "stopreason"]
    )


def history_runs(engine: Engine, harvest_id: int) -> list[int]:
    """The run numbers of a definition that have harvest history, ascending."""
    from harvest import results

    with engine.connect() as conn:
        return results.history_runs(conn, harvest_id)


def compare_runs(
    engine: Engine,
    harvest_id: int,
    run_a: int | None = None,
    run_b: int | None = None,
    *,
    threshold: float = 0.1,
) -> RunComparison:
    """Two runs of one harvest definition (default: its last two runs with history)."""
    runs = history_runs(engine, harvest_id)
    if run_b is None:
        if not runs:
            raise ValueError(f"harvest {harvest_id}: no harvest history to compare")
        run_b = runs[-1]
    if run_a is None:
        earlier = [r for r in runs if r < run_b]
        if not earlier:
            raise ValueError(f"harvest {harvest_id}: no run before run {run_b} to compare with")
        run_a = earlier[-1]
    hist = run_history(engine, harvest_id, [run_a, run_b])
    table, groups = diff_runs(
        hist[hist["run"] == run_a], hist[hist["run"] == run_b], threshold=threshold
    )
    return RunComparison(harvest_id, int(run_a), int(run_b), table, groups)
