"""Fixtures of the harvest-planning tests: a fresh harvest DB with reference data."""

from __future__ import annotations

import pytest
import sqlalchemy as sa


@pytest.fixture
def hdb(db_engine: sa.Engine) -> sa.Engine:
    """A fresh harvest database with templates, schedules and channels loaded."""
    from harvest.bootstrap import ensure_reference_data

    ensure_reference_data(db_engine)
    return db_engine
