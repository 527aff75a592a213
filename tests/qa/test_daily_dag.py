"""The daily_qa_stats DAG itself (`airflow dags test`, i.e. dag.test(), on the session's real
PostgreSQL): three logical dates give three reports, the task log ends with the curator's
summary, a re-run of a date gives the same files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from .conftest import DAYS, seed_qa_db, tree_files

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

HARVESTFLOW = str(Path(sys.executable).parent / "harvestflow")


def _dags_test(*args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    proc = subprocess.run(
        [HARVESTFLOW, "airflow", "dags", "test", "daily_qa_stats", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    return out


def _task_lines(out: str) -> list[str]:
    """The messages the task itself logged (logger airflow.task), in order."""
    found = []
    for line in out.splitlines():
        if "[airflow.task]" in line:
            message = line.split("] ", 1)[1] if "] " in line else line
            found.append(message.split(" [airflow.task]", 1)[0].rstrip())
    return found


def test_dag_runs_of_three_dates_give_three_reports_and_a_summary(  # type: ignore[no-untyped-def]
    airflow_ready, db_engine, tmp_path: Path
) -> None:
    seed_qa_db(db_engine, tmp_path)
    dirs = [airflow_ready.path("qa", d.isoformat()) for d in DAYS]
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)
    # a run stands for the day before its logical date (a @daily run at midnight reports on
    # the day that just ended), so runs of 21-23 November report on 20-22 November
    outs = [_dags_test((day + timedelta(days=1)).isoformat()) for day in DAYS]
    assert all((d / "index.html").is_file() for d in dirs)
    expected = [
        ("QA 2026-11-20: 1 jobs, 9 URLs", "all crawl logs read without errors"),
        ("QA 2026-11-21: 1 jobs, 5 URLs", "2 of 7 lines unreadable, skipped; first at line 6"),
        ("QA 2026-11-22: 2 jobs, 9 URLs", "crawl log missing"),
    ]
    for out, d, (head, problem) in zip(outs, dirs, expected, strict=True):
        task = _task_lines(out)
        # the task's own log ends with the curator's summary: headline first, report last
        start = next(i for i, m in enumerate(task) if m.strip().startswith(head))
        summary = "\n".join(task[start:])
        assert problem in summary, summary
        assert task[-1].strip() == f"report: {d}/index.html", summary
        assert "MIME families: text" in summary and "top TLDs: ." in summary
        # nothing after it but Airflow's own bookkeeping (the returned dict is not logged)
        after = out[out.index(task[-1].strip()) :]
        assert "Returned value was" not in after and "[qa." not in after
    assert "demo-daily run 2 vs run 1: grew 1, shrank 0, newly failed 0, hit limits 1" in outs[2]

    # re-running a day through the trigger form's "day" param rewrites the same files
    first = tree_files(dirs[2])
    _dags_test("-c", json.dumps({"day": DAYS[2].isoformat()}))
    assert tree_files(dirs[2]) == first
