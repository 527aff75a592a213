"""Small shared helpers of the harvest package: engine resolution, settings sections, time.

Why: every public function takes an optional engine (tests pass theirs, DAG tasks use the
settings' one) and needs the same [harvest]/[jobgen] settings; one place avoids drift.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy.engine import Engine

from harvestflow.db import get_engine
from harvestflow.settings import get_settings


def engine_or_default(engine: Engine | None) -> Engine:
    """The given engine, or the harvest database's from settings."""
    return engine if engine is not None else get_engine()


def harvest_settings() -> dict[str, Any]:
    """The [harvest] settings section (channels, alias timeout...)."""
    return dict(get_settings()["harvest"])


def as_utc(value: datetime) -> datetime:
    """A timezone-aware UTC datetime (naive values are taken as UTC, as Airflow's are)."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def utcnow() -> datetime:
    return datetime.now(UTC)
