"""Streaming a harvest definition's domain configurations (with their history) from the DB.

Why one query with a server-side cursor: the generator needs, per configuration, its template,
limits, attributes and the object/byte/stop-reason history newest first. Aggregating the history
per configuration in PostgreSQL (an index scan on ``historyinfo (config_id, harvest_time)``)
sends one row per configuration, and the server-side cursor keeps client memory to one fetch
batch. The bare scan of the benchmark streams exactly this query.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from harvest.jobgen.model import ConfigInfo, HarvestLimits, HistoryEntry

log = logging.getLogger(__name__)

ALIAS_TIMEOUT = timedelta(days=365)
FETCH_SIZE = 10000

# configurations of a selective definition: its harvest_configs
_PARTIAL_SET = "SELECT config_id FROM harvest_configs WHERE harvest_id = :h"
# a snapshot: every active domain's default configuration, minus live aliases
_FULL_SET = (
    "SELECT d.defaultconfig AS config_id FROM domains d WHERE d.active"
    " AND d.defaultconfig IS NOT NULL"
    " AND (d.alias IS NULL OR d.lastaliasupdate < now() - CAST(:alias_timeout AS interval))"
)
# a snapshot's second step: the domains that stopped on a harvest limit in the previous one
_STEP2_SET = (
    "SELECT DISTINCT hi.config_id FROM historyinfo hi JOIN configurations c USING (config_id)"
    " JOIN domains d USING (domain_id) WHERE hi.harvest_id = :prev AND d.active"
    " AND hi.stopreason IN (1, 2)"
)

_QUERY = """
SELECT c.config_id, c.domain_id, d.name AS domain, t.name AS template,
       c.attributes::text AS attributes, c.maxobjects, c.maxbytes,
       h.objs, h.bytes, h.reasons
FROM ({config_set}) cs
JOIN configurations c ON c.config_id = cs.config_id
JOIN domains d ON d.domain_id = c.domain_id
JOIN templates t ON t.template_id = c.template_id
LEFT JOIN LATERAL (
    SELECT array_agg(hi.objectcount ORDER BY hi.harvest_time DESC, hi.historyinfo_id DESC) AS objs,
           array_agg(hi.bytecount ORDER BY hi.harvest_time DESC, hi.historyinfo_id DESC) AS bytes,
           array_agg(hi.stopreason ORDER BY hi.harvest_time DESC, hi.historyinfo_id DESC)
               AS reasons
    FROM historyinfo hi WHERE hi.config_id = c.config_id
) h ON true
ORDER BY c.config_id
"""


def config_query(kind: str, previous_harvest_id: int | None) -> str:
    """The SQL streaming the configurations of a definition of ``kind``."""
    if kind == "partial":
        config_set = _PARTIAL_SET
    elif previous_harvest_id is not None:
        config_set = _STEP2_SET
    else:
        config_set = _FULL_SET
    return _QUERY.format(config_set=config_set)


def query_params(harvest_id: int, previous_harvest_id: int | None) -> dict[str, Any]:
    return {
        "h": harvest_id,
        "prev": previous_harvest_id,
        "alias_timeout": f"{ALIAS_TIMEOUT.days} days",
    }


def definition_limits(conn: Connection, harvest_id: int) -> tuple[str, HarvestLimits, int | None]:
    """(kind, limits, previous definition) of a harvest definition."""
    row = conn.execute(
        sa.text(
            "SELECT h.kind, f.maxobjects, f.maxbytes, f.previoushd FROM harvestdefinitions h"
            " LEFT JOIN fullharvests f USING (harvest_id) WHERE h.harvest_id = :h"
        ),
        {"h": harvest_id},
    ).first()
    if row is None:
        raise LookupError(f"harvest definition {harvest_id} does not exist")
    if row.kind == "full":
        return "full", HarvestLimits(True, row.maxobjects, row.maxbytes), row.previoushd
    return "partial", HarvestLimits(False), None


def count_configs(conn: Connection, harvest_id: int) -> int:
    kind, _, prev = definition_limits(conn, harvest_id)
    sql = config_query(kind, prev)
    return int(
        conn.execute(
            sa.text(f"SELECT count(*) FROM ({sql}) q"), query_params(harvest_id, prev)
        ).scalar_one()
    )


def row_to_config(row: Any) -> ConfigInfo:
    history: tuple[HistoryEntry, ...] = ()
    if row.objs:
        history = tuple(
            HistoryEntry(o, b, r) for o, b, r in zip(row.objs, row.bytes, row.reasons, strict=True)
        )
    return ConfigInfo(
        config_id=row.config_id,
        domain=row.domain,
        template=row.template,
        max_objects=row.maxobjects,
        max_bytes=row.maxbytes,
        attributes=row.attributes,
        history=history,
        domain_id=row.domain_id,
    )


def stream_configs(
    conn: Connection, harvest_id: int, *, fetch_size: int = FETCH_SIZE
) -> Iterator[ConfigInfo]:
    """The definition's configurations, one at a time, through a server-side cursor."""
    kind, _, prev = definition_limits(conn, harvest_id)
    # per-statement options: Connection.execution_options() would stick to the connection
    result = conn.execute(
        sa.text(config_query(kind, prev)),
        query_params(harvest_id, prev),
        execution_options={"stream_results": True, "yield_per": fetch_size},
    )
    try:
        for row in result:
            yield row_to_config(row)
    finally:
        result.close()
