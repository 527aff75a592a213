"""Persistent crawl state (frontier + seen-set) in SQLite, so a killed crawl resumes.

Why SQLite and not Scrapy's JOBDIR: Scrapy's disk queues write their index only on a clean
close, so ``kill -9`` loses the frontier. Here each fetched URL is marked done *in the same
transaction* as the links it led to, so after any crash the frontier is exactly "discovered and
not yet done": nothing completed is fetched again, nothing discovered is lost. WAL mode with
synchronous=NORMAL survives a process crash (only a power cut may lose the last commits).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path

from harvestflow.formats.urls import host_of


class FrontierState(IntEnum):
    """Where a URL stands in the crawler's frontier (``urls.status`` of the state database)."""

    QUEUED = 0
    """Discovered, not yet fetched: the frontier."""
    DONE = 1
    """Fetched (whatever its HTTP status)."""
    REFUSED = 2
    """Refused before fetching (scope, robots, budget, operator)."""
    FAILED = 3
    """Tried and failed (DNS, connection, timeout)."""
    HANDED_OFF = 4
    """Sent to the partition that owns its host (a partitioned job)."""


# Frontier priority of a request a rendering page's browser waits for: before the frontier's
# (in a partitioned job, also of a browser request handed to the partition owning its host).
BROWSER_PRIORITY = 1000

SCHEMA = """
CREATE TABLE IF NOT EXISTS urls (
    key TEXT PRIMARY KEY,      -- canonical URL (seen-set key)
    url TEXT NOT NULL,
    hops TEXT NOT NULL,
    via TEXT,
    seed TEXT,
    context TEXT,
    domain TEXT,
    status INTEGER NOT NULL,   -- 0 queued, 1 done, 2 refused, 3 failed, 4 handed off
    fetch_status INTEGER,      -- HTTP status or Heritrix negative code
    bytes INTEGER DEFAULT 0,
    counted INTEGER DEFAULT 0  -- 1 when it counts against the domain's object budget
);
CREATE INDEX IF NOT EXISTS urls_status ON urls(status);
CREATE TABLE IF NOT EXISTS seeds (url TEXT PRIMARY KEY, redirected_from TEXT);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
"""


@dataclass
class Pending:
    key: str
    url: str
    hops: str
    via: str | None
    seed: str | None
    context: str | None


class CrawlState:
    """The state database of one job directory (``state/crawl.sqlite``)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.resumed = self.path.exists()
        self.db = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(SCHEMA)
        self.seen: set[str] = {row[0] for row in self.db.execute("SELECT key FROM urls")}
        self._in_tx = False
        # the frontier's queued keys and their hosts, kept as URLs are added and finished once
        # asked for (queued_by_host): the progress line asks every few seconds, and a scan of
        # the queued rows cost ~5 ms per thousand URLs each time
        self._queued: dict[str, str] | None = None
        self._queued_per_host: dict[str, int] = {}

    # --- transactions -------------------------------------------------------------------------
    def begin(self) -> None:
        if not self._in_tx:
            self.db.execute("BEGIN")
            self._in_tx = True

    def commit(self) -> None:
        if self._in_tx:
            self.db.execute("COMMIT")
            self._in_tx = False

    # --- writes -------------------------------------------------------------------------------
    def add(
        self,
        key: str,
        url: str,
        hops: str,
        via: str | None,
        seed: str | None,
        context: str | None,
        domain: str,
        status: int = FrontierState.QUEUED,
        fetch_status: int | None = None,
    ) -> bool:
        """Record a newly discovered URL; False if it was already seen."""
        if key in self.seen:
            return False
        self.seen.add(key)
        self.db.execute(
            "INSERT OR IGNORE INTO urls(key, url, hops, via, seed, context, domain, status,"
            " fetch_status) VALUES (?,?,?,?,?,?,?,?,?)",
            (key, url, hops, via, seed, context, domain, status, fetch_status),
        )
        if status == FrontierState.QUEUED and self._queued is not None:
            self._count_queued(key, host_of(url))
        return True

    def _count_queued(self, key: str, host: str) -> None:
        assert self._queued is not None
        self._queued[key] = host
        self._queued_per_host[host] = self._queued_per_host.get(host, 0) + 1

    def finish(self, key: str, status: int, fetch_status: int, nbytes: int, counted: bool) -> None:
        self.db.execute(
            "UPDATE urls SET status=?, fetch_status=?, bytes=?, counted=? WHERE key=?",
            (status, fetch_status, nbytes, int(counted), key),
        )
        if self._queued is not None and status != FrontierState.QUEUED:
            host = self._queued.pop(key, None)
            if host is not None:
                left = self._queued_per_host[host] - 1
                if left:
                    self._queued_per_host[host] = left
                else:
                    del self._queued_per_host[host]

    def add_seed(self, url: str, redirected_from: str | None = None) -> None:
        self.db.execute(
            "INSERT OR IGNORE INTO seeds(url, redirected_from) VALUES (?, ?)",
            (url, redirected_from),
        )

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    # --- reads --------------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def pending_from(self, rowid: int, limit: int) -> list[tuple[int, Pending]]:
        """Up to ``limit`` URLs discovered and not yet done, from ``rowid`` on, in discovery
        order, each with its rowid (where the next read starts)."""
        rows = self.db.execute(
            "SELECT rowid, key, url, hops, via, seed, context FROM urls"
            " WHERE status=? AND rowid>=? ORDER BY rowid LIMIT ?",
            (FrontierState.QUEUED, rowid, limit),
        )
        return [(row[0], Pending(*row[1:])) for row in rows.fetchall()]

    def rowid_of(self, key: str) -> int:
        row = self.db.execute("SELECT rowid FROM urls WHERE key=?", (key,)).fetchone()
        assert row is not None, key
        return int(row[0])

    def seeds(self) -> list[tuple[str, str | None]]:
        return list(self.db.execute("SELECT url, redirected_from FROM seeds ORDER BY rowid"))

    def domain_totals(self) -> dict[str, tuple[int, int]]:
        """Per domain: (objects counted against budgets, bytes) of completed fetches."""
        rows = self.db.execute(
            "SELECT domain, SUM(counted), SUM(bytes) FROM urls WHERE status=? GROUP BY domain",
            (FrontierState.DONE,),
        )
        return {d: (int(n or 0), int(b or 0)) for d, n, b in rows}

    def queued_by_host(self) -> dict[str, int]:
        """Queued URLs per host: read from the database once, then kept by add and finish."""
        if self._queued is None:
            self._queued = {}
            for key, url in self.db.execute(
                "SELECT key, url FROM urls WHERE status=?", (FrontierState.QUEUED,)
            ):
                self._count_queued(key, host_of(url))
        return dict(self._queued_per_host)

    def counts(self) -> dict[int, int]:
        return dict(self.db.execute("SELECT status, COUNT(*) FROM urls GROUP BY status").fetchall())

    def add_many(self, rows: Iterable[tuple]) -> None:  # pragma: no cover - convenience
        for row in rows:
            self.add(*row)

    def checkpoint(self) -> None:
        """Commit and copy the write-ahead log into the database file (an operator's pause:
        the frontier on disk is complete and self-contained)."""
        self.commit()
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close(self) -> None:
        self.commit()
        self.db.close()
