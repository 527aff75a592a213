"""The URL state in PostgreSQL (table continuous_url_state, sql/009).

Why in the database: the state must outlive any crawler process; each bounded run reads the URLs
due, the crawl fetches them, and the run writes the new state back in one transaction. Writes are
UPSERTs so that a retried post-processing step repeats nothing.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Iterable
from dataclasses import fields

import sqlalchemy as sa

from harvest.continuous.policy import RevisitPolicy
from harvest.continuous.urlstate import UrlState

log = logging.getLogger(__name__)

COLUMNS = [f.name for f in fields(UrlState) if f.name != "extra"]

_UPSERT = sa.text(
    f"INSERT INTO continuous_url_state ({', '.join(COLUMNS)}) VALUES "
    f"({', '.join(':' + c for c in COLUMNS)}) ON CONFLICT (url) DO UPDATE SET "
    + ", ".join(f"{c} = EXCLUDED.{c}" for c in COLUMNS if c != "url")
)

# a URL whose seed came from a selection record that is no longer active (a curator withdrew
# the target): its history is kept, but it is not revisited nor counted as due or overdue
RETIRED = (
    "EXISTS (SELECT 1 FROM continuous_seeds rs JOIN selection_records rr USING (record_id)"
    " WHERE rs.seed_url = u.seed_url AND NOT rr.active)"
)

# the URL state as the statistics see it: next_due NULL (never due) for retired URLs
LIVE_STATE = (
    "(SELECT u.url, u.host, u.visits, u.changes, u.revisits, u.wait_s,"
    f" CASE WHEN {RETIRED} THEN NULL ELSE u.next_due END AS next_due"
    " FROM continuous_url_state u) AS continuous_url_state"
)

# the URLs due, oldest due first; of a seed with a launch quota only as many (its oldest due)
# as the quota has left, so that one batch cannot overshoot it
_DUE = sa.text(
    f"SELECT {', '.join(COLUMNS)} FROM ("
    f" SELECT {', '.join('u.' + c for c in COLUMNS)}, s.max_urls_per_launch AS q_max,"
    "  s.fetched_since_launch AS q_used,"
    "  row_number() OVER (PARTITION BY u.seed_url ORDER BY u.next_due, u.url) AS q_rank"
    "  FROM continuous_url_state u LEFT JOIN continuous_seeds s ON s.seed_url = u.seed_url"
    f"  WHERE u.next_due <= :now AND NOT {RETIRED}) d"
    " WHERE q_max IS NULL OR q_max < 0 OR q_used + q_rank <= q_max"
    " ORDER BY next_due, url LIMIT :limit"
)


def _row_state(row: sa.Row) -> UrlState:
    return UrlState(**{c: getattr(row, c) for c in COLUMNS})


def due_states(engine: sa.Engine, now: dt.datetime, limit: int) -> list[UrlState]:
    """Up to ``limit`` URLs due at ``now``, in order of due time."""
    with engine.connect() as conn:
        return [_row_state(r) for r in conn.execute(_DUE, {"now": now, "limit": limit})]


def load_states(engine: sa.Engine, urls: Iterable[str]) -> dict[str, UrlState]:
    urls = list(urls)
    if not urls:
        return {}
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                f"SELECT {', '.join(COLUMNS)} FROM continuous_url_state WHERE url = ANY(:urls)"
            ),
            {"urls": urls},
        )
        return {r.url: _row_state(r) for r in rows}


def captured_states_of_seeds(
    engine: sa.Engine, seeds: Iterable[str], skip: Iterable[str]
) -> list[UrlState]:
    """The URLs of ``seeds`` with a capture, but those in ``skip`` (the run's due URLs).

    Why: a run fetches a page's embeds with it whether or not they are due themselves; with
    their earlier captures in the run's dedup index an unchanged embed is a revisit record
    (and a conditional request), not one more full copy on every visit of its page.
    """
    seeds = list(seeds)
    if not seeds:
        return []
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                f"SELECT {', '.join(COLUMNS)} FROM continuous_url_state"
                " WHERE seed_url = ANY(:seeds) AND digest IS NOT NULL"
                " AND NOT (url = ANY(:skip)) ORDER BY url"
            ),
            {"seeds": seeds, "skip": list(skip)},
        )
        return [_row_state(r) for r in rows]


def save_states(conn: sa.Connection, states: Iterable[UrlState]) -> int:
    """UPSERT the states (inside the caller's transaction); returns how many."""
    rows = [{c: getattr(s, c) for c in COLUMNS} for s in states]
    if rows:
        conn.execute(_UPSERT, rows)
    return len(rows)


def insert_new(conn: sa.Connection, states: Iterable[UrlState]) -> int:
    """Insert URLs not yet known (a known URL keeps its history); returns how many were new."""
    count = 0
    stmt = sa.text(
        f"INSERT INTO continuous_url_state ({', '.join(COLUMNS)}) VALUES "
        f"({', '.join(':' + c for c in COLUMNS)}) ON CONFLICT (url) DO NOTHING"
    )
    for s in states:
        count += conn.execute(stmt, {c: getattr(s, c) for c in COLUMNS}).rowcount or 0
    return count


def host_overrides(engine: sa.Engine) -> dict[str, dict]:
    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT host, overrides FROM continuous_host_policy"))
        return {r.host: dict(r.overrides or {}) for r in rows}


def set_host_policy(engine: sa.Engine, host: str, overrides: dict) -> None:
    """Store per-host overrides (checked against RevisitPolicy's keys first)."""
    RevisitPolicy().merged(overrides)
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO continuous_host_policy (host, overrides) VALUES (:h, CAST(:o AS jsonb))"
                " ON CONFLICT (host) DO UPDATE SET overrides = EXCLUDED.overrides"
            ),
            {"h": host.lower(), "o": json.dumps(overrides)},
        )


def seed_settings(engine: sa.Engine) -> dict[str, tuple[str, str]]:
    """Seed URL → (scope, template) of every seed the launcher injected."""
    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT seed_url, scope, template FROM continuous_seeds"))
        return {r.seed_url: (r.scope, r.template) for r in rows}


class PolicyBook:
    """Each URL's policy: its seed's template's (else the base one), then its host's overrides.

    Why this order: a template says how a kind of site is revisited; an operator who overrides a
    host means that host whatever template its seeds came with. Cached per (template, host).
    """

    def __init__(
        self,
        base: RevisitPolicy,
        overrides: dict[str, dict],
        templates: dict[str, RevisitPolicy] | None = None,
    ) -> None:
        self.base = base
        self.overrides = overrides
        self.templates = templates or {}
        self._cache: dict[tuple[str | None, str], RevisitPolicy] = {}

    def for_host(self, host: str, template: str | None = None) -> RevisitPolicy:
        key = (template, host)
        if key not in self._cache:
            base = self.templates.get(template or "", self.base)
            try:
                self._cache[key] = base.merged(self.overrides.get(host))
            except (TypeError, ValueError) as exc:
                log.error("continuous_host_policy %s ignored: %s", host, exc)
                self._cache[key] = base
        return self._cache[key]


def count_seed_fetches(conn: sa.Connection, per_seed: dict[str, int]) -> None:
    """Add this run's fetches to each seed's count since its last launch (the quota)."""
    for seed, n in per_seed.items():
        conn.execute(
            sa.text(
                "UPDATE continuous_seeds SET fetched_since_launch = fetched_since_launch + :n"
                " WHERE seed_url = :s"
            ),
            {"n": n, "s": seed},
        )
