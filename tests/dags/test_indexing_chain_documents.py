"""The indexing chain DAG (`airflow dags test`, dag.test()) takes a watched target's harvest
through its document tasks (#35): after the run the documents table holds the site's
documents, none available while no access service replays them."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from harvestflow.settings import Settings
from indexing.documents import store
from tests.support.chainkit import wipe_chain_dirs
from tests.support.docfixtures import harvest_watched_site
from tests.support.publications_site import serve
from tests.support.runstates import dags_test, last_run

pytestmark = [pytest.mark.airflow, pytest.mark.slow]


def test_indexing_chain_run_extracts_a_watched_targets_documents(
    airflow_ready: Settings, db_engine: sa.Engine
) -> None:
    wipe_chain_dirs(airflow_ready.data_dir)
    with serve() as site:
        job_id, _ = harvest_watched_site(db_engine, site, airflow_ready.data_dir)
    with db_engine.begin() as conn:  # the crawl ended: the chain takes the job's WARCs in
        conn.execute(sa.text("UPDATE jobs SET status = 3 WHERE job_id = :j"), {"j": job_id})
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
