"""The five selective-harvest DAGs as parsed: schedules, the crawl channel's pool and queue from
the settings, the Asset that wakes indexing, the trigger form (no database needed)."""

from __future__ import annotations

import importlib.util
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

from harvestflow.settings import DEFAULT_CONFIG, PROJECT_ROOT, SettingsError

DAGS = PROJECT_ROOT / "dags"
SCHEDULES = {
    "daily": "@daily",
    "weekly": "@weekly",
    "monthly": "@monthly",
    "semiannual": "0 0 1 1,7 *",
    "annual": "@yearly",
}


def _load(path: Path) -> ModuleType:
    if str(DAGS) not in sys.path:
        sys.path.insert(0, str(DAGS))
    spec = importlib.util.spec_from_file_location(f"seltest_{path.stem}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("frequency", list(SCHEDULES))
def test_selective_dag_shape(frequency: str) -> None:
    dag = _load(DAGS / f"selective_harvest_{frequency}.py").dag
    configured = tomllib.loads(DEFAULT_CONFIG.read_text())["airflow"]["high_priority_pool"]
    assert dag.dag_id == f"selective_harvest_{frequency}"
    assert dag.schedule == SCHEDULES[frequency]
    assert dag.max_active_runs == 1
    tasks = dag.task_dict
    assert set(tasks) >= {
        "transfer_selection",
        "due_definitions",
        "generate_due_jobs_for",
        "harvest_job.prepare",
        "harvest_job.crawl",
        "harvest_job.record",
        "advance_schedules",
    }
    crawl = tasks["harvest_job.crawl"]
    assert (crawl.pool, crawl.queue) == (configured, configured)
    # history is recorded and the schedule advanced even when a crawl failed: teardowns
    # (whose failed crawl still fails the run: tests/dags/test_run_state_rules.py)
    assert tasks["harvest_job.record"].is_teardown
    # a job on a snapshot channel crawls on the low-priority pool and queue, whatever the DAG
    low = tomllib.loads(DEFAULT_CONFIG.read_text())["airflow"]["low_priority_pool"]
    other = tasks[f"harvest_job_on_{low}.crawl"]
    assert (other.pool, other.queue) == (low, low)
    assert "harvest_job.prepare" in tasks["harvest_job_route"].downstream_task_ids
    assert (
        f"harvest_job_on_{low}.prepare" in tasks[f"harvest_job_on_{low}_route"].downstream_task_ids
    )
    advance = tasks["advance_schedules"]
    assert advance.is_teardown and advance.trigger_rule == "all_done_setup_success"
    assert [a.uri for a in advance.outlets] == ["x-harvestflow://harvest/jobs-done"]
    assert tasks["transfer_selection"].downstream_task_ids == {"due_definitions"}
    assert "harvest_id" in dag.params


def test_crawl_pools_follow_the_settings_file_and_its_overrides(tmp_path: Path) -> None:
    hf_common = _load(DAGS / "hf_common.py")
    assert hf_common.crawl_pools({}) == ("crawl_high", "crawl_low")  # the shipped settings
    config = tmp_path / "hf.toml"
    config.write_text('[airflow]\nhigh_priority_pool = "selective"\nlow_priority_pool = "broad"\n')
    assert hf_common.crawl_pools({"HARVESTFLOW_CONFIG": str(config)}) == ("selective", "broad")
    env = {"HARVESTFLOW_CONFIG": str(config), "HARVESTFLOW_AIRFLOW__LOW_PRIORITY_POOL": "snap"}
    assert hf_common.crawl_pools(env) == ("selective", "snap")
    missing = {"HARVESTFLOW_CONFIG": str(tmp_path / "none.toml")}
    with pytest.raises(SettingsError, match=r"none\.toml"):
        hf_common.crawl_pools(missing)
