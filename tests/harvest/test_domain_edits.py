"""Domain configurations and aliases changed by people (harvest.office.domain_edits) on a real
harvest database: an alias set on a domain leaves it out of the next snapshot's jobs until it
expires or is removed; the alias chains NetarchiveSuite refuses are refused; a configuration's
template, budgets and seeds are changed, checked and audited."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from harvest.domains import ensure_config
from harvest.jobgen.source import count_configs
from harvest.office.definition_form import OfficeError
from harvest.office.domain_edits import remove_alias, save_configuration, set_alias
from harvest.planning import generate_jobs
from harvest.snapshot import create_snapshot_definition

SET = datetime(2026, 11, 22, 9, tzinfo=UTC)


def _domains_of_jobs(engine: sa.Engine, jobs: list[int]) -> set[str]:
    with engine.connect() as conn:
        return set(
            conn.execute(
                sa.text(
                    "SELECT d.name FROM job_configs jc JOIN configurations c USING (config_id)"
                    " JOIN domains d USING (domain_id) WHERE jc.job_id = ANY(:j)"
                ),
                {"j": jobs},
            ).scalars()
        )


def test_an_alias_is_left_out_of_the_next_snapshot_until_it_expires_or_is_removed(hdb):
    with hdb.begin() as conn:
        for name in ("example.fr", "example.com", "other.org"):
            ensure_config(conn, name)
    snapshot = create_snapshot_definition("broad-2026", engine=hdb)
    expiry = set_alias("example.com", "example.fr", "carol", engine=hdb, now=SET)
    assert expiry == SET + timedelta(days=365)

    jobs = generate_jobs(snapshot, SET + timedelta(days=1), hdb)
    assert _domains_of_jobs(hdb, jobs) == {"example.fr", "other.org"}
    with hdb.connect() as conn:
        assert count_configs(conn, snapshot, as_of=expiry - timedelta(hours=1)) == 2
        assert count_configs(conn, snapshot, as_of=expiry + timedelta(hours=1)) == 3  # expired
        row = conn.execute(
            sa.text("SELECT alias_set_by, lastaliasupdate FROM domains WHERE name = 'example.com'")
        ).one()
    assert (row.alias_set_by, row.lastaliasupdate) == ("carol", SET)

    remove_alias("example.com", "dave", engine=hdb)
    jobs = generate_jobs(snapshot, SET + timedelta(days=2), hdb)
    assert _domains_of_jobs(hdb, jobs) == {"example.fr", "example.com", "other.org"}
    with hdb.connect() as conn:
        audit = conn.execute(
            sa.text(
                "SELECT username, action FROM audit_log WHERE target = 'domain example.com'"
                " ORDER BY audit_id"
            )
        ).all()
    assert [tuple(a) for a in audit] == [
        ("carol", "domain.set_alias"),
        ("dave", "domain.remove_alias"),
    ]


def test_alias_chains_and_unknown_domains_are_refused(hdb):
    with hdb.begin() as conn:
        for name in ("a.fr", "b.fr", "c.fr"):
            ensure_config(conn, name)
    with pytest.raises(OfficeError, match=re.escape("a.fr cannot be an alias of itself")):
        set_alias("a.fr", "a.fr", "carol", engine=hdb)
    set_alias("b.fr", "a.fr", "carol", engine=hdb)
    with pytest.raises(
        OfficeError, match=re.escape("b.fr is itself an alias of a.fr: make c.fr an alias")
    ):
        set_alias("c.fr", "b.fr", "carol", engine=hdb)
    with pytest.raises(OfficeError, match=re.escape("a.fr has aliases (b.fr): it cannot become")):
        set_alias("a.fr", "c.fr", "carol", engine=hdb)
    with pytest.raises(OfficeError, match=re.escape("no domain 'nowhere.fr'")):
        set_alias("nowhere.fr", "a.fr", "carol", engine=hdb)
    with pytest.raises(OfficeError, match=re.escape("c.fr is not an alias")):
        remove_alias("c.fr", "carol", engine=hdb)


def test_a_configuration_is_changed_checked_and_audited(hdb):
    with hdb.begin() as conn:
        ensure_config(conn, "example.fr")
    save_configuration(
        "example.fr",
        {"template": "host_only", "max_objects": "2000", "seeds": "https://www.example.fr/news"},
        "carol",
        engine=hdb,
    )
    cid = save_configuration(
        "example.fr", {"config": "deep", "max_bytes": "-1", "default": "yes"}, "carol", engine=hdb
    )
    with hdb.connect() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT c.name, t.name AS template, c.maxobjects, c.maxbytes, s.seeds,"
                " d.defaultconfig = c.config_id AS is_default FROM configurations c"
                " JOIN templates t USING (template_id) JOIN domains d USING (domain_id)"
                " JOIN config_seedlists cs USING (config_id) JOIN seedlists s USING (seedlist_id)"
                " ORDER BY c.name"
            )
        ).all()
        audit = conn.execute(
            sa.text("SELECT action, detail FROM audit_log ORDER BY audit_id")
        ).all()
    assert [tuple(r) for r in rows] == [
        ("deep", "default_selective", -1, -1, "http://www.example.fr\nhttps://www.example.fr\n"
         "http://example.fr\nhttps://example.fr", True),
        ("defaultconfig", "host_only", 2000, 1_000_000_000, "https://www.example.fr/news", False),
    ]  # fmt: skip
    assert [a.action for a in audit] == ["domain.configure", "domain.add_configuration"]
    assert audit[0].detail["before"]["template"] == "default_selective"
    assert audit[0].detail["after"]["template"] == "host_only"
    assert cid == audit[1].detail["after"]["config_id"]

    for values, message in (
        ({"seeds": "https://www.other.org/"}, "seeds line 1: https://www.other.org/ is not in"),
        ({"template": "nope"}, "template: unknown template 'nope'"),
        ({"max_bytes": "0"}, "max_bytes: -1 \\(unlimited\\) or a positive number, not 0"),
        ({"colour": "red"}, "unknown field\\(s\\): colour"),
    ):
        with pytest.raises(OfficeError, match=message):
            save_configuration("example.fr", values, "carol", engine=hdb)
