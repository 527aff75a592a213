"""``app.runtime.dagrun.run_dag`` and the demo's ``run_steps`` judge a run by its state *and* by
each task's state, and name what failed: small probe DAGs run with ``dag.test()`` on the
session's real Airflow metadata database (in one subprocess for all: Airflow's environment is
global)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass

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

# Each call of the probes, in one process: (name, mode, DAG ids). Why one process for all: each
# Python process pays for Airflow's import and its in-process execution API (seconds of CPU)
# before its first dag.test(); the demo itself runs its DAGs one after the other in one process
# (app.demo.run.run_steps), and each call here is still its own run(s) of its own DAG(s).
CALLS = [
    ("teardown_fails", "run_dag", ["probe_teardown_fails"]),
    ("work_fails", "run_dag", ["probe_work_fails"]),
    ("steps_ok", "steps", ["probe_ok"]),
    ("steps_bad", "steps", ["probe_work_fails", "probe_ok"]),
]
MARK = "=== probe call {} ended: {} ==="  # on stdout and stderr after each call: its output ends

SCRIPT = """
import json, os, sys
from pathlib import Path
from app.runtime import dagrun
from harvestflow.settings import get_settings

dagrun.activate(get_settings())
dagrun.DAGS_DIR = Path(sys.argv[1])  # dag.test() syncs the DAGs folder's bundle: the probes'
os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = sys.argv[1]
calls, mark = json.loads(sys.argv[2]), sys.argv[3]
for name, mode, dag_ids in calls:
    if mode == "run_dag":
        try:
            print(json.dumps({"returned": dagrun.run_dag(dag_ids[0])}))
        except dagrun.DagRunFailed as failed:
            print(json.dumps({"raised": str(failed)}))
        code = 0
    else:
        from app.demo.run import run_steps
        code = run_steps([(d, {}) for d in dag_ids], Path(sys.argv[1]) / "airflow.log")
    for stream in (sys.stdout, sys.stderr):
        print(mark.format(name, code), file=stream, flush=True)
"""


@dataclass
class Call:
    """One call's exit status (``run_steps``' return, 0 for ``run_dag``) and output."""

    code: int
    stdout: str
    stderr: str


@pytest.fixture(scope="module")
def probes(airflow_ready: Settings, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Call]:
    """Every call of :data:`CALLS` on the probe DAGs, run in one subprocess (Airflow's
    environment is global); {name: its exit status and output}."""
    folder = tmp_path_factory.mktemp("probe-dags")
    for dag_id, text in PROBES.items():
        (folder / f"{dag_id}.py").write_text(text)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(folder), json.dumps(CALLS), MARK],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    calls: dict[str, Call] = {}
    out, err = proc.stdout, proc.stderr
    for name, _, _ in CALLS:
        ended = MARK.format(name, "").removesuffix(" ===")  # then the exit status, " ===\n"
        out_part, _, out = out.partition(ended)
        err_part, _, err = err.partition(ended)
        code, _, out = out.partition(" ===\n")
        _, _, err = err.partition(" ===\n")
        assert code.isdigit(), f"probe call {name} did not end: {out_part[-3000:]}"
        calls[name] = Call(int(code), out_part, err_part)
    return calls


def test_run_dag_fails_a_run_whose_teardown_failed(probes: dict[str, Call]) -> None:
    result = json.loads(probes["teardown_fails"].stdout.strip().splitlines()[-1])
    assert result == {
        "raised": "DAG probe_teardown_fails ended success; tasks not successful: cleanup failed"
    }


def test_run_dag_names_the_failed_mapped_task(probes: dict[str, Call]) -> None:
    result = json.loads(probes["work_fails"].stdout.strip().splitlines()[-1])
    assert result == {
        "raised": "DAG probe_work_fails ended failed; tasks not successful: work[1] failed"
    }


def test_demo_steps_print_every_task_and_stop_at_the_first_failure(
    probes: dict[str, Call],
) -> None:
    ok = probes["steps_ok"]
    assert ok.code == 0, ok.stdout[-3000:] + ok.stderr[-3000:]
    assert "[demo]   probe_ok: success (3 task instances)" in ok.stdout
    for line in ("task items: success", "task work: skipped", "task report: success"):
        assert f"[demo]     {line}\n" in ok.stdout

    bad = probes["steps_bad"]
    assert bad.code == 1, bad.stdout[-3000:] + bad.stderr[-3000:]
    assert "[demo]   probe_work_fails: FAILED (run failed)" in bad.stdout
    for line in ("work[0]: success", "work[1]: failed", "work[2]: success", "report: success"):
        assert f"[demo]     task {line}\n" in bad.stdout
    assert "tasks not successful: work[1] failed" in bad.stderr
    assert "running DAG probe_ok" not in bad.stdout  # the later DAGs take this one's output
