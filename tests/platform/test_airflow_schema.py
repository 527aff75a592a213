"""``app.runtime.airflow_schema``: ``db migrate`` is left out of a start only while Airflow's
metadata database and the installed Airflow are as the last migration left them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from app.runtime import airflow_schema
from app.runtime.airflow_commands import prepare_commands
from harvestflow.settings import Settings, load


def test_a_start_migrates_unless_nothing_changed_since_the_last_migration(
    airflow_ready: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the session's migrated database, an Airflow home of this test's (no record yet)
    settings = load(environ={**os.environ, "HARVESTFLOW_AIRFLOW__HOME_SUBDIR": str(tmp_path)})
    assert settings.airflow_db_url == airflow_ready.airflow_db_url
    assert prepare_commands(settings)[0] == ["db", "migrate"]  # never recorded: migrate

    airflow_schema.record_migrated(settings, prepare_commands(settings)[1:])
    assert airflow_schema.needs_migration(settings)  # no migration ran: nothing recorded
    airflow_schema.record_migrated(settings, prepare_commands(settings))
    recorded = json.loads(airflow_schema.stamp_path(settings).read_text())
    # Airflow's own version table and the FAB provider's (its auth manager's tables)
    assert {"alembic_version", "alembic_version_fab"} <= set(recorded["revisions"])
    assert any(d.startswith("apache_airflow_core-3.") for d in recorded["distributions"])
    commands = prepare_commands(settings)
    assert [c[:2] for c in commands] == [["pools", "import"]]  # as migrated: pools only

    # Airflow (or a provider) upgraded: migrate again
    upgraded = [*recorded["distributions"], "apache_airflow_core-9.9.9.dist-info"]
    monkeypatch.setattr(airflow_schema, "installed_airflow", lambda: upgraded)
    assert prepare_commands(settings)[0] == ["db", "migrate"]
    monkeypatch.undo()
    # a database at other revisions than the migration left (restored from a backup, or
    # migrated by another Airflow): migrate again
    other = {**recorded, "revisions": {**recorded["revisions"], "alembic_version": ["0ld"]}}
    airflow_schema.stamp_path(settings).write_text(json.dumps(other))
    assert prepare_commands(settings)[0] == ["db", "migrate"]
    # a record that cannot be read: migrate
    airflow_schema.stamp_path(settings).write_text("{")
    assert prepare_commands(settings)[0] == ["db", "migrate"]
