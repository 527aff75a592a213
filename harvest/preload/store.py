"""Database helpers of the preload: bulk UPSERTs through COPY, run rows, settings.

Why COPY: a preload writes millions of origin rows and DNS results; row-by-row INSERTs would
take longer than the DNS check itself. Rows are copied into a temporary table and merged with
``INSERT ... SELECT ... ON CONFLICT``, so a retried task repeats nothing.
"""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from harvestflow.db import get_engine
from harvestflow.settings import Settings, get_settings

log = logging.getLogger(__name__)

PRELOAD_DEFAULTS: dict[str, Any] = {
    "nameservers": [],
    "hosts_file": "",
    "static_only": False,
    "dns_timeout_s": 2.0,
    "dns_retries": 2,
    "dns_max_in_flight": 2000,
    "dns_processes": 0,
    "chunk_size": 100_000,
    "extra_suffixes": ["test"],
    "http_concurrency": 100,
    "http_timeout_s": 10.0,
    "http_per_host_delay_s": 1.0,
    "connect_to": "",
    "template": "default_snapshot",
    "inactive_reason_prefix": "preload DNS check failed",
}


def preload_settings(settings: Settings | None = None) -> dict[str, Any]:
    """The ``[preload]`` section over the defaults above."""
    settings = settings or get_settings()
    values = dict(PRELOAD_DEFAULTS)
    values.update(settings.data.get("preload", {}))
    return values


def run_dir(run_id: str, settings: Settings | None = None) -> Path:
    """Where a run's files live (chunks, rejects, report): <data_dir>/preload/<run_id>."""
    if not run_id or "/" in run_id or run_id.startswith("."):
        raise ValueError(f"unusable preload run id {run_id!r}")
    return (settings or get_settings()).path("preload", run_id)


def engine_for(engine: Engine | None, settings: Settings | None) -> Engine:
    if engine is not None:
        return engine
    return get_engine(settings.harvest_db_url if settings is not None else None)


def ensure_run(conn: Connection, run_id: str) -> None:
    conn.execute(
        sa.text("INSERT INTO preload_runs (run_id) VALUES (:r) ON CONFLICT DO NOTHING"),
        {"r": run_id},
    )


_SPECIAL = re.compile(r"[\\\t\n\r]")


def _escape(value: Any) -> str:
    if value is None:
        return r"\N"
    text = str(value)
    if not _SPECIAL.search(text):
        return text  # the common case, without four replace() passes
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def copy_upsert(
    conn: Connection,
    table: str,
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    conflict: str = "DO NOTHING",
    batch: int = 200_000,
    key: Sequence[str] | None = None,
) -> int:
    """Merge ``rows`` into ``table`` via COPY into a temp table; returns rows sent.

    ``conflict`` is the ON CONFLICT clause body (e.g. ``(run_id, domain) DO UPDATE SET ...``
    or ``DO NOTHING``); ``key`` the conflict columns, one row per key is kept. Table and
    column names come from this package, never from input.
    """
    cols = ", ".join(columns)
    distinct = ", ".join(key or columns)
    temp = f"tmp_{table}"
    conn.exec_driver_sql(
        f"CREATE TEMP TABLE IF NOT EXISTS {temp} (LIKE {table} INCLUDING DEFAULTS) ON COMMIT DROP"
    )
    raw = conn.connection.dbapi_connection
    assert raw is not None
    sent = 0
    buffer = io.StringIO()
    pending = 0

    def flush() -> None:
        nonlocal pending
        if not pending:
            return
        buffer.seek(0)
        cursor: Any = raw.cursor()
        try:
            cursor.copy_expert(f"COPY {temp} ({cols}) FROM STDIN", buffer)
        finally:
            cursor.close()
        conn.exec_driver_sql(
            f"INSERT INTO {table} ({cols}) SELECT DISTINCT ON ({distinct}) {cols} FROM {temp}"
            f" ON CONFLICT {conflict}"
        )
        conn.exec_driver_sql(f"TRUNCATE {temp}")
        buffer.seek(0)
        buffer.truncate()
        pending = 0

    for row in rows:
        buffer.write("\t".join(_escape(v) for v in row))
        buffer.write("\n")
        pending += 1
        sent += 1
        if pending >= batch:
            flush()
    flush()
    return sent


# The preload tables as QA reads them: it calls these, never SQL on them.


def domain_origins(conn: Connection) -> list[Any]:
    """(domain, origin, kind of its preload source or None), each combination once."""
    sql = sa.text(
        "SELECT DISTINCT o.domain, o.origin, s.kind FROM domain_origins o"
        " LEFT JOIN preload_sources s ON s.run_id = o.run_id AND s.source_name = o.origin"
    )
    return list(conn.execute(sql).all())


def selection_seed_urls(conn: Connection) -> list[str]:
    """The seed URL of every curators' selection record."""
    return [str(u) for (u,) in conn.execute(sa.text("SELECT seed_url FROM selection_records"))]


def dns_check_counts(conn: Connection, start: Any, end: Any) -> dict[str, int]:
    """DNS checks made in [start, end) per class (active, failed, unknown)."""
    sql = sa.text(
        "SELECT class, count(*) FROM dns_checks WHERE checked_at >= :start AND checked_at < :end"
        " GROUP BY class ORDER BY class"
    )
    return {c: int(n) for c, n in conn.execute(sql, {"start": start, "end": end})}
