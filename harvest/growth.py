"""The archive's growth: captures and bytes recorded per day and channel kind.

Why from ``historyinfo``: it is where every finished job's per-domain figures land (URLs
fetched, bytes written), stamped with the harvest time; the overview's charts and their CSV
both come from :func:`daily_growth`, so the download is the chart's data. The channel kind is
the definition's (a snapshot definition is ``kind = 'full'``, the continuous crawl has its
own definition), so the sums group ``historyinfo`` by definition in an index-only range scan
and join the (small) definitions table, never the jobs table.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import sqlalchemy as sa

from harvest.continuous.jobs import DEFINITION as CONTINUOUS_DEFINITION

CHANNEL_KINDS = ("selective", "snapshot", "continuous")
COLUMNS = ("day", "channel", "captures", "bytes")


def window(days: int, today: date | None = None) -> tuple[datetime, datetime]:
    """[start, end) in UTC of the ``days`` days ending with ``today`` (UTC) included."""
    last = today or datetime.now(UTC).date()
    start = datetime.combine(last - timedelta(days=days - 1), time(), UTC)
    return start, datetime.combine(last + timedelta(days=1), time(), UTC)


def daily_growth(
    conn: sa.Connection, days: int = 90, today: date | None = None
) -> list[dict[str, Any]]:
    """One row per (day, channel kind) over the window, oldest first, zeros included."""
    start, end = window(days, today)
    sums = conn.execute(
        sa.text(
            "SELECT t.day, CASE WHEN h.name = :continuous THEN 'continuous'"
            " WHEN h.kind = 'full' THEN 'snapshot' ELSE 'selective' END AS channel,"
            " sum(t.objects) AS captures, sum(t.bytes) AS bytes"
            " FROM (SELECT CAST(hi.harvest_time AT TIME ZONE 'UTC' AS date) AS day, hi.harvest_id,"
            "   sum(hi.objectcount) AS objects, sum(hi.bytecount) AS bytes FROM historyinfo hi"
            "   WHERE hi.harvest_time >= :start AND hi.harvest_time < :end GROUP BY 1, 2) t"
            " JOIN harvestdefinitions h ON h.harvest_id = t.harvest_id GROUP BY 1, 2"
        ),
        {"continuous": CONTINUOUS_DEFINITION, "start": start, "end": end},
    ).all()
    found = {(r.day, r.channel): (int(r.captures), int(r.bytes)) for r in sums}
    rows = []
    for n in range(days):
        day = start.date() + timedelta(days=n)
        for kind in CHANNEL_KINDS:
            captures, size = found.get((day, kind), (0, 0))
            rows.append({"day": day, "channel": kind, "captures": captures, "bytes": size})
    return rows


def definition_totals(conn: sa.Connection, harvest_ids: list[int]) -> dict[int, dict[str, Any]]:
    """Per definition: name, kind, description (its comments), captures recorded and the first
    and last harvest times (None without any), for the readers' list of collections."""
    rows = conn.execute(
        sa.text(
            "SELECT h.harvest_id, h.name, h.kind, h.comments, t.captures, t.first, t.last"
            " FROM harvestdefinitions h LEFT JOIN LATERAL (SELECT sum(hi.objectcount) AS captures,"
            "   min(hi.harvest_time) AS first, max(hi.harvest_time) AS last FROM historyinfo hi"
            "   WHERE hi.harvest_id = h.harvest_id) t ON true"
            " WHERE h.harvest_id = ANY(:ids) ORDER BY h.harvest_id"
        ),
        {"ids": sorted({int(h) for h in harvest_ids})},
    ).mappings()
    return {int(r["harvest_id"]): {**dict(r), "captures": int(r["captures"] or 0)} for r in rows}
