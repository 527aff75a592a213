"""``app.runtime.dagrun.run_dag`` and the demo's ``run_steps`` judge a run by its state *and* by
each task's state, and name what failed: small probe DAGs run with ``dag.test()`` on the
session's real Airflow metadata database (in a subprocess: Airflow's environment is global)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harvestflow.settings import Settings

pytestmark = [pytest.mark.airflow]

PROBES = {
    # a teardown fails: Airflow calls the run a success (teardowns do not count by default)
    "probe_teardown_fails": """
from datetime import datetime
from airflow.sdk import DAG, task

with DAG("probe_teardown_fails", schedule=None, start_date=datetime(2026, 1, 1)) as dag:
    @task
    def setup_step() -> int:
        return 1

    @task
    def work(n: int) -> int:
        return n

    @task
    def cleanup(n: int) -> None:
        raise RuntimeError("cleanup could not write its report")

    s = setup_step()
    work(s) >> cleanup(s).as_teardown(setups=s)
""",
    # one of three mapped work tasks fails: the run is failed, the others and the teardown ran
    "probe_work_fails": """
from datetime import datetime
from airflow.sdk import DAG, task

with DAG("probe_work_fails", schedule=None, start_date=datetime(2026, 1, 1)) as dag:
    @task
    def items() -> list[int]:
        return [1, 2, 3]

    @task
    def work(n: int) -> int:
        if n == 2:
            raise RuntimeError("item 2 is broken")
        return n

    @task
    def report(results: list[int]) -> int:
        return len([r for r in results if r])

    found = items()
    report(work.expand(n=found)).as_teardown(setups=found)
""",
    "probe_ok": """
from datetime import datetime
from airflow.sdk import DAG, task

with DAG("probe_ok", schedule=None, start_date=datetime(2026, 1, 1)) as dag:
    @task
    def items() -> list[int]:
        return []

    @task
    def work(n: int) -> int:
        return n

    @task(trigger_rule="none_failed")
    def report() -> None:
        pass

    work.expand(n=items()) >> report()
""",
}

SCRIPT = """
import json, os, sys
from pathlib import Path
from app.runtime import dagrun
from harvestflow.settings import get_settings

dagrun.activate(get_settings())
dagrun.DAGS_DIR = Path(sys.argv[1])  # dag.test() syncs the DAGs folder's bundle: the probes'
os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = sys.argv[1]
mode, dag_ids = sys.argv[2], sys.argv[3:]
if mode == "run_dag":
    try:
        print(json.dumps({"returned": dagrun.run_dag(dag_ids[0])}))
    except dagrun.DagRunFailed as failed:
        print(json.dumps({"raised": str(failed)}))
else:
    from app.demo.run import run_steps
    sys.exit(run_steps([(d, {}) for d in dag_ids], Path(sys.argv[1]) / "airflow.log"))
"""


@pytest.fixture(scope="module")
def probes(airflow_ready: Settings, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("probe-dags")
    for dag_id, text in PROBES.items():
        (folder / f"{dag_id}.py").write_text(text)
    return folder


def run(probes: Path, mode: str, *dag_ids: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, str(probes), mode, *dag_ids],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_run_dag_fails_a_run_whose_teardown_failed(probes: Path) -> None:
    proc = run(probes, "run_dag", "probe_teardown_fails")
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result == {
        "raised": "DAG probe_teardown_fails ended success; tasks not successful: cleanup failed"
    }


def test_run_dag_names_the_failed_mapped_task(probes: Path) -> None:
    proc = run(probes, "run_dag", "probe_work_fails")
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result == {
        "raised": "DAG probe_work_fails ended failed; tasks not successful: work[1] failed"
    }


def test_demo_steps_print_every_task_and_stop_at_the_first_failure(probes: Path) -> None:
    ok = run(probes, "steps", "probe_ok")
    assert ok.returncode == 0, ok.stdout[-3000:] + ok.stderr[-3000:]
    assert "[demo]   probe_ok: success (3 task instances)" in ok.stdout
    for line in ("task items: success", "task work: skipped", "task report: success"):
        assert f"[demo]     {line}\n" in ok.stdout

    bad = run(probes, "steps", "probe_work_fails", "probe_ok")
    assert bad.returncode == 1, bad.stdout[-3000:] + bad.stderr[-3000:]
    assert "[demo]   probe_work_fails: FAILED (run failed)" in bad.stdout
    for line in ("work[0]: success", "work[1]: failed", "work[2]: success", "report: success"):
        assert f"[demo]     task {line}\n" in bad.stdout
    assert "tasks not successful: work[1] failed" in bad.stderr
    assert "running DAG probe_ok" not in bad.stdout  # the later DAGs take this one's output
