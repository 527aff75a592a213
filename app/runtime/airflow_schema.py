"""Whether Airflow's metadata database needs ``airflow db migrate``: it does not when it is
where the last migration with the same installed Airflow left it.

Why: ``up`` ran ``db migrate`` at every start; with nothing to migrate it still loads every
migration script of Airflow and of the FAB provider (whose tables it also keeps), its models
and its auth manager — ~4.4 CPU-s on the 2-core CI VM, each second ``up`` on a data dir.
Here the answer costs a query and a directory listing: after a migration succeeded, the
revisions it left (every Alembic version table of the database: Airflow's, FAB's) are
recorded with the installed ``apache-airflow*`` distributions; a later start migrates again
unless both are still the same. An upgrade (or downgrade) of Airflow or of a provider changes
the distributions, a database restored, replaced or migrated by someone else changes the
revisions: either way ``db migrate`` runs, and Airflow decides what to do.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from harvestflow.atomic import atomic_write_text
from harvestflow.settings import Settings

log = logging.getLogger(__name__)

MIGRATE = ["db", "migrate"]


def stamp_path(settings: Settings) -> Path:
    return settings.airflow_home / "migrated.json"


def installed_airflow() -> list[str]:
    """The installed ``apache-airflow*`` distributions, by their metadata directories' names
    (``apache_airflow_core-3.3.2.dist-info``: name and version, no file read)."""
    found: set[str] = set()
    for entry in sys.path:
        folder = Path(entry or ".")
        if folder.is_dir():
            found.update(p.name for p in folder.glob("apache_airflow*.dist-info"))
    return sorted(found)


def revisions(settings: Settings) -> dict[str, list[str]]:
    """Every Alembic version table of Airflow's metadata DB and the revisions in it (empty for
    a database never migrated)."""
    engine = sa.create_engine(settings.airflow_db_url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            tables = conn.execute(
                sa.text(
                    "SELECT table_name FROM information_schema.tables"
                    " WHERE table_schema = current_schema()"
                    " AND table_name LIKE 'alembic\\_version%'"
                )
            ).scalars()
            return {
                str(t): sorted(
                    str(r)
                    for r in conn.execute(sa.text(f'SELECT version_num FROM "{t}"')).scalars()
                )
                for t in sorted(tables)
            }
    finally:
        engine.dispose()


def _state(settings: Settings) -> dict[str, Any]:
    return {"distributions": installed_airflow(), "revisions": revisions(settings)}


def needs_migration(settings: Settings) -> bool:
    """True unless the database and the installed Airflow are as the last migration left them
    (any doubt, e.g. an unreadable record or database: True, and ``db migrate`` decides)."""
    path = stamp_path(settings)
    try:
        recorded = json.loads(path.read_text())
        now = _state(settings)
    except (OSError, ValueError, sa.exc.SQLAlchemyError):
        return True
    return bool(recorded != now or not now["revisions"])


def record_migrated(settings: Settings, commands: list[list[str]]) -> None:
    """After ``commands`` succeeded: when they migrated, the state they left (for
    :func:`needs_migration`)."""
    if MIGRATE not in commands:
        return
    try:
        atomic_write_text(stamp_path(settings), json.dumps(_state(settings)) + "\n")
    except (OSError, sa.exc.SQLAlchemyError) as exc:  # the next start migrates, that is all
        log.warning("could not record Airflow's migrated schema: %s", exc)
