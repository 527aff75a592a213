"""Snapshot harvests: aliases left out, low-priority channel, step 2 only on harvest limits."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from harvest import pipeline as p
from harvest.domains import ensure_config
from harvest.snapshot import create_snapshot_definition, create_step2_definition, domains_for_step2
from tests.support.summaries import write_summary

pytestmark = pytest.mark.services
LD = datetime(2026, 11, 22, 3, 0, tzinfo=UTC)


def load_domains(engine, names):
    with engine.begin() as c:
        for name in names:
            ensure_config(c, name, template="default_snapshot")


def test_snapshot_skips_live_aliases_and_runs_on_the_low_priority_channel(hdb, tmp_path):
    load_domains(hdb, ["a.test", "b.test", "c.test", "d.test"])
    with hdb.begin() as c:
        ids = dict(c.execute(sa.text("SELECT name, domain_id FROM domains")).all())
        c.execute(
            sa.text("UPDATE domains SET alias = :a, lastaliasupdate = now() WHERE name = 'b.test'"),
            {"a": ids["a.test"]},
        )
        # an alias older than a year has expired: harvested again
        c.execute(
            sa.text("UPDATE domains SET alias = :a, lastaliasupdate = :t WHERE name = 'c.test'"),
            {"a": ids["a.test"], "t": LD - timedelta(days=400)},
        )
        c.execute(sa.text("UPDATE domains SET active = false WHERE name = 'd.test'"))
    hid = create_snapshot_definition("broad-2026", max_objects=10_000, engine=hdb)
    jobs = p.generate_jobs(hid, LD, engine=hdb)
    spec = json.loads(Path(p.prepare_job(jobs[0], tmp_path, engine=hdb)).read_text())
    assert len(jobs) == 1
    assert [d["domain"] for d in spec["domains"]] == ["a.test", "c.test"]
    assert spec["channel"] == "LARGE" and spec["snapshot"] is True
    assert spec["max_objects"] == 10_000  # the harvest's per-domain budget, at job level
    assert {d["max_objects"] for d in spec["domains"]} == {-1}  # configurations: unlimited
    assert "http://www.a.test" in spec["seeds"] and "https://c.test" in spec["seeds"]


def test_step2_reharvests_only_domains_stopped_by_the_harvest_limit(hdb, tmp_path):
    names = ["full.test", "objlimit.test", "sizelimit.test", "cfglimit.test", "unfinished.test"]
    load_domains(hdb, names)
    step1 = create_snapshot_definition("broad-2026", max_objects=10_000, engine=hdb)
    jobs = p.generate_jobs(step1, LD, engine=hdb)
    assert len(jobs) == 1
    path = p.prepare_job(jobs[0], tmp_path, engine=hdb)
    write_summary(
        path,
        {
            "full.test": (10, 1000, 0),
            "objlimit.test": (10_000, 10**8, 1),
            "sizelimit.test": (900, 10**9, 2),
            "cfglimit.test": (500, 10**9, 3),
            "unfinished.test": (5, 100, 4),
        },
    )
    assert p.record_job_results(jobs[0], engine=hdb)["status"] == "DONE"
    assert domains_for_step2(step1, hdb) == ["objlimit.test", "sizelimit.test"]
    step2 = create_step2_definition(step1, max_objects=100_000, engine=hdb)
    jobs2 = p.generate_jobs(step2, LD + timedelta(days=7), engine=hdb)
    domains = set()
    for job in jobs2:
        spec = json.loads(Path(p.prepare_job(job, tmp_path, engine=hdb)).read_text())
        domains |= {d["domain"] for d in spec["domains"]}
        assert spec["max_objects"] == 100_000
    assert domains == {"objlimit.test", "sizelimit.test"}


def test_fixed_generator_chosen_by_setting(hdb, monkeypatch):
    from harvest.jobgen.model import JobGenSettings
    from harvestflow import settings as settings_mod

    load_domains(hdb, [f"f{i}.test" for i in range(5)])
    hid = create_snapshot_definition("broad-fixed", engine=hdb)
    monkeypatch.setenv("HARVESTFLOW_JOBGEN__GENERATOR", "fixed")
    settings_mod.reset()
    try:
        jobs = p.generate_jobs(
            hid,
            LD,
            engine=hdb,
            settings=JobGenSettings(fixed_domain_count_snapshot=2, max_total_size=5000),
        )
    finally:
        monkeypatch.delenv("HARVESTFLOW_JOBGEN__GENERATOR")
        settings_mod.reset()
    with hdb.connect() as c:
        sizes = (
            c.execute(
                sa.text("SELECT num_configs FROM jobs WHERE job_id = ANY(:j) ORDER BY job_index"),
                {"j": jobs},
            )
            .scalars()
            .all()
        )
    # the default generator would close every job after one configuration (5000 expected
    # objects each, max_total_size 5000): [1, 1, 1, 1, 1]
    assert sizes == [2, 2, 1]


def test_backfilled_snapshot_judges_aliases_at_its_logical_date(hdb, tmp_path):
    load_domains(hdb, ["a.test", "b.test", "c.test"])
    past = datetime(2026, 3, 1, 3, 0, tzinfo=UTC)
    with hdb.begin() as c:
        ids = dict(c.execute(sa.text("SELECT name, domain_id FROM domains")).all())
        # b: an alias 273 days old at the backfilled date (live then), over a year old today
        # c: 455 days old at the backfilled date: expired then as now
        for name, updated in (
            ("b.test", datetime(2025, 6, 1, tzinfo=UTC)),
            ("c.test", datetime(2024, 12, 1, tzinfo=UTC)),
        ):
            c.execute(
                sa.text("UPDATE domains SET alias = :a, lastaliasupdate = :t WHERE name = :n"),
                {"a": ids["a.test"], "t": updated, "n": name},
            )
    hid = create_snapshot_definition("broad-2026-03", engine=hdb)
    jobs = p.generate_jobs(hid, past, engine=hdb)
    spec = json.loads(Path(p.prepare_job(jobs[0], tmp_path, engine=hdb)).read_text())
    assert len(jobs) == 1
    assert [d["domain"] for d in spec["domains"]] == ["a.test", "c.test"]
    # the same definition run today: b's alias has expired, b is harvested again
    today = p.generate_jobs(hid, datetime.now(UTC), engine=hdb)
    with hdb.connect() as c:
        domains = (
            c.execute(
                sa.text(
                    "SELECT d.name FROM job_configs jc JOIN configurations USING (config_id)"
                    " JOIN domains d USING (domain_id) WHERE jc.job_id = ANY(:j) ORDER BY 1"
                ),
                {"j": today},
            )
            .scalars()
            .all()
        )
    assert domains == ["a.test", "b.test", "c.test"]
