"""The missing URLs of a job's replay view and the patch harvests sent for them, on the real
harvest database: which gateway answers count as a miss, one row per (job, URL) with its count
and first/last seen, a patch harvest made from them (one-off definition with the job's
template and host resolution, the URLs recorded as sent), and its jobs counted as the patched
definition's."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

import pytest
import sqlalchemy as sa

from access import missing
from access.config import AccessConfig
from access.definitions import collections_root
from access.gateway import Gateway
from access.patches import PatchError, request_patch
from harvest.bootstrap import ensure_reference_data
from harvestflow import settings as settings_mod
from tests.support.chainkit import make_harvest

pytestmark = pytest.mark.services

IMG = "http://www.qc.test:8123/img/late.png?v=2"


def db_job(engine: sa.Engine, name: str = "qc", template: str = "demo_loopback") -> tuple[int, int]:
    """A DONE job of a selective definition (its template a known one)."""
    ensure_reference_data(engine)
    hid = make_harvest(engine, name)
    with engine.begin() as conn:
        job_id = int(
            conn.execute(
                sa.text(
                    "INSERT INTO jobs (harvest_id, harvest_num, job_index, status, channel,"
                    " template_name, template, seedlist, resolve) VALUES (:h, 1, 0, 3, 'CIBLEE',"
                    " :t, CAST('{}' AS jsonb), 'http://www.qc.test:8123/',"
                    ' CAST(\'{"www.qc.test": "127.0.0.1"}\' AS jsonb)) RETURNING job_id'
                ),
                {"h": hid, "t": template},
            ).scalar_one()
        )
    return hid, job_id


def test_which_paths_are_a_jobs_misses() -> None:
    assert missing.parse(f"/job-12/20261125120000im_/{IMG}") == missing.Miss(12, IMG, True)
    assert missing.parse("/job-12/2026js_/http://a.test/s.js") == missing.Miss(
        12, "http://a.test/s.js", True
    )
    assert missing.parse("/job-3/20261125cs_/http://a.test/x.css") == missing.Miss(
        3, "http://a.test/x.css", True
    )
    # pages and links: in the frame (mp_) or followed directly
    assert missing.parse("/job-3/20261125mp_/https://a.test/p?q=1") == missing.Miss(
        3, "https://a.test/p?q=1", False
    )
    assert missing.parse("/job-3/20261125/http://a.test/") == missing.Miss(
        3, "http://a.test/", False
    )
    for other in (
        "/all/20261125im_/http://a.test/i.png",  # not a job's view
        "/harvest-4/2026/http://a.test/",
        "/job-3/*/http://a.test/",  # a calendar query, not a capture
        "/job-3/2026im_/mailto:x@a.test",
        "/job-x/2026/http://a.test/",
        "/search/?q=job-3",
    ):
        assert missing.parse(other) is None, other


def test_gateway_records_pywbs_not_found_not_an_archived_404(
    access_settings: settings_mod.Settings,
) -> None:
    seen: list[missing.Miss] = []
    cfg = AccessConfig.from_settings(access_settings)
    gw = Gateway(cfg, list, login=lambda t: False, missing=seen.append)
    path = f"/job-5/20261125120000im_/{IMG}"
    gw.not_found(404, {}, path)  # job 5 has no view yet: pywb's "no such collection"
    assert seen == []
    (collections_root(cfg) / "job-5" / "indexes").mkdir(parents=True)
    gw.not_found(404, {"Memento-Datetime": "Wed, 25 Nov 2026 12:00:00 GMT"}, path)  # a capture
    gw.not_found(200, {}, path)
    gw.not_found(404, {}, "/all/2026im_/http://a.test/x.png")
    assert seen == []
    gw.not_found(404, {}, path)
    assert seen == [missing.Miss(5, IMG, True)]

    def broken(miss: missing.Miss) -> None:
        raise sa.exc.OperationalError("INSERT", {}, Exception("database gone"))

    Gateway(cfg, list, login=lambda t: False, missing=broken).not_found(
        404, {}, path
    )  # logged, never raised into the replay


def test_a_miss_is_one_row_per_job_and_url_with_its_count(db_engine: sa.Engine) -> None:
    _hid, job = db_job(db_engine)
    _hid2, other = db_job(db_engine, "other")
    assert missing.record(db_engine, missing.Miss(job, IMG, False))
    with db_engine.connect() as conn:
        [first] = missing.for_job(conn, job)
    time.sleep(0.05)
    for _ in range(2):
        assert missing.record(db_engine, missing.Miss(job, IMG, True))
    assert missing.record(db_engine, missing.Miss(job, "http://www.qc.test:8123/gone", False))
    assert missing.record(db_engine, missing.Miss(other, IMG, True))
    assert not missing.record(db_engine, missing.Miss(999_999, IMG, True))  # no such job
    with db_engine.connect() as conn:
        rows = missing.for_job(conn, job)
        theirs = missing.for_job(conn, other)
        unknown = missing.for_job(conn, 999_999)
    assert [(m.url, m.embed, m.hits) for m in rows] == [
        (IMG, True, 3),  # an embed once is an embed
        ("http://www.qc.test:8123/gone", False, 1),
    ]
    assert rows[0].first_seen == first.first_seen < rows[0].last_seen
    assert [(m.url, m.hits) for m in theirs] == [(IMG, 1)] and unknown == []


def test_a_patch_harvest_of_missing_urls(db_engine: sa.Engine) -> None:
    hid, job = db_job(db_engine)
    other_url = "http://static.qc.test:8123/s.css"
    for url in (IMG, other_url, "http://www.qc.test:8123/later"):
        missing.record(db_engine, missing.Miss(job, url, True))
    calls: list[tuple[Any, ...]] = []

    def trigger(dag_id: str, conf: dict[str, Any], run_id: str, when: datetime) -> str:
        calls.append((dag_id, conf, run_id, when))
        return run_id

    with pytest.raises(PatchError, match=r"not among its missing URLs: http://elsewhere\.test/"):
        request_patch(db_engine, job, "curator", trigger, urls=[IMG, "http://elsewhere.test/"])
    patch = request_patch(db_engine, job, "curator", trigger, urls=[IMG, other_url])
    assert calls == [
        ("oneoff_harvest", {"harvest_id": patch.harvest_id}, patch.run_id, patch.logical_date)
    ]
    assert patch.harvest_id != hid and patch.dag_run_id == patch.run_id
    with db_engine.connect() as conn:
        seeds = conn.execute(
            sa.text(
                "SELECT d.name, s.seeds, t.name, h.resolve FROM harvest_configs hc"
                " JOIN configurations c USING (config_id) JOIN templates t USING (template_id)"
                " JOIN config_seedlists cs USING (config_id) JOIN seedlists s USING (seedlist_id)"
                " JOIN domains d ON d.domain_id = c.domain_id"
                " JOIN harvestdefinitions h ON h.harvest_id = hc.harvest_id"
                " WHERE hc.harvest_id = :h"
            ),
            {"h": patch.harvest_id},
        ).all()
        rows = {m.url: m.patch_id for m in missing.for_job(conn, job)}
        [sent] = missing.patches_of(conn, job)
        folded = missing.fold_patches(conn, {100: patch.harvest_id, 101: hid, 102: 77})
    # one configuration of the job's domain, the job's template and host resolution
    assert [(d, sorted(s.split()), t) for d, s, t, _r in seeds] == [
        ("qc.test", sorted([IMG, other_url]), "demo_loopback")
    ]
    assert seeds[0][3] == {"www.qc.test": "127.0.0.1"}
    assert rows == {
        IMG: patch.patch_id,
        other_url: patch.patch_id,
        "http://www.qc.test:8123/later": None,
    }
    assert (sent["harvest_id"], sent["urls"], sent["requested_by"]) == (
        patch.harvest_id,
        [IMG, other_url],
        "curator",
    )
    assert sent["dag_run_id"] == patch.run_id
    assert folded == {100: hid, 101: hid, 102: 77}  # the patch's jobs count as the job's definition

    # "all": those not sent yet; then nothing is left
    rest = request_patch(db_engine, job, "curator", None)
    assert rest.urls == ("http://www.qc.test:8123/later",) and rest.dag_run_id is None
    with pytest.raises(PatchError, match="no missing URL left"):
        request_patch(db_engine, job, "curator", trigger)
    with pytest.raises(PatchError, match="job 424242: no missing URL left"):
        request_patch(db_engine, 424242, "curator", trigger)


def test_the_cli_lists_a_jobs_missing_urls_and_sends_them(db_engine: sa.Engine) -> None:
    import json
    import subprocess
    import sys

    _hid, job = db_job(db_engine)
    missing.record(db_engine, missing.Miss(job, IMG, True))

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "app.cli.main", "qc", *args], capture_output=True, text=True
        )

    listed = cli("missing", str(job), "--json")
    assert listed.returncode == 0, listed.stderr
    [row] = json.loads(listed.stdout)["missing"]
    assert (row["url"], row["embed"], row["hits"], row["patch_id"]) == (IMG, True, 1, None)
    sent = cli("patch", str(job), "--no-trigger", "--user", "bob")
    assert sent.returncode == 0, sent.stderr
    assert f"patch 1 of job {job}: 1 URL(s)" in sent.stdout and "(not started)" in sent.stdout
    again = cli("patch", str(job), "--no-trigger")
    assert again.returncode == 1 and "no missing URL left" in again.stderr
    shown = cli("missing", str(job)).stdout
    assert IMG in shown and "patch 1 (definition" in shown
