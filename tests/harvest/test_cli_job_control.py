"""``harvestflow jobs pause|resume|stop|filter|limits`` on a real harvest database: what is
refused (with the reason), what is recorded (with the user), and a filter saved to the domain
that the next job of the definition starts with. (The crawler's side: tests/crawler/
test_crawl_control.py.)"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from app.cli.main import main
from app.demo.definition import create_demo_definition
from harvest import pipeline as p

pytestmark = pytest.mark.services

LD = datetime(2026, 11, 22, 3, 0, tzinfo=UTC)


@pytest.fixture
def submitted(hdb: sa.Engine, tmp_path: Path) -> tuple[int, int]:
    hid = create_demo_definition(8123, engine=hdb)
    job = p.generate_jobs(hid, LD, engine=hdb)[0]
    p.prepare_job(job, tmp_path, engine=hdb)  # SUBMITTED: actions may be asked
    return hid, job


def _rows(engine: sa.Engine) -> list[tuple]:
    with engine.connect() as conn:
        return [
            tuple(r)
            for r in conn.execute(
                sa.text(
                    "SELECT action, arguments, requested_by, state FROM job_actions"
                    " ORDER BY action_id"
                )
            )
        ]


def test_bad_requests_are_refused_with_the_reason(hdb, submitted, capsys):
    _, job = submitted
    assert main(["jobs", "filter", str(job), "--regex", "(", "--user", "dora"]) == 1
    assert "not an RE2 regular expression" in capsys.readouterr().err
    assert main(["jobs", "filter", str(job), "--surt", "test,a)/", "--save", "domain"]) == 1
    assert "only a regex filter can be saved" in capsys.readouterr().err
    assert main(["jobs", "limits", str(job)]) == 1
    assert "at least one of" in capsys.readouterr().err
    assert main(["jobs", "pause", "999999"]) == 1
    assert "does not exist" in capsys.readouterr().err
    assert _rows(hdb) == []


def test_filter_saved_to_the_domain_reaches_the_next_job(hdb, submitted, capsys, tmp_path):
    hid, job = submitted
    code = main([
        "jobs", "filter", str(job), "--regex", "/calendar/", "--name", "cal",
        "--save", "domain", "--domain", "example-a.test", "--user", "dora", "--wait", "1",
    ])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 2 and "still pending" in out  # no crawler is running this job
    assert f"job {job}: filter requested by dora" in out
    assert _rows(hdb) == [
        (
            "filter",
            {"kind": "regex", "pattern": "/calendar/", "name": "cal", "save": "domain",
             "domain": "example-a.test"},
            "dora",
            "pending",
        )
    ]  # fmt: skip
    assert main(["jobs", "limits", str(job), "--max-objects", "50", "--user", "dora"]) == 0
    assert _rows(hdb)[-1][1] == {"max_objects": 50}
    # the job ends; the next run of the definition starts with the saved trap
    with hdb.begin() as conn:
        conn.execute(sa.text("UPDATE jobs SET status = 3 WHERE job_id = :j"), {"j": job})
    assert main(["jobs", "stop", str(job), "--user", "dora"]) == 1
    assert "is not running" in capsys.readouterr().err
    nxt = p.generate_jobs(hid, datetime(2026, 11, 23, 3, tzinfo=UTC), engine=hdb)[0]
    spec = json.loads(Path(p.prepare_job(nxt, tmp_path, engine=hdb)).read_text())
    assert "/calendar/" in spec["crawler_traps"]


def test_new_limits_free_a_domain_the_old_ones_stopped():
    from crawler.budget import Budgets
    from crawler.jobspec import from_dict
    from harvestflow.formats.stop_reasons import StopReason

    spec = from_dict({"job_id": 1, "seeds": ["http://a.test/"], "max_objects": 2}, "test")
    budgets = Budgets(spec)
    budgets.commit("a.test", 10, reserved=False)
    budgets.commit("a.test", 10, reserved=False)
    assert budgets.reserve("a.test") is not None  # spent
    assert budgets.domains["a.test"].stop_reason == StopReason.OBJECT_LIMIT
    budgets.set_limits(max_objects=5)
    assert budgets.reserve("a.test") is None
    assert budgets.domains["a.test"].stop_reason is None and budgets.domains["a.test"].objects == 2
    budgets.set_limits(max_objects=3)
    assert budgets.reserve("a.test") is not None  # 2 done + 1 in flight
