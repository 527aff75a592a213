"""The day's figures in the harvest DB (qa_stats, qa_reports) for the curators' views.

Why replace rather than insert: a re-run or backfill of a day must leave exactly the rows of
the last computation (a domain that vanished from a corrected log must vanish from the table),
so the day's qa_stats rows are deleted and re-inserted in one transaction and qa_reports is an
UPSERT on its day.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # sqlalchemy is imported where the DB is used: the benchmark and
    # file-only runs do not pay its ~0.2 s import
    from sqlalchemy.engine import Engine


log = logging.getLogger(__name__)

_BATCH = 5000
# pg_advisory_lock(namespace, key) namespace of the daily QA (others: 4242, 4243, preservation's)
_LOCK_NS = 4808


@contextmanager
def day_lock(engine: Engine, day: date) -> Iterator[None]:
    """Hold a PostgreSQL advisory lock on ``day`` while its report and rows are replaced.

    Why: a manual run with the ``day`` param can overlap a scheduled run or a backfill of the
    same day; unserialised, the two folder swaps race (one rename fails) and the second
    DELETE misses the first one's not yet committed rows (primary-key error). Different days
    never wait for each other.
    """
    import sqlalchemy as sa

    with engine.connect() as conn:
        conn.execute(
            sa.text("SELECT pg_advisory_lock(:ns, :k)"), {"ns": _LOCK_NS, "k": day.toordinal()}
        )
        conn.commit()
        try:
            yield
        finally:
            conn.execute(
                sa.text("SELECT pg_advisory_unlock(:ns, :k)"),
                {"ns": _LOCK_NS, "k": day.toordinal()},
            )
            conn.commit()


def save_day(
    engine: Engine,
    day: date,
    rows: list[tuple[str, str, str, float]],
    report_dir: Path,
    summary: dict[str, Any],
) -> int:
    """Replace the day's qa_stats rows and upsert its qa_reports row; returns rows written."""
    import sqlalchemy as sa

    insert = sa.text(
        "INSERT INTO qa_stats (day, scope, family, key, value) VALUES (:d, :s, :f, :k, :v)"
    )
    with engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM qa_stats WHERE day = :d"), {"d": day})
        for start in range(0, len(rows), _BATCH):
            batch = rows[start : start + _BATCH]
            conn.execute(
                insert, [{"d": day, "s": s, "f": f, "k": k, "v": v} for s, f, k, v in batch]
            )
        conn.execute(
            sa.text(
                "INSERT INTO qa_reports (day, generated_at, report_dir, summary)"
                " VALUES (:d, now(), :r, CAST(:j AS jsonb))"
                " ON CONFLICT (day) DO UPDATE SET generated_at = now(),"
                " report_dir = EXCLUDED.report_dir, summary = EXCLUDED.summary"
            ),
            {"d": day, "r": str(report_dir), "j": json.dumps(summary, default=str)},
        )
    log.info("qa_stats: %d rows for %s", len(rows), day)
    return len(rows)


def load_stats(
    engine: Engine, start: date, end: date, scope: str = "day"
) -> list[tuple[date, str, str, float]]:
    """(day, family, key, value) of one scope for days in [start, end]."""
    import sqlalchemy as sa

    sql = sa.text(
        "SELECT day, family, key, value FROM qa_stats"
        " WHERE day BETWEEN :a AND :b AND scope = :s ORDER BY day, family, key"
    )
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(sql, {"a": start, "b": end, "s": scope})]


def latest_figures(
    engine: Engine, family: str = "general", scope: str = "day"
) -> tuple[date | None, dict[str, float]]:
    """The newest day that has ``family`` figures for ``scope``, and those figures by key."""
    import sqlalchemy as sa

    sql = sa.text(
        "SELECT key, value, day FROM qa_stats WHERE scope = :s AND family = :f AND day ="
        " (SELECT max(day) FROM qa_stats WHERE scope = :s AND family = :f)"
    )
    with engine.connect() as conn:
        rows = conn.execute(sql, {"s": scope, "f": family}).all()
    return (rows[0][2] if rows else None), {r[0]: float(r[1]) for r in rows}
