"""Reads of the harvest database repeated every few seconds: one connection, and no query at all
when nothing was written since the last time.

Why: a long-running reader (the replay service's refresh, every ``refresh_interval_s``) asks the
same questions on every pass, and an idle database gives the same answers. A pass opens one
connection (not one per question, each with its ping and its rollback) and first asks for the
database's *stamp*: PostgreSQL's WAL insert position and its current snapshot. Every commit
writes a WAL record, so an unchanged position means nothing was committed since; a transaction
whose commit record was written but not yet visible is in the snapshot's in-progress list, so
the snapshot changes when it becomes visible. Same stamp, same answers: the last pass's are
reused. Any write to the cluster (another database's included) changes the stamp: the pass then
reads everything again, as it did before. Where the stamp cannot be read (a standby, a role
without the right), every pass reads everything.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import sqlalchemy as sa

log = logging.getLogger(__name__)

T = TypeVar("T")

_STAMP = sa.text(
    "SELECT CASE WHEN pg_is_in_recovery() THEN NULL"
    " ELSE pg_current_wal_insert_lsn()::text || ' ' || pg_current_snapshot()::text END"
)


def stamp(conn: sa.Connection) -> str | None:
    """The database's stamp (see the module's docstring), None where it cannot be read."""
    try:
        value = conn.execute(_STAMP).scalar()
    except sa.exc.DBAPIError as exc:  # e.g. a role not allowed to read the WAL position
        log.debug("no database stamp: %s", exc)
        return None
    return str(value) if value is not None else None


class PassReads:
    """One pass's reads: through one connection, each answered from the cache when it holds the
    answer read under the same stamp."""

    def __init__(self, engine: sa.Engine, conn: sa.Connection, cache: dict[Hashable, Any]):
        self.engine = engine  # for the writes a pass makes (each in its own transaction)
        self.conn = conn
        self._cache = cache

    def read(self, key: Hashable, query: Callable[[sa.Connection], T]) -> T:
        """``query(conn)``, or its answer of an earlier pass under the same stamp. The answer
        is shared: callers must not change it."""
        if key not in self._cache:
            self._cache[key] = query(self.conn)
        return self._cache[key]

    def forget(self) -> None:
        """After this pass's own writes: what was read before them is read again."""
        self._cache.clear()


class Reads:
    """A long-lived reader's cache of answers, valid while the database's stamp is unchanged."""

    def __init__(self, engine: sa.Engine) -> None:
        self.engine = engine
        self._stamp: str | None = None
        self._cache: dict[Hashable, Any] = {}
        self.reused = 0  # passes that found the stamp unchanged (for logs and tests)
        self._told = False

    @contextmanager
    def one_pass(self) -> Iterator[PassReads]:
        """One connection for the pass (autocommit: no transaction held open while the pass
        writes files), the cache emptied first if anything was written since the last pass."""
        with self.engine.connect() as conn:
            conn = conn.execution_options(isolation_level="AUTOCOMMIT")
            now = stamp(conn)
            if now is None and not self._told:
                log.info("no database stamp (a standby?): every pass reads everything")
                self._told = True
            if now is None or now != self._stamp:
                self._cache = {}
            else:
                self.reused += 1
            self._stamp = now
            yield PassReads(self.engine, conn, self._cache)


Bind = sa.Engine | PassReads


def read(bind: Bind, key: Hashable, query: Callable[[sa.Connection], T]) -> T:
    """``query`` on a connection of ``bind``: the pass's (cached under its stamp), or a new one
    of the engine's pool for a single call (the CLI's, a DAG task's)."""
    if isinstance(bind, PassReads):
        return bind.read(key, query)
    with bind.connect() as conn:
        return query(conn)


def engine_of(bind: Bind) -> sa.Engine:
    """The engine a write goes through (its own transaction)."""
    return bind.engine if isinstance(bind, PassReads) else bind


def wrote(bind: Bind) -> None:
    """Tell a pass that it wrote: its later reads see the writes."""
    if isinstance(bind, PassReads):
        bind.forget()
