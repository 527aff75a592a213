"""Statistics for a crawl that never ends, and the curators' per-host report.

Why not the snapshot figures: a continuous crawl has no "total" or "finished"; what tells a
curator whether it keeps up is visits against distinct URLs, the share of visits that found a
change, how many URLs are overdue and by how much, and each host's backlog. The per-host report
shows the revisit intervals the policy learnt and the change rates behind them. URLs of
withdrawn targets (inactive selection records) keep their history but are never due or overdue.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from harvest.continuous.store import LIVE_STATE

# overdue = due longer ago than this (a URL due a minute ago is simply next in line)
DEFAULT_GRACE_S = 900.0


@dataclass
class CrawlStats:
    urls: int
    visits: int
    changes: int
    revisits: int
    due: int
    overdue: int
    max_overdue_s: float
    mean_overdue_s: float
    runs: int

    @property
    def changed_share(self) -> float:
        return self.changes / self.visits if self.visits else 0.0

    def progress_line(self, done: int) -> str:
        """The task log's line: due / overdue / done."""
        return (
            f"continuous: due {self.due} / overdue {self.overdue}"
            f" (max {self.max_overdue_s / 3600:.1f} h late) / done {done};"
            f" {self.urls} URLs, {self.visits} visits, {self.changed_share:.0%} changed"
        )


def crawl_stats(
    engine: sa.Engine, now: dt.datetime, grace_s: float = DEFAULT_GRACE_S
) -> CrawlStats:
    late = sa.text(
        "SELECT count(*) AS urls, coalesce(sum(visits), 0) AS visits,"
        " coalesce(sum(changes), 0) AS changes, coalesce(sum(revisits), 0) AS revisits,"
        " count(*) FILTER (WHERE next_due <= :now) AS due,"
        " count(*) FILTER (WHERE next_due < :late) AS overdue,"
        " coalesce(max(extract(epoch FROM :now - next_due)) FILTER (WHERE next_due < :late), 0)"
        "   AS max_over,"
        " coalesce(avg(extract(epoch FROM :now - next_due)) FILTER (WHERE next_due < :late), 0)"
        "   AS mean_over,"
        " (SELECT count(*) FROM continuous_runs) AS runs"
        f" FROM {LIVE_STATE}"
    )
    with engine.connect() as conn:
        r = conn.execute(late, {"now": now, "late": now - dt.timedelta(seconds=grace_s)}).one()
    return CrawlStats(
        urls=r.urls,
        visits=int(r.visits),
        changes=int(r.changes),
        revisits=int(r.revisits),
        due=r.due,
        overdue=r.overdue,
        max_overdue_s=float(r.max_over),
        mean_overdue_s=float(r.mean_over),
        runs=r.runs,
    )


def host_report(
    engine: sa.Engine, now: dt.datetime, grace_s: float = DEFAULT_GRACE_S
) -> list[dict[str, Any]]:
    """One row per host: URLs, learnt intervals (min/median/max hours), change rate, backlog."""
    query = sa.text(
        "SELECT host, count(*) AS urls, sum(visits) AS visits, sum(changes) AS changes,"
        " min(wait_s) / 3600 AS min_wait_h,"
        " percentile_cont(0.5) WITHIN GROUP (ORDER BY wait_s) / 3600 AS median_wait_h,"
        " max(wait_s) / 3600 AS max_wait_h,"
        " count(*) FILTER (WHERE next_due <= :now) AS backlog,"
        " count(*) FILTER (WHERE next_due < :late) AS overdue,"
        " coalesce(max(extract(epoch FROM :now - next_due) / 3600)"
        "   FILTER (WHERE next_due < :late), 0) AS max_overdue_h"
        f" FROM {LIVE_STATE} GROUP BY host ORDER BY backlog DESC, host"
    )
    rows = []
    with engine.connect() as conn:
        for r in conn.execute(query, {"now": now, "late": now - dt.timedelta(seconds=grace_s)}):
            visits = int(r.visits or 0)
            rows.append(
                {
                    "host": r.host,
                    "urls": r.urls,
                    "visits": visits,
                    "changes": int(r.changes or 0),
                    "change_rate": round(int(r.changes or 0) / visits, 3) if visits else None,
                    "min_wait_h": round(float(r.min_wait_h), 2),
                    "median_wait_h": round(float(r.median_wait_h), 2),
                    "max_wait_h": round(float(r.max_wait_h), 2),
                    "backlog": r.backlog,
                    "overdue": r.overdue,
                    "max_overdue_h": round(float(r.max_overdue_h), 2),
                }
            )
    return rows


def format_host_report(rows: list[dict[str, Any]]) -> str:
    """A fixed-width text table of :func:`host_report` for a task log or a terminal."""
    head = (
        f"{'host':<40} {'urls':>6} {'visits':>7} {'chg%':>5} {'wait h min/med/max':>20}"
        f" {'backlog':>7} {'overdue':>7} {'late h':>7}"
    )
    out = [head]
    for r in rows:
        rate = "-" if r["change_rate"] is None else f"{100 * r['change_rate']:.0f}"
        waits = f"{r['min_wait_h']:.1f}/{r['median_wait_h']:.1f}/{r['max_wait_h']:.1f}"
        out.append(
            f"{r['host'][:40]:<40} {r['urls']:>6} {r['visits']:>7} {rate:>5} {waits:>20}"
            f" {r['backlog']:>7} {r['overdue']:>7} {r['max_overdue_h']:>7.1f}"
        )
    return "\n".join(out)
