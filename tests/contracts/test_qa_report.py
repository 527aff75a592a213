"""The job's QA reports: what the crawler writes is what the task log and the pages read —
each page's last check, the URLs still missing after it, the patched ones, the summary."""

from __future__ import annotations

from pathlib import Path

from harvestflow.contracts.qa_report import (
    PageCheck,
    read_checks,
    summarise,
    write_check,
    write_patches,
)

PAGE = "http://s.test/a.html"


def _job(tmp_path: Path) -> Path:
    (tmp_path / "reports").mkdir()
    return tmp_path


def test_the_last_check_of_a_page_is_its_score_with_what_it_left_missing(tmp_path: Path) -> None:
    job = _job(tmp_path)
    reports = job / "reports"
    write_check(
        reports,
        PageCheck(PAGE, 1, 50.0, 0.1, 0.9, 4, ["http://s.test/x.png", "http://s.test/y.png"]),
    )
    write_patches(
        reports,
        PAGE,
        1,
        {"http://s.test/x.png": "patched:200", "http://s.test/y.png": "not-patched:403"},
    )
    write_check(
        reports, PageCheck(PAGE, 2, 75.0, 0.0, 1.0, 4, ["http://s.test/y.png"], patched_count=1)
    )
    write_check(reports, PageCheck("http://s.test/b.html", 1, 100.0, 0.0, 1.0, 2))
    (reports / "qa-report.txt").open("a").write("http://s.test/c.html 1 9")  # a torn last line
    checks = read_checks(job)
    assert [(c.page, c.check, c.score) for c in checks] == [
        (PAGE, 2, 75.0),
        ("http://s.test/b.html", 1, 100.0),
    ]
    assert checks[0].missing == ["http://s.test/y.png"]
    assert checks[0].patched == {
        "http://s.test/x.png": "patched:200",
        "http://s.test/y.png": "not-patched:403",
    }
    summary = summarise(checks, 80.0, 0.2)
    assert (summary.pages, summary.median_score, summary.below) == (2, 87.5, 1)
    assert (summary.patched, summary.still_missing) == (1, 1)
    assert summary.flagged  # half the pages below 80, more than the 20 % allowed
    assert summary.lines()[0] == (
        "QA: 2 pages checked, median score 87.5, 1 below 80, 1 URLs patched, 1 URLs still missing"
    )
    assert "50% of the pages scored below 80" in summary.lines()[1]


def test_a_job_without_qa_reads_as_no_check(tmp_path: Path) -> None:
    assert read_checks(tmp_path) == []
    assert summarise([], 80.0, 0.2).lines() == ["QA: no page checked"]
    assert not summarise([], 80.0, 0.2).flagged


def test_a_url_with_spaces_stays_one_field(tmp_path: Path) -> None:
    job = _job(tmp_path)
    write_check(job / "reports", PageCheck(PAGE, 1, 10.0, 0.5, 0.5, 2, ["http://s.test/a b.png"]))
    assert read_checks(job)[0].missing == ["http://s.test/a%20b.png"]
