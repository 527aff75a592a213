"""Fixtures of the harvest-planning tests: a fresh harvest DB with reference data, the
selection records' loopback site."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

# the selection records' loopback site (a file's own ``site`` fixture overrides it)
from tests.support.selection_site import loopback_seeds, site  # noqa: F401 (fixtures)


@pytest.fixture
def hdb(db_engine: sa.Engine) -> sa.Engine:
    """A fresh harvest database with templates, schedules and channels loaded."""
    from harvest.bootstrap import ensure_reference_data

    ensure_reference_data(db_engine)
    return db_engine
