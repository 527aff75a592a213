"""Curators' annotations of targets and QA feedback on jobs, on the real harvest database:
versions with who and when, QA comments whose directives the next transfer applies exactly
once (a bad URL named, the others added), and the crawl feed's JSON export carrying them and
read back by the import."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

import harvest.selection.annotations as ann
from harvest import pipeline as p
from harvest.selection import qa_feedback
from harvest.selection.feed_export import export_feed
from harvest.selection.importer import import_file
from harvest.selection.transfer import transfer_selection_records
from harvestflow.audit import audit_entries

pytestmark = pytest.mark.services

FEED = [
    {
        "id": 11,
        "title": "News of the day",
        "seeds": ["http://news.test/"],
        "schedules": [{"frequency": "DAILY", "startDate": None, "endDate": None}],
        "scope": "plus1",
        "depth": "CAPPED",
        "collection": "news",
        "theme": "politics",
        "keywords": ["elections"],
    },
    {
        "id": 12,
        "title": "A blog",
        "seeds": ["http://blog.test/", "http://blog.test/feed"],
        "schedules": [
            {"frequency": "MONTHLY", "startDate": "2026-01-05 09:00:00", "endDate": None}
        ],
        "scope": "root",
        "depth": "DEEP",
        "collection": "news",
        "theme": "culture",
    },
]


def _import(engine: sa.Engine, tmp_path: Path, items: list[dict]) -> None:
    path = tmp_path / "feed.json"
    path.write_text(json.dumps(items))
    report = import_file(path, check_urls=False, engine=engine, user="importer")
    assert not report.errors, report.errors


def _record(engine: sa.Engine, external_id: str) -> int:
    with engine.connect() as conn:
        return int(
            conn.execute(
                sa.text("SELECT record_id FROM selection_records WHERE external_id = :e"),
                {"e": external_id},
            ).scalar_one()
        )


def _job_of_news(engine: sa.Engine) -> int:
    """A job of the news record's definition (transfer, then job generation)."""
    result = transfer_selection_records("daily", engine=engine)
    jobs = p.generate_jobs(
        result["definitions"]["news-daily"], datetime(2026, 12, 6, tzinfo=UTC), engine=engine
    )
    return jobs[0]


def test_annotations_are_versioned_with_who_and_when(hdb: sa.Engine, tmp_path: Path) -> None:
    _import(hdb, tmp_path, FEED)
    rid = _record(hdb, "ukwa:11")
    with hdb.begin() as conn:
        assert ann.current(conn, [rid])[rid].version_id is None  # never annotated
        first = ann.annotate(
            conn, rid, "ann", scope_evidence=[{"kind": "domain"}], notes="national TLD"
        )
        second = ann.annotate(
            conn,
            rid,
            "bob",
            scope_evidence=[{"kind": "domain"}, {"kind": "manual", "text": "letter of 3 May"}],
            licence_status="requested",
            licence_date="2026-05-03",
        )
        same = ann.annotate(conn, rid, "cid", licence_status="requested")
        with pytest.raises(ann.AnnotationError, match="manual evidence needs a text"):
            ann.annotate(conn, rid, "cid", scope_evidence=[{"kind": "manual"}])
        with pytest.raises(ann.AnnotationError, match="unknown kind 'postcode'"):
            ann.annotate(conn, rid, "cid", scope_evidence=[{"kind": "postcode"}])
        with pytest.raises(ann.AnnotationError, match="licence status 'maybe'"):
            ann.annotate(conn, rid, "cid", licence_status="maybe")
        versions = ann.history(conn, rid)
    assert same.version_id == second.version_id  # nothing changed: no new version
    assert [(v.changed_by, v.version_id) for v in versions] == [
        ("bob", second.version_id),
        ("ann", first.version_id),
    ]
    now = versions[0]
    assert now.notes == "national TLD"  # a field not given is kept
    assert now.scope_evidence == [
        {"kind": "domain", "text": ""},
        {"kind": "manual", "text": "letter of 3 May"},
    ]
    assert (now.licence_status, now.licence_date) == ("requested", date(2026, 5, 3))
    assert versions[1].licence_status == "not_requested" and versions[1].changed_at is not None
    # each new version is one audit row, with who and before/after (no row for "no change")
    with hdb.connect() as conn:
        audit = audit_entries(conn, target=f"record {rid}")
    assert [(a["username"], a["action"]) for a in audit] == [
        ("bob", "record.annotate"),
        ("ann", "record.annotate"),
    ]
    assert audit[0]["detail"]["after"]["licence"]["status"] == "requested"
    assert audit[0]["detail"]["before"]["notes"] == "national TLD"


def test_qa_directives_are_applied_once_by_the_next_transfer(
    hdb: sa.Engine, tmp_path: Path
) -> None:
    _import(hdb, tmp_path, FEED)
    rid = _record(hdb, "ukwa:11")
    job = _job_of_news(hdb)
    with hdb.begin() as conn:
        assert qa_feedback.job_status(conn, job) == "not_checked"
        assert [r["record_id"] for r in qa_feedback.job_records(conn, job)] == [rid]
        comment = qa_feedback.write_comment(
            conn,
            job,
            "ann",
            "the live blog and the archive pages are missing",
            status="issues",
            add_urls=[
                "http://news.test/live",
                "javascript:alert(1)",
                "news.test/archive?page=2",
                "http://news.test/live",  # twice: once
            ],
            max_objects=25_000,
        )
        assert comment.record_id == rid  # the job's only record
        assert comment.url_problems() == [
            (
                "javascript:alert(1)",
                "'javascript:alert(1)': scheme 'javascript' is not http or https",
            )
        ]
        qa_feedback.write_comment(conn, job, "bob", status="passed")
        with pytest.raises(qa_feedback.FeedbackError, match="empty comment"):
            qa_feedback.write_comment(conn, job, "bob", "  ")
        assert qa_feedback.job_status(conn, job) == "passed"

    first = transfer_selection_records("daily", engine=hdb)
    assert first["directives"] == [comment.comment_id]
    bad = [e for e in first["errors"] if "javascript" in e]
    assert bad == [
        f"QA comment {comment.comment_id} (job {job}, by ann): URL 'javascript:alert(1)' not"
        " added: 'javascript:alert(1)': scheme 'javascript' is not http or https"
    ]
    second = transfer_selection_records("daily", engine=hdb)
    assert second["directives"] == [] and not second["errors"]

    with hdb.connect() as conn:
        record = conn.execute(
            sa.text("SELECT * FROM selection_records WHERE record_id = :r"), {"r": rid}
        ).one()
        config = conn.execute(
            sa.text(
                "SELECT c.maxobjects, s.seeds FROM configurations c JOIN config_seedlists cs"
                " USING (config_id) JOIN seedlists s USING (seedlist_id) JOIN domains d"
                " ON d.domain_id = c.domain_id WHERE d.name = 'news.test'"
            )
        ).one()
        stored = qa_feedback.comments(conn, job_id=job)
        audit = audit_entries(conn, target=f"job {job}")
    # each comment is an audit row with its directives
    assert [(a["username"], a["action"]) for a in audit] == [
        ("bob", "job.qa_comment"),
        ("ann", "job.qa_comment"),
    ]
    assert audit[1]["detail"]["max_objects"] == 25_000
    added = ["http://news.test/live", "http://news.test/archive?page=2"]
    assert record.supplementary_urls == added  # once, though the transfer ran twice
    assert (record.max_objects, record.modified_by) == (25_000, "ann")
    assert config.seeds.splitlines() == ["http://news.test/", *added]
    assert config.maxobjects == 25_000
    applied = stored[-1]
    assert applied.directive_state == "applied" and applied.applied_at is not None
    assert "2 URL(s) added" in (applied.applied_note or "")
    assert "javascript" in (applied.applied_note or "")
    # the next job of the record crawls the added URLs
    jobs = p.generate_jobs(
        first["definitions"]["news-daily"], datetime(2026, 12, 7, tzinfo=UTC), engine=hdb
    )
    spec = json.loads(Path(p.prepare_job(jobs[0], tmp_path, engine=hdb)).read_text())
    assert spec["seeds"] == ["http://news.test/", *added]


def test_a_directive_needs_its_record_and_a_bad_one_is_refused_whole(
    hdb: sa.Engine, tmp_path: Path
) -> None:
    _import(hdb, tmp_path, FEED)
    job = _job_of_news(hdb)
    with hdb.begin() as conn:
        with pytest.raises(qa_feedback.FeedbackError, match="no selection record 999"):
            qa_feedback.write_comment(conn, job, "ann", add_urls=["http://a.test/"], record_id=999)
        with pytest.raises(qa_feedback.FeedbackError, match="max objects 0"):
            qa_feedback.write_comment(conn, job, "ann", max_objects=0)
        only_bad = qa_feedback.write_comment(conn, job, "ann", add_urls=["ftp://news.test/x"])
    result = transfer_selection_records("daily", engine=hdb)
    assert [e for e in result["errors"] if "ftp://news.test/x" in e]
    with hdb.connect() as conn:
        (stored,) = qa_feedback.comments(conn, job_id=job)
    assert stored.comment_id == only_bad.comment_id and stored.directive_state == "refused"


def test_feed_export_carries_annotations_and_round_trips(hdb: sa.Engine, tmp_path: Path) -> None:
    _import(hdb, tmp_path, FEED)
    rid = _record(hdb, "ukwa:11")
    job = _job_of_news(hdb)
    with hdb.begin() as conn:
        ann.annotate(
            conn,
            rid,
            "ann",
            scope_evidence=[{"kind": "address", "text": "1 rue de Rivoli, Paris"}],
            licence_status="granted",
            licence_date="2026-02-01",
            licence_note="signed form in the file",
            notes="check the live blog",
        )
        qa_feedback.write_comment(conn, job, "ann", "too small", status="issues", max_objects=9000)
    transfer_selection_records("daily", engine=hdb)
    out = tmp_path / "export.json"
    count, left_out = export_feed(out, engine=hdb)
    assert (count, left_out) == (2, [])
    exported = json.loads(out.read_text())
    news = next(item for item in exported if item["id"] == "11")
    assert news["annotations"]["scopeEvidence"] == [
        {"kind": "address", "text": "1 rue de Rivoli, Paris"}
    ]
    assert news["annotations"]["licence"] == {
        "status": "granted",
        "date": "2026-02-01",
        "note": "signed form in the file",
    }
    assert news["annotations"]["changedBy"] == "ann"
    assert news["maxObjects"] == 9000
    assert [(c["job"], c["qaStatus"], c["directives"]) for c in news["qa"]] == [
        (job, "issues", "applied")
    ]

    # a database without the records: the export imported gives them back, annotations too
    with hdb.begin() as conn:
        conn.execute(sa.text("DELETE FROM selection_records"))
    report = import_file(out, check_urls=False, engine=hdb, user="restorer")
    assert (report.inserted, report.errors) == (2, [])
    again = tmp_path / "again.json"
    export_feed(again, engine=hdb)

    def shape(items: list[dict]) -> list[dict]:
        for item in items:
            item.pop("qa")  # the jobs' comments stay with the jobs
            item["annotations"].pop("changedAt")
            item["annotations"].pop("changedBy")
        return items

    assert shape(json.loads(again.read_text())) == shape(exported)
    with hdb.connect() as conn:
        restored = ann.current(conn, [_record(hdb, "ukwa:11")])
    assert next(iter(restored.values())).changed_by == "restorer"


def test_feed_import_refuses_bad_annotations_by_item(hdb: sa.Engine, tmp_path: Path) -> None:
    items = json.loads(json.dumps(FEED))
    items[0]["annotations"] = {"licence": {"status": "granted", "date": "yesterday"}}
    path = tmp_path / "feed.json"
    path.write_text(json.dumps(items))
    report = import_file(path, check_urls=False, engine=hdb)
    assert report.inserted == 1
    assert report.errors == [
        ("feed.json item 1 (id 11)", "licence date 'yesterday' is not YYYY-MM-DD")
    ]


def test_cli_annotate_comment_and_export(
    hdb: sa.Engine, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from app.cli.main import main

    _import(hdb, tmp_path, FEED)
    rid = _record(hdb, "ukwa:11")
    job = _job_of_news(hdb)
    args = ["selection", "annotate", str(rid), "--evidence", "domain", "--user", "dora"]
    assert main([*args, "--evidence", "manual:seen in print", "--licence", "refused"]) == 0
    assert main(["selection", "annotate", str(rid), "--evidence", "postcode"]) == 1
    assert "unknown kind 'postcode'" in capsys.readouterr().err
    assert main(["selection", "annotate", str(rid), "--notes", "", "--user", "eve"]) == 0
    assert main(["selection", "annotations", str(rid)]) == 0
    shown = capsys.readouterr().out
    assert '"status": "refused"' in shown and '"changedBy": "dora"' in shown

    code = main([
        "jobs", "qa", str(job), "--status", "issues", "--comment", "menu missing",
        "--add-url", "http://news.test/menu", "--add-url", "http://bad host/", "--user", "dora",
    ])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 1 and "'http://bad host/' will not be added" in err  # stored, named
    assert f"job {job}: QA issues" in out and "menu missing" in out
    assert main(["jobs", "qa", "999999", "--comment", "x"]) == 1
    assert "no job 999999" in capsys.readouterr().err

    assert main(["selection", "export", str(tmp_path / "out.json")]) == 0
    items = json.loads((tmp_path / "out.json").read_text())
    news = next(item for item in items if item["id"] == "11")
    assert news["annotations"]["scopeEvidence"][1] == {"kind": "manual", "text": "seen in print"}
    assert news["qa"][0]["addUrls"] == ["http://news.test/menu", "http://bad host/"]


def test_vocabularies_are_the_schemas(hdb: sa.Engine) -> None:
    """Each enum is exactly what its column's CHECK constraint allows."""
    import re

    with hdb.connect() as conn:
        checks: dict[str, str] = dict(
            conn.execute(
                sa.text(
                    "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE conname"
                    " IN ('target_annotations_licence_status_check',"
                    " 'job_qa_comments_qa_status_check', 'job_qa_comments_directive_state_check')"
                )
            ).all()
        )

    def allowed(name: str) -> set[str]:
        return set(re.findall(r"'(\w+)'::text", checks[name]))

    assert allowed("target_annotations_licence_status_check") == set(ann.LicenceStatus)
    assert allowed("job_qa_comments_qa_status_check") == set(qa_feedback.QaStatus)
    assert allowed("job_qa_comments_directive_state_check") == set(qa_feedback.DirectiveState)
