"""The daily_qa_stats DAG itself (`airflow dags test`, i.e. dag.test(), on the session's real
PostgreSQL): a run reports on the day before its logical date, the task log ends with the
curator's summary, a re-run of the day through the "day" param gives the same files."""

from __future__ import annotations

import json
import shutil
from datetime import timedelta
from pathlib import Path

import pytest

from tests.support import runstates

from .conftest import DAYS, seed_qa_db, tree_files

pytestmark = [pytest.mark.airflow, pytest.mark.slow]


def _dags_test(airflow: runstates.DagTests, *args: str) -> str:
    proc = airflow.run("daily_qa_stats", *args)
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


def test_a_dag_run_reports_on_the_day_before_its_date_and_a_rerun_by_day_rewrites_it(  # type: ignore[no-untyped-def]
    airflow_ready, airflow_runs, db_engine, tmp_path: Path
) -> None:
    seed_qa_db(db_engine, tmp_path)
    dirs = [airflow_ready.path("qa", d.isoformat()) for d in DAYS]
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)
    # a run stands for the day before its logical date (a @daily run at midnight reports on
    # the day that just ended), so the run of 23 November reports on 22 November, and on no
    # other day (the summaries of every day are checked in test_daily_db.py)
    day, report = DAYS[2], dirs[2]
    # the second run after the test read the first one's files
    out = _dags_test(airflow_runs, (day + timedelta(days=1)).isoformat())
    assert (report / "index.html").is_file()
    assert not any(d.exists() for d in dirs[:2])
    head, problem = "QA 2026-11-22: 2 jobs, 9 URLs", "crawl log missing"
    task = _task_lines(out)
    # the task's own log ends with the curator's summary: headline first, report last
    start = next(i for i, m in enumerate(task) if m.strip().startswith(head))
    summary = "\n".join(task[start:])
    assert problem in summary, summary
    assert task[-1].strip() == f"report: {report}/index.html", summary
    assert "MIME families: text" in summary and "top TLDs: ." in summary
    # nothing after it but Airflow's own bookkeeping (the returned dict is not logged)
    after = out[out.index(task[-1].strip()) :]
    assert "Returned value was" not in after and "[qa." not in after
    assert "demo-daily run 2 vs run 1: grew 1, shrank 0, newly failed 0, hit limits 1" in out

    # re-running the day through the trigger form's "day" param (the run's own date, today,
    # would report on yesterday) rewrites the same files
    first = tree_files(report)
    again = _task_lines(_dags_test(airflow_runs, "-c", json.dumps({"day": day.isoformat()})))
    assert any(m.strip().startswith(head) for m in again), again
    assert again[-1].strip() == f"report: {report}/index.html", again
    assert tree_files(report) == first
