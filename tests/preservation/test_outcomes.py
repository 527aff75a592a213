"""The outcome a preservation task returns is an enum member (read back by the DAG and CLI),
and serialises as the same string as before."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from harvestflow.settings import Settings
from preservation.outcomes import Outcome, outcome_of
from preservation.staging import stage_package


def test_stage_and_ingest_results_carry_an_outcome(
    pres_settings: Settings, make_job, db_engine: sa.Engine
) -> None:  # type: ignore[no-untyped-def]
    from preservation.ingest import ingest_job

    job = make_job()
    staged = stage_package(job.job_id, pres_settings)
    assert staged["status"] is Outcome.STAGED
    result = ingest_job(job.job_id, pres_settings)
    assert result["status"] is Outcome.PRESERVED and not outcome_of(result).failed
    # already preserved: the stored package status comes back as the same member
    assert ingest_job(job.job_id, pres_settings)["status"] is Outcome.PRESERVED
    # what the CLI prints and Airflow keeps as XCom: the string it always was
    assert json.loads(json.dumps({"status": result["status"]})) == {"status": "preserved"}


def test_an_unknown_outcome_is_named() -> None:
    assert outcome_of({"job_id": 3, "status": "manual"}).failed
    with pytest.raises(ValueError, match=r"job 3: unknown preservation outcome 'maual'"):
        outcome_of({"job_id": 3, "status": "maual"})
