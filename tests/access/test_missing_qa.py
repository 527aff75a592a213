"""The URLs a job's QA pass left missing join the job's missing-URL list (the one the curator's
job page shows and the patch harvest takes) when the job's replay view is made, once: a later
sync adds no hit, a curator's browsing does."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from access import jobviews, missing
from access.config import AccessConfig
from harvestflow import settings as settings_mod
from tests.support.qa_jobs import seed_qa_jobs

pytestmark = pytest.mark.services


def test_a_new_job_view_lists_what_the_qa_pass_left_missing(
    db_engine: sa.Engine, access_settings: settings_mod.Settings, tmp_path: Path
) -> None:
    seeded = seed_qa_jobs(db_engine, tmp_path / "jobs")
    job2 = seeded["jobs"][2]
    cdxj = tmp_path / "idx" / f"{job2}-1.cdxj"
    cdxj.parent.mkdir()
    cdxj.write_text("")
    cfg = AccessConfig.from_settings(access_settings)
    for _ in range(2):  # the publisher syncs the views again and again
        jobviews.sync(cfg, db_engine, [(job2, cdxj.name, cdxj)])
    with db_engine.connect() as conn:
        listed = {(m.url, m.embed, m.hits) for m in missing.for_job(conn, job2)}
    assert listed == {
        ("http://qa.test/a.htmlmissing.png", True, 1),
        ("http://www.qa.test/missing.png", True, 1),
    }
    miss = missing.Miss(job2, "http://qa.test/a.htmlmissing.png", True)
    assert missing.record(db_engine, miss)  # a curator's browsing counts on top
    with db_engine.connect() as conn:
        assert max(m.hits for m in missing.for_job(conn, job2)) == 2
