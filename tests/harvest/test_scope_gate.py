"""Legal-deposit mode on a real harvest database: with ``require_scope_evidence``, the selection
transfer leaves out a record outside the national domains that has no scope evidence (named,
with what to do) and harvests it once a curator recorded evidence; a national site needs none;
with the setting off every record is transferred."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from harvest.selection import annotations, editing
from harvest.selection.transfer import transfer_selection_records
from harvestflow import settings as settings_mod
from harvestflow.settings import SettingsError

pytestmark = pytest.mark.services


def _record(engine: sa.Engine, url: str) -> int:
    fields = {"collection": "Web", "seed_url": url, "budget": "small", "frequency": "weekly",
              "depth": "page", "active": "yes", "theme": "t"}  # fmt: skip
    saved = editing.save_record(fields, "setup", check_urls=False, engine=engine)
    assert saved.record_id is not None, saved.refused
    return saved.record_id


def _seeds(engine: sa.Engine) -> set[str]:
    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT seeds FROM seedlists")).scalars().all()
    return {line for text in rows for line in (text or "").split()}


def test_a_foreign_target_needs_scope_evidence_in_legal_deposit_mode(
    hdb: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    _record(hdb, "http://mairie.example.fr/")
    abroad = _record(hdb, "http://abroad.example/")
    noted = _record(hdb, "http://noted.example/")
    with hdb.begin() as conn:
        annotations.annotate(conn, noted, "dora", scope_evidence=[{"kind": "address"}])
    monkeypatch.setenv("HARVESTFLOW_HARVEST__REQUIRE_SCOPE_EVIDENCE", "true")
    monkeypatch.setenv("HARVESTFLOW_HARVEST__NATIONAL_DOMAINS", '["fr"]')
    settings_mod.reset()

    first = transfer_selection_records(engine=hdb)
    assert first["records"] == 2
    assert first["errors"] == [
        f"record {abroad} (http://abroad.example/): not harvested: outside the national domains"
        " (fr) and no scope evidence; annotate it (domain, address or manual evidence) to"
        " harvest it under legal deposit"
    ]
    assert "http://abroad.example/" not in _seeds(hdb)
    assert {"http://mairie.example.fr/", "http://noted.example/"} <= _seeds(hdb)

    with hdb.begin() as conn:
        annotations.annotate(conn, abroad, "dora",
                             scope_evidence=[{"kind": "manual", "text": "a letter"}])  # fmt: skip
    again = transfer_selection_records(engine=hdb)
    assert again["records"] == 3 and again["errors"] == []
    assert "http://abroad.example/" in _seeds(hdb)

    monkeypatch.setenv("HARVESTFLOW_HARVEST__NATIONAL_DOMAINS", "[]")
    settings_mod.reset()
    with pytest.raises(SettingsError, match="needs \\[harvest\\] national_domains"):
        transfer_selection_records(engine=hdb)
    monkeypatch.delenv("HARVESTFLOW_HARVEST__REQUIRE_SCOPE_EVIDENCE")
    settings_mod.reset()
    assert transfer_selection_records(engine=hdb)["records"] == 3
