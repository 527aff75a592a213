"""The configured search backend (``[fulltext] backend``): one module per backend."""

from __future__ import annotations

from harvestflow.db import get_engine
from harvestflow.settings import Settings, get_settings
from search.model import SearchBackend
from search.pg import COUNT_LIMIT, PgSearchBackend


def get_backend(settings: Settings | None = None) -> SearchBackend:
    settings = settings or get_settings()
    kind = settings.get("fulltext", "backend", "postgres")
    if kind == "postgres":
        limit = int(settings.get("fulltext", "count_limit", COUNT_LIMIT))
        return PgSearchBackend(get_engine(settings.harvest_db_url), count_limit=limit)
    raise ValueError(f"[fulltext] backend: unknown search backend {kind!r} (known: postgres)")
