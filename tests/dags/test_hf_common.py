"""The DAGs whose work is what the platform did since their last run (the daily index merge and
QA figures, the hourly indexing chain) do not run at once for their latest past time when first
unpaused on a new platform: that run would work on the day before the platform existed. Their
first scheduled run is their next time (``dag_args(start=None)``, dags/hf_common.py); once
they have run, a time missed while the platform was stopped is still run when it comes back.
Checked on the DAGs as the scheduler holds them (serialized), with Airflow's own timetables."""

from __future__ import annotations

import importlib.util
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from harvestflow.settings import PROJECT_ROOT

DAGS = PROJECT_ROOT / "dags"
FIRST_AT_NEXT_TIME = ("indexing_merge", "daily_qa_stats", "indexing_chain")


def scheduled(dag_id: str) -> Any:
    """``dags/<dag_id>.py``'s DAG, serialized and read back as the scheduler reads it."""
    from airflow.serialization.serialized_objects import DagSerialization

    if str(DAGS) not in sys.path:
        sys.path.insert(0, str(DAGS))
    spec = importlib.util.spec_from_file_location(f"firstrun_{dag_id}", DAGS / f"{dag_id}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return DagSerialization.from_dict(DagSerialization.to_dict(module.dag))


def at(monkeypatch: pytest.MonkeyPatch, now: datetime) -> None:
    """Airflow's cron timetables see ``now`` as the time (they read it once per call)."""
    import pendulum
    from airflow.timetables import trigger

    monkeypatch.setattr(trigger, "utcnow", lambda: pendulum.instance(now))


# when the platform first starts: a minute after a time of each DAG (midnight, an hour), where
# Airflow's default would still run that time; and at the middle of an hour
MOMENTS = {"just_after_midnight": (0, 1), "mid_morning": (10, 30)}


@pytest.mark.parametrize("moment", MOMENTS)
@pytest.mark.parametrize("dag_id", FIRST_AT_NEXT_TIME)
def test_a_new_platforms_first_scheduled_run_is_the_next_time_not_a_past_one(
    dag_id: str, moment: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    hour, minute = MOMENTS[moment]
    now = datetime(2026, 11, 30, hour, minute, tzinfo=UTC)
    at(monkeypatch, now)
    first = scheduled(dag_id).next_dagrun_info(last_automated_run_info=None)
    assert first is not None
    assert first.run_after > now, first


@pytest.mark.parametrize("dag_id", FIRST_AT_NEXT_TIME)
def test_a_time_missed_while_stopped_is_run_when_the_platform_is_back(
    dag_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pendulum
    from airflow.timetables.base import DagRunInfo

    now = datetime(2026, 11, 30, 10, 30, tzinfo=UTC)
    at(monkeypatch, now)
    # its last run two days before: the platform was stopped over at least one of its times
    last_time = pendulum.instance(now - timedelta(days=2))
    due = scheduled(dag_id).next_dagrun_info(
        last_automated_run_info=DagRunInfo.interval(last_time, last_time)
    )
    assert due is not None
    assert last_time < due.run_after <= now, due  # the latest past time, at once
