"""What decides a harvestflow DAG run's state, read from the parsed DAGs with Airflow's own rule.

Airflow marks a run failed when a task it counts for the run state failed (``DagRun.
_tis_for_dagrun_state``: the leaves, teardowns left out unless ``on_failure_fail_dagrun``).
Each harvest DAG must count its work tasks (crawl, index/transfer, preservation ingest), so a
failed one makes the run red, and keep its bookkeeping as teardowns, so it still runs after a
failure. The end-to-end proof is in test_harvest_workflows.py / test_failing_runs.py; this one
needs no database and names the DAG and task that break the rule.
"""

from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from harvestflow.settings import PROJECT_ROOT

DAGS = PROJECT_ROOT / "dags"

# DAG → (work tasks whose failure must fail the run, the bookkeeping teardown that ends the run,
# whether that teardown's own failure fails the run). It cannot where it directly follows the
# work tasks: Airflow counts a task only when no counted task follows it, so a counted teardown
# there would hide the work tasks' failures (the worse loss); its failure shows on the task.
RULES: dict[str, tuple[set[str], str, bool]] = {
    "selective_harvest_daily": ({"harvest_job.crawl"}, "advance_schedules", True),
    "oneoff_harvest": ({"harvest_job.crawl"}, "advance", True),
    "broad_crawl": ({"step1_job.crawl", "step2_job.crawl"}, "done", True),
    "harvest_maintenance": ({"high_priority_job.crawl", "low_priority_job.crawl"}, "done", True),
    # process_file's failure reaches the run through text_pending → extract_text (all_success)
    "indexing_chain": ({"extract_text"}, "chain_done", False),
    "preservation_ingest": ({"ingest_job"}, "report", False),
}


def _load(path: Path) -> Any:
    if str(DAGS) not in sys.path:
        sys.path.insert(0, str(DAGS))
    spec = importlib.util.spec_from_file_location(f"runstate_{path.stem}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.dag


class _TI(NamedTuple):
    task_id: str
    state: None = None


def counted_tasks(dag: Any) -> set[str]:
    """The task ids Airflow's scheduler looks at to decide the run's final state."""
    from airflow.models.dagrun import DagRun

    tis = [_TI(t) for t in dag.task_ids]
    return {ti.task_id for ti in DagRun._tis_for_dagrun_state(None, dag=dag, tis=tis)}  # type: ignore[arg-type]


@pytest.mark.parametrize("dag_id", list(RULES))
def test_a_failed_work_task_fails_the_run_and_bookkeeping_still_runs(dag_id: str) -> None:
    dag = _load(DAGS / f"{dag_id}.py")
    work, final, final_counts = RULES[dag_id]
    counted = counted_tasks(dag)
    assert work <= counted, f"{dag_id}: a failure of {sorted(work - counted)} leaves the run green"
    task = dag.get_task(final)
    # a teardown runs once its upstream is done, whatever the outcome (its setup succeeded)
    assert task.is_teardown and task.trigger_rule == "all_done_setup_success", final
    assert task.on_failure_fail_dagrun == final_counts
    assert (final in counted) == final_counts
    for task_id in dag.task_ids:
        if task_id.endswith(".record"):  # per-job history after a failed crawl too
            assert dag.get_task(task_id).is_teardown, task_id


@pytest.mark.parametrize("dag_id", ["selective_harvest_daily", "oneoff_harvest"])
def test_the_harvest_done_asset_waits_for_every_job_record(dag_id: str) -> None:
    """HARVEST_DONE wakes indexing, which takes DONE jobs: it must follow the records."""
    dag = _load(DAGS / f"{dag_id}.py")
    final = RULES[dag_id][1]
    assert "harvest_job.record" in dag.get_task(final).upstream_task_ids
    assert [a.uri for a in dag.get_task(final).outlets] == ["x-harvestflow://harvest/jobs-done"]


def test_a_failed_continuous_crawl_fails_the_run_through_its_hand_off() -> None:
    """continuous_crawl keeps ``report`` as an all_done leaf (its own failure counts): the
    crawl is not a leaf, but its failure reaches the counted ``handed_off`` as upstream_failed
    through all_success tasks only."""
    dag = _load(DAGS / "continuous_crawl.py")
    assert counted_tasks(dag) == {"report", "handed_off"}
    assert dag.get_task("report").trigger_rule == "all_done"
    path = ["crawl", "wrote_warcs", "handed_off"]
    for up, down in itertools.pairwise(path):
        assert dag.get_task(down).upstream_task_ids == {up}
        assert dag.get_task(down).trigger_rule == "all_success"
