"""A curator's saved searches of the selection records list (``saved_searches``, sql/060).

Why stored and per user: BCWeb's librarians come back to the same searches every day (their
collection's records still unchecked, a theme's inactive ones); a saved search is a name and
the list's query string, filters only (:data:`FILTERS`), so opening it is opening the list.
Saving and deleting one are audited, as every write of the curator pages is.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from harvest.errors import HarvestError
from harvestflow.audit import record_audit

log = logging.getLogger(__name__)

FILTERS = ("q", "collection", "frequency", "status", "validation", "curator", "theme", "keyword")
MAX_SAVED = 100  # searches a user may keep


class SavedSearchError(HarvestError, ValueError):
    """A search that cannot be saved (no name, nothing to search, too many)."""


@dataclass(frozen=True)
class SavedSearch:
    name: str
    query: str  # the list's query string, without '?'


def clean_query(raw: str) -> str:
    """The filters of a query string, in :data:`FILTERS`' order, empty ones left out."""
    given = dict(parse_qsl(raw.lstrip("?")))
    return urlencode([(k, given[k].strip()[:2000]) for k in FILTERS if given.get(k, "").strip()])


def saved(conn: Connection, user: str) -> list[SavedSearch]:
    rows = conn.execute(
        sa.text("SELECT name, query FROM saved_searches WHERE username = :u ORDER BY name"),
        {"u": user},
    ).all()
    return [SavedSearch(r.name, r.query) for r in rows]


def save(conn: Connection, user: str, name: str, raw_query: str) -> SavedSearch:
    """Keep ``raw_query``'s filters under ``name`` (a name saved again is replaced)."""
    name = name.strip()
    if not name or len(name) > 200 or "\x00" in name:
        raise SavedSearchError("a saved search needs a name (at most 200 characters)")
    query = clean_query(raw_query)
    if not query:
        raise SavedSearchError("nothing to save: choose at least one filter, then search")
    known = {s.name for s in saved(conn, user)}
    if name not in known and len(known) >= MAX_SAVED:
        raise SavedSearchError(f"{user} already keeps {MAX_SAVED} searches: delete one first")
    conn.execute(
        sa.text(
            "INSERT INTO saved_searches (username, name, query) VALUES (:u, :n, :q)"
            " ON CONFLICT (username, name) DO UPDATE SET query = EXCLUDED.query, saved_at = now()"
        ),
        {"u": user, "n": name, "q": query},
    )
    log.info("saved search %r of %s: %s", name, user, query)
    record_audit(conn, user, "search.save", f"saved searches of {user}",
                 {"name": name, "query": query})  # fmt: skip
    return SavedSearch(name, query)


def delete(conn: Connection, user: str, name: str) -> bool:
    gone = conn.execute(
        sa.text("DELETE FROM saved_searches WHERE username = :u AND name = :n"),
        {"u": user, "n": name.strip()},
    ).rowcount
    if gone:
        record_audit(conn, user, "search.delete", f"saved searches of {user}",
                     {"name": name.strip()})  # fmt: skip
    return bool(gone)
