"""Small shared helpers of the harvest package: engine resolution, settings sections, time.

Why: every public function takes an optional engine (tests pass theirs, DAG tasks use the
settings' one) and needs the same [harvest]/[jobgen] settings; one place avoids drift.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy.engine import Engine

from harvestflow.db import get_engine
from harvestflow.formats import stop_reasons as _sr
from harvestflow.settings import get_settings

# NetarchiveSuite job status codes (sql/001 comments)
NEW, SUBMITTED, STARTED, DONE, FAILED, RESUBMITTED, FAILED_REJECTED = range(7)
STATUS_NAMES = {
    NEW: "NEW",
    SUBMITTED: "SUBMITTED",
    STARTED: "STARTED",
    DONE: "DONE",
    FAILED: "FAILED",
    RESUBMITTED: "RESUBMITTED",
    FAILED_REJECTED: "FAILED_REJECTED",
}

# NetarchiveSuite stop reasons (and the operator's): harvestflow/formats/stop_reasons.py
STOP_COMPLETE, STOP_OBJECT_LIMIT, STOP_SIZE_LIMIT = _sr.COMPLETE, _sr.OBJECT_LIMIT, _sr.SIZE_LIMIT
STOP_CONFIG_SIZE_LIMIT, STOP_UNFINISHED = _sr.CONFIG_SIZE_LIMIT, _sr.UNFINISHED
STOP_CONFIG_OBJECT_LIMIT, STOP_TIME_LIMIT = _sr.CONFIG_OBJECT_LIMIT, _sr.TIME_LIMIT
STOP_STOPPED_BY_OPERATOR = _sr.STOPPED_BY_OPERATOR
STOP_REASON_NAMES = _sr.NAMES


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
