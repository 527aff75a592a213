"""Small shared helpers of the harvest package: engine resolution, settings sections, time.

Why: every public function takes an optional engine (tests pass theirs, DAG tasks use the
settings' one) and needs the same [harvest]/[jobgen] settings; one place avoids drift.
"""

from __future__ import annotations

import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path
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


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` under a temporary name beside ``path`` then rename it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
