"""Harvest database access: engines, database creation, versioned migrations.

Why this shape: every stage library gets its engine here (SQLAlchemy 2 Core over psycopg2), and
the schema is plain versioned SQL in ``sql/`` so that a DBA can read it. Migrations run under a
PostgreSQL advisory lock (two workers starting at once cannot apply a file twice), each file in
its own transaction, and are recorded with their checksum: applying twice changes nothing, and
an applied file edited afterwards is refused instead of silently diverging.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Engine, make_url

from harvestflow.errors import HarvestflowError
from harvestflow.package_data import data_path
from harvestflow.settings import get_settings

log = logging.getLogger(__name__)

SQL_DIR = data_path("sql")
_MIGRATION_NAME = re.compile(r"^(\d{3,})_[\w-]+\.sql$")
_ADVISORY_LOCK_KEY = 0x4856_4657  # "HVFW"


class MigrationError(HarvestflowError, RuntimeError):
    """A migration that cannot be applied, with the file and the reason."""


@dataclass(frozen=True)
class Migration:
    version: str
    path: Path

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.path.read_bytes()).hexdigest()


def discover_migrations(sql_dir: Path = SQL_DIR) -> list[Migration]:
    found = []
    for path in sorted(sql_dir.glob("*.sql")):
        match = _MIGRATION_NAME.match(path.name)
        if not match:
            raise MigrationError(f"{path}: migration files are named NNN_description.sql")
        found.append(Migration(match.group(1), path))
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise MigrationError(f"{sql_dir}: two migration files share a version number")
    return found


_ENGINES: dict[str, Engine] = {}


@lru_cache(maxsize=8)
def _engine_for(url: str) -> Engine:
    engine = sa.create_engine(url, pool_pre_ping=True, future=True)
    _ENGINES[url] = engine
    return engine


def get_engine(url: str | None = None) -> Engine:
    """A pooled engine for the harvest database (or ``url``)."""
    return _engine_for(url or get_settings().harvest_db_url)


def ensure_database(url: str) -> bool:
    """Create the database named in ``url`` if it does not exist; True when created."""
    parsed = make_url(url)
    name = parsed.database
    if not name:
        raise ValueError(f"no database name in {parsed.render_as_string(hide_password=True)}")
    admin = sa.create_engine(parsed.set(database="postgres"), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            exists = conn.execute(
                sa.text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": name}
            ).scalar()
            if exists:
                return False
            # identifiers cannot be bound parameters; the name comes from settings, quote it anyway
            quoted = conn.dialect.identifier_preparer.quote(name)
            conn.execute(sa.text(f"CREATE DATABASE {quoted}"))
            log.info("created database %s", name)
            return True
    finally:
        admin.dispose()


def migrate(engine: Engine | None = None, sql_dir: Path = SQL_DIR) -> list[str]:
    """Apply the migrations not yet applied; returns the versions applied by this call."""
    engine = engine or get_engine()
    migrations = discover_migrations(sql_dir)
    applied_now: list[str] = []
    with engine.connect() as conn:
        conn.execute(sa.text("SELECT pg_advisory_lock(:k)"), {"k": _ADVISORY_LOCK_KEY})
        try:
            conn.execute(
                sa.text(
                    "CREATE TABLE IF NOT EXISTS schema_versions ("
                    " version text PRIMARY KEY, filename text NOT NULL,"
                    " checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
                )
            )
            conn.commit()
            done = {
                r.version: r.checksum
                for r in conn.execute(sa.text("SELECT version, checksum FROM schema_versions"))
            }
            conn.commit()
            for mig in migrations:
                if mig.version in done:
                    if done[mig.version] != mig.checksum:
                        raise MigrationError(
                            f"{mig.path.name}: already applied with another content "
                            "(checksum differs); add a new migration instead of editing it"
                        )
                    continue
                log.info("applying migration %s", mig.path.name)
                try:
                    # raw cursor, no parameters: SQL files contain '%' (plpgsql RAISE)
                    cur = conn.connection.cursor()
                    try:
                        cur.execute(mig.path.read_text(encoding="utf-8"))
                    finally:
                        cur.close()
                    conn.execute(
                        sa.text(
                            "INSERT INTO schema_versions (version, filename, checksum)"
                            " VALUES (:v, :f, :c)"
                        ),
                        {"v": mig.version, "f": mig.path.name, "c": mig.checksum},
                    )
                    conn.commit()
                except Exception as exc:
                    conn.rollback()
                    raise MigrationError(f"{mig.path.name}: {exc}") from exc
                applied_now.append(mig.version)
        finally:
            conn.rollback()
            conn.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": _ADVISORY_LOCK_KEY})
            conn.commit()
    return applied_now


def dispose_engines() -> None:
    """Close pooled connections (before stopping the server, or after a fork)."""
    for engine in list(_ENGINES.values()):
        engine.dispose()
    _ENGINES.clear()
    _engine_for.cache_clear()
