"""The curator job page's one write: an operator's action on a running crawl, through FastAPI's
TestClient on a real (fresh) harvest database. A POST without the page's CSRF token (a forged
form of another site: the browser sends the cookies, not the token) is refused with 403 and
records nothing; with it, the action is recorded in job_actions with the user; a user without
edit permission sees no forms and is refused; bad input is a 400 naming what is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from app.curator.actions import Role
from tests.support.curator_jobs import _insert_job
from tests.support.signed_in import page_token, signed_in_client

pytestmark = pytest.mark.services

# name -> role (as the plugin's dependency says)
USERS = {"alice": Role.ENGINEER, "carol": Role.CURATOR, "victor": Role.VIEWER}


@pytest.fixture
def running_job(db_engine: sa.Engine, tmp_path: Path) -> int:
    from harvest.bootstrap import ensure_reference_data

    ensure_reference_data(db_engine)
    (tmp_path / "job").mkdir()
    return _insert_job(db_engine, tmp_path / "job", status=2)  # STARTED


def _actions(engine: sa.Engine, job: int) -> list[tuple[str, str, str]]:
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT action, requested_by, state FROM job_actions WHERE job_id = :j"
                " ORDER BY action_id"
            ),
            {"j": job},
        ).all()
    return [tuple(r) for r in rows]


def test_forged_post_is_refused_and_a_real_one_is_recorded_with_the_user(
    db_engine: sa.Engine, tmp_path: Path, running_job: int
) -> None:
    alice = signed_in_client(db_engine, tmp_path, "alice", USERS)
    page = alice.get(f"/jobs/{running_job}")
    assert page.status_code == 200
    assert "hf_csrf" in page.headers.get("set-cookie", "")
    assert "httponly" in page.headers["set-cookie"].lower()
    token = page_token(page.text)
    url = f"/jobs/{running_job}/actions"

    # another site's form: the browser sends alice's cookies, but it cannot know the token
    forged = alice.post(url, data={"action": "stop"})
    assert forged.status_code == 403, forged.text
    assert "CSRF" in forged.text
    assert alice.post(url, data={"action": "stop", "csrf_token": "0" * 64}).status_code == 403
    # a token without the session cookie it was made for
    fresh = signed_in_client(db_engine, tmp_path, "alice", USERS)
    assert fresh.post(url, data={"action": "stop", "csrf_token": token}).status_code == 403
    assert _actions(db_engine, running_job) == []

    done = alice.post(url, data={"action": "pause", "csrf_token": token})
    assert done.status_code == 303, done.text
    assert done.headers["location"].startswith(f"/jobs/{running_job}?action=")
    bad = alice.post(url, data={"action": "filter", "kind": "regex", "pattern": "(",
                                "csrf_token": token})  # fmt: skip
    assert bad.status_code == 400 and "RE2" in bad.text
    filt = alice.post(url, data={"action": "filter", "kind": "surt", "pattern": "test,a)/cal",
                                 "name": "cal", "csrf_token": token})  # fmt: skip
    assert filt.status_code == 303
    assert _actions(db_engine, running_job) == [
        ("pause", "alice", "pending"),
        ("filter", "alice", "pending"),
    ]
    history = alice.get(f"/jobs/{running_job}").text
    assert "actions-history" in history and "test,a)/cal" in history
    assert history.count(">alice<") == 2
    with db_engine.connect() as conn:
        audit = conn.execute(
            sa.text("SELECT username, action, target, detail FROM audit_log ORDER BY audit_id")
        ).all()
    assert [tuple(a)[:3] for a in audit] == [
        ("alice", "job.pause", f"job {running_job}"),
        ("alice", "job.filter", f"job {running_job}"),
    ]
    assert audit[1].detail["pattern"] == "test,a)/cal"


@pytest.mark.parametrize("name", ["victor", "carol"])
def test_only_a_crawl_engineer_sees_the_forms_and_controls_a_crawl(
    db_engine: sa.Engine, tmp_path: Path, running_job: int, name: str
) -> None:
    """A viewer and a curator (who may edit selection records) may not control crawls."""
    user = signed_in_client(db_engine, tmp_path, name, USERS)
    page = user.get(f"/jobs/{running_job}")
    assert page.status_code == 200
    assert 'name="action"' not in page.text and "needs the crawl engineer role" in page.text
    # even with a right token (made here with the app's key), the write is refused
    from app.curator.actions import csrf_token, load_key

    token = csrf_token(load_key(tmp_path), user.cookies["hf_csrf"], name)
    refused = user.post(
        f"/jobs/{running_job}/actions", data={"action": "stop", "csrf_token": token}
    )
    assert refused.status_code == 403 and "needs the crawl engineer role" in refused.text
    assert _actions(db_engine, running_job) == []


def test_no_action_on_a_finished_job(db_engine: sa.Engine, tmp_path: Path) -> None:
    from harvest.bootstrap import ensure_reference_data

    ensure_reference_data(db_engine)
    (tmp_path / "done").mkdir()
    job = _insert_job(db_engine, tmp_path / "done", status=3)  # DONE
    alice = signed_in_client(db_engine, tmp_path, "alice", USERS)
    page = alice.get(f"/jobs/{job}")
    assert 'name="action"' not in page.text  # no forms for a job that is not running
    from app.curator.actions import csrf_token, load_key

    token = csrf_token(load_key(tmp_path), alice.cookies["hf_csrf"], "alice")
    late = alice.post(f"/jobs/{job}/actions", data={"action": "stop", "csrf_token": token})
    assert late.status_code == 400 and "not running" in late.text
    assert _actions(db_engine, job) == []


def test_feedback_on_what_does_not_exist_is_a_404_and_a_bad_form_a_400(
    db_engine: sa.Engine, tmp_path: Path, running_job: int
) -> None:
    """The QA comment and annotation routes tell "the page's job or record is not there" (404)
    from "the form is refused" (400) by the error's type, whatever its message says."""
    carol = signed_in_client(db_engine, tmp_path, "carol", USERS)
    token = page_token(carol.get(f"/jobs/{running_job}").text)
    no_job = carol.post("/jobs/99999/qa", data={"text": "blank page", "csrf_token": token})
    assert no_job.status_code == 404 and "no job 99999" in no_job.text
    # the job exists; the record the form names does not: the form is at fault
    no_record = carol.post(
        f"/jobs/{running_job}/qa",
        data={"text": "x", "record_id": "99999", "csrf_token": token},
    )
    assert no_record.status_code == 400 and "no selection record 99999" in no_record.text
    empty = carol.post(f"/jobs/{running_job}/qa", data={"csrf_token": token})
    assert empty.status_code == 400 and "an empty comment" in empty.text
    gone = carol.post("/records/99999/annotations", data={"notes": "x", "csrf_token": token})
    assert gone.status_code == 404 and "no selection record 99999" in gone.text
