"""A watched target harvested through the DAGs (`airflow dags test`, dag.test()): the monthly
selective harvest crawls it, the indexing chain takes the harvest through its document tasks;
after the runs the documents table holds the site's documents, none available while no access
service replays them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlalchemy as sa

from harvestflow.settings import Settings
from indexing.documents import store
from tests.support.chainkit import wipe_chain_dirs
from tests.support.docfixtures import register_watched_site
from tests.support.publications_site import HOST, serve
from tests.support.runstates import dags_test, dags_test_at, last_run

pytestmark = [pytest.mark.airflow, pytest.mark.slow]


def test_a_watched_targets_harvest_through_the_dags_lists_its_documents(
    airflow_ready: Settings, db_engine: sa.Engine
) -> None:
    wipe_chain_dirs(airflow_ready.data_dir)
    with serve() as site:
        harvest_id = register_watched_site(db_engine, site, airflow_ready.data_dir)
        with db_engine.begin() as conn:  # on loopback: the profile that allows it, the name here
            conn.execute(
                sa.text(
                    "UPDATE configurations SET template_id ="
                    " (SELECT template_id FROM templates WHERE name = 'demo_loopback')"
                    " WHERE config_id IN"
                    " (SELECT config_id FROM harvest_configs WHERE harvest_id = :h)"
                ),
                {"h": harvest_id},
            )
            conn.execute(
                sa.text("UPDATE harvestdefinitions SET resolve = CAST(:r AS jsonb)"
                        " WHERE harvest_id = :h"),
                {"h": harvest_id, "r": json.dumps({HOST: "127.0.0.1"})},
            )  # fmt: skip
        harvest = dags_test_at("selective_harvest_monthly", "2026-11-06")
        assert harvest.returncode == 0, harvest.stdout[-3000:] + harvest.stderr[-3000:]
    crawled = last_run(airflow_ready, "selective_harvest_monthly")
    assert crawled.state == "success"
    assert crawled.tasks["harvest_job.crawl[0]"] == "success"
    with db_engine.connect() as conn:
        status = conn.execute(
            sa.text("SELECT status FROM jobs WHERE harvest_id = :h"), {"h": harvest_id}
        ).scalar_one()
    assert status == 3  # done: the chain takes the job's WARCs in
    proc = dags_test(
        "indexing_chain",
        HARVESTFLOW_INDEXING__MIN_FREE_BYTES="0",
        HARVESTFLOW_ACCESS__URL="http://127.0.0.1:9/",  # no replay service answers there
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = last_run(airflow_ready, "indexing_chain")
    assert run.state == "success"
    assert run.tasks["check_documents"] == "success"
    assert any(k.startswith("extract_documents") for k in run.named)
    with db_engine.connect() as conn:
        docs = {Path(d["url"]).name: d for d in store.list_documents(conn)}
    assert sorted(docs) == [
        "annual-report-2025.pdf",
        "guide.docx",
        "notes.pdf",
        "strategy-annex.pdf",
        "strategy.pdf",
    ]
    assert len(docs["annual-report-2025.pdf"]["captures"]) == 2
    assert docs["notes.pdf"]["broken"]
    assert {(d["state"], d["check_detail"]) for d in docs.values()} == {
        ("new", "the access service did not answer")
    }
