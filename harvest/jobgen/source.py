"""Streaming a harvest definition's domain configurations (with their best history) from the DB.

Why this shape: the generator needs, per configuration, its template, limits, attributes and
its "best" earlier harvest (NetarchiveSuite's rule: newest first, the largest object count seen,
stopping at the first complete harvest). That best harvest is chosen in PostgreSQL, so one
narrow row per configuration crosses the wire: the candidates are the harvests at or after the
newest complete one (all of them when none completed), and the best is the largest object
count, the oldest among equals — exactly what the sequential rule picks
(:func:`harvest.jobgen.expectation.best_history`, which a test checks this query against).

A whole snapshot (millions of configurations) uses set-based SQL (hash/merge joins over
``historyinfo``); a selective definition or a second step (a few thousand configurations) looks
the history up per configuration through the ``(config_id, harvest_time)`` index. Rows come
through a psycopg2 server-side cursor as plain tuples: client memory stays at one fetch batch.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from harvest.jobgen.model import ConfigInfo, HarvestLimits, HistoryEntry
from harvestflow.formats.stop_reasons import StopReason

log = logging.getLogger(__name__)

ALIAS_TIMEOUT = timedelta(days=365)
FETCH_SIZE = 10000
# PostgreSQL memory for the set-based snapshot query's hashes and sorts (per transaction)
BULK_WORK_MEM = "256MB"

# configurations of a selective definition: its harvest_configs
_PARTIAL_SET = "SELECT config_id FROM harvest_configs WHERE harvest_id = %(h)s"
# a snapshot: every active domain's default configuration, minus aliases live at the run's date
# (``as_of``: the logical date, so a backfill judges them as they were then; NULL: now)
_FULL_SET = (
    "SELECT d.defaultconfig AS config_id FROM domains d WHERE d.active"
    " AND d.defaultconfig IS NOT NULL"
    " AND (d.alias IS NULL OR d.lastaliasupdate"
    " < COALESCE(CAST(%(as_of)s AS timestamptz), now()) - CAST(%(alias_timeout)s AS interval))"
)
# a snapshot's second step: the domains that stopped on a harvest limit in the previous one
_STEP2_SET = (
    "SELECT DISTINCT hi.config_id FROM historyinfo hi JOIN configurations c USING (config_id)"
    " JOIN domains d USING (domain_id) WHERE hi.harvest_id = %(prev)s AND d.active"
    f" AND hi.stopreason IN ({StopReason.OBJECT_LIMIT:d}, {StopReason.SIZE_LIMIT:d})"
)

_COLUMNS = (
    "c.config_id, c.domain_id, d.name, t.name, c.attributes::text, c.maxobjects, c.maxbytes,"
    " b.objectcount, b.bytecount, b.stopreason, c.name"
)
_JOINS = (
    " JOIN configurations c ON c.config_id = cs.config_id"
    " JOIN domains d ON d.domain_id = c.domain_id"
    " JOIN templates t ON t.template_id = c.template_id"
)

# per configuration, through the index (small sets)
_QUERY_INDEXED = (
    f"SELECT {_COLUMNS} FROM ({{config_set}}) cs {_JOINS}"
    " LEFT JOIN LATERAL ("
    "  SELECT hi.objectcount, hi.bytecount, hi.stopreason FROM historyinfo hi"
    "  WHERE hi.config_id = c.config_id AND (hi.harvest_time, hi.historyinfo_id) >= COALESCE(("
    "    SELECT ROW(x.harvest_time, x.historyinfo_id) FROM historyinfo x"
    f"    WHERE x.config_id = c.config_id AND x.stopreason = {StopReason.DOWNLOAD_COMPLETE:d}"
    "    ORDER BY x.harvest_time DESC, x.historyinfo_id DESC LIMIT 1),"
    "   ROW('-infinity'::timestamptz, 0::bigint))"
    "  ORDER BY hi.objectcount DESC, hi.harvest_time ASC, hi.historyinfo_id ASC LIMIT 1"
    " ) b ON true ORDER BY c.config_id"
)

# set-based (whole snapshots)
_QUERY_BULK = (
    "WITH lastc AS ("
    "  SELECT DISTINCT ON (config_id) config_id, harvest_time AS t, historyinfo_id AS i"
    f"  FROM historyinfo WHERE stopreason = {StopReason.DOWNLOAD_COMPLETE:d}"
    "  ORDER BY config_id, harvest_time DESC, historyinfo_id DESC),"
    " best AS ("
    "  SELECT DISTINCT ON (hi.config_id) hi.config_id, hi.objectcount, hi.bytecount,"
    "   hi.stopreason FROM historyinfo hi LEFT JOIN lastc l ON l.config_id = hi.config_id"
    "  WHERE l.config_id IS NULL OR (hi.harvest_time, hi.historyinfo_id) >= (l.t, l.i)"
    "  ORDER BY hi.config_id, hi.objectcount DESC, hi.harvest_time ASC, hi.historyinfo_id ASC)"
    f" SELECT {_COLUMNS} FROM ({{config_set}}) cs {_JOINS}"
    " LEFT JOIN best b ON b.config_id = c.config_id ORDER BY c.config_id"
)


def config_set_query(kind: str, previous_harvest_id: int | None) -> str:
    if kind == "partial":
        return _PARTIAL_SET
    return _STEP2_SET if previous_harvest_id is not None else _FULL_SET


def config_query(kind: str, previous_harvest_id: int | None, *, bulk: bool | None = None) -> str:
    """The SQL (psycopg2 ``%(name)s`` parameters) streaming a definition's configurations."""
    if bulk is None:
        bulk = kind == "full" and previous_harvest_id is None
    template = _QUERY_BULK if bulk else _QUERY_INDEXED
    return template.format(config_set=config_set_query(kind, previous_harvest_id))


def query_params(
    harvest_id: int, previous_harvest_id: int | None, as_of: datetime | None = None
) -> dict[str, Any]:
    """Parameters of :func:`config_query`; ``as_of`` is the moment aliases are judged at.

    Why a moment: an alias expires ``ALIAS_TIMEOUT`` after its last update; a snapshot run (or
    its backfill) must skip the aliases that were live at its logical date, not at the time the
    task happens to run. None judges them now.
    """
    return {
        "h": harvest_id,
        "prev": previous_harvest_id,
        "alias_timeout": f"{ALIAS_TIMEOUT.days} days",
        "as_of": as_of,
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


def _raw(conn: Connection) -> Any:
    """The psycopg2 connection under ``conn`` (same transaction)."""
    return conn.connection.dbapi_connection


def count_configs(conn: Connection, harvest_id: int, *, as_of: datetime | None = None) -> int:
    """How many configurations the definition has (the set only: no history is read)."""
    kind, _, prev = definition_limits(conn, harvest_id)
    with _raw(conn).cursor() as cur:
        cur.execute(
            f"SELECT count(*) FROM ({config_set_query(kind, prev)}) q",
            query_params(harvest_id, prev, as_of),
        )
        return int(cur.fetchone()[0])


def row_to_config(row: tuple[Any, ...]) -> ConfigInfo:
    """A streamed row as a ConfigInfo whose history is its best harvest (or nothing)."""
    cid, did, domain, template, attributes, maxobjects, maxbytes, objs, size, reason, name = row
    # positional: this runs once per configuration, millions of times for a snapshot
    history = () if objs is None else (HistoryEntry(objs, size, reason),)
    return ConfigInfo(
        cid, domain, template, maxobjects, maxbytes, attributes, history, did, 0, name
    )


def stream_configs(
    conn: Connection,
    harvest_id: int,
    *,
    fetch_size: int = FETCH_SIZE,
    bulk: bool | None = None,
    as_of: datetime | None = None,
) -> Iterator[ConfigInfo]:
    """The definition's configurations in config_id order, through a server-side cursor.

    ``as_of``: the run's logical date, at which a snapshot's aliases are judged (None: now).
    """
    kind, _, prev = definition_limits(conn, harvest_id)
    if bulk is None:
        bulk = kind == "full" and prev is None
    raw = _raw(conn)
    if bulk:
        with raw.cursor() as cur:  # hash joins and sorts in memory, for this transaction only
            cur.execute(f"SET LOCAL work_mem = '{BULK_WORK_MEM}'")
    cursor = raw.cursor(name=f"jobgen_{uuid.uuid4().hex}")
    try:
        cursor.execute(config_query(kind, prev, bulk=bulk), query_params(harvest_id, prev, as_of))
        for batch in _prefetched(cursor, fetch_size):
            for row in batch:
                yield row_to_config(row)
    finally:
        cursor.close()


def _prefetched(cursor: Any, size: int, depth: int = 2) -> Iterator[list[tuple[Any, ...]]]:
    """Batches of a server-side cursor, the next one fetched while this one is processed.

    Why: PostgreSQL computes a server-side cursor's rows when they are fetched; fetching the
    next batch in a thread (psycopg2 releases the GIL while it waits) overlaps the server's work
    with the generator's instead of adding them. At most ``depth`` batches wait in memory.
    """
    batches: queue.Queue[Any] = queue.Queue(maxsize=depth)
    stop = threading.Event()
    done = object()

    def fetch() -> None:
        try:
            while not stop.is_set():
                batch = cursor.fetchmany(size)
                item: Any = batch if batch else done
                while not stop.is_set():
                    try:
                        batches.put(item, timeout=0.5)
                        break
                    except queue.Full:
                        continue
                if item is done:
                    return
        except BaseException as exc:  # handed to the consumer, raised there
            batches.put(exc)

    thread = threading.Thread(target=fetch, name="jobgen-prefetch", daemon=True)
    thread.start()
    try:
        while True:
            item = batches.get()
            if item is done:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        while thread.is_alive():
            with contextlib.suppress(queue.Empty):
                batches.get(timeout=0.1)
        thread.join()
