"""A watched target harvested, then taken by the indexing chain DAG (`airflow dags test`,
dag.test()) through its document tasks: after the run the documents table holds the site's
documents, none available while no access service replays them.

The harvest is the selective harvest DAG's tasks' own functions (harvest.pipeline: due at the
monthly run's date, job generated, prepared, crawled, recorded) called here; the selective DAGs'
runs are tested in test_harvest_workflows.py.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from harvest import pipeline as p
from harvestflow.settings import Settings
from indexing.documents import store
from indexing.pipeline import dedup_index_for_job
from tests.support.chainkit import wipe_chain_dirs
from tests.support.docfixtures import register_watched_site
from tests.support.publications_site import HOST, serve
from tests.support.runstates import DagTests, last_run

pytestmark = [pytest.mark.airflow, pytest.mark.slow]


def test_a_watched_targets_harvest_through_the_dags_lists_its_documents(
    airflow_ready: Settings, airflow_runs: DagTests, db_engine: sa.Engine
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
        # the monthly run of 6 November finds the target's definition due and crawls it
        when = datetime(2026, 11, 6, tzinfo=UTC)
        assert p.due_definitions("monthly", when) == [harvest_id]
        (job_id,) = p.generate_due_jobs([harvest_id], when)["jobs"]
        spec = p.prepare_job(job_id, airflow_ready.data_dir, dedup_index=dedup_index_for_job)
        p.crawl_prepared_job(job_id, spec)
        p.record_job_results(job_id)
    with db_engine.connect() as conn:
        status = conn.execute(
            sa.text("SELECT status FROM jobs WHERE harvest_id = :h"), {"h": harvest_id}
        ).scalar_one()
    assert status == 3  # done: the chain takes the job's WARCs in
    proc = airflow_runs.run(
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
