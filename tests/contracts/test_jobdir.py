"""The job directory layout: one object, the paths every stage used to spell out."""

from __future__ import annotations

from pathlib import Path

from harvestflow.contracts.jobdir import JobDir


def test_the_layout_is_the_one_the_stages_read(tmp_path: Path) -> None:
    job = JobDir(str(tmp_path))
    assert job == JobDir(tmp_path) and JobDir.of_spec(tmp_path / "job.json") == job
    rel = {
        name: getattr(job, name).relative_to(tmp_path).as_posix()
        for name in (
            "job_json", "summary_json", "warcs", "logs", "crawl_log", "crawl_log_gz",
            "crawler_log", "progress_log", "reports", "state", "crawl_state", "recorded_cdx",
            "partitions", "actions_log", "leases_held", "render_ca",
        )
    }  # fmt: skip
    assert rel == {
        "job_json": "job.json",
        "summary_json": "summary.json",
        "warcs": "warcs",
        "logs": "logs",
        "crawl_log": "logs/crawl.log",
        "crawl_log_gz": "logs/crawl.log.gz",
        "crawler_log": "logs/crawler.log",
        "progress_log": "logs/progress-statistics.log",
        "reports": "reports",
        "state": "state",
        "crawl_state": "state/crawl.sqlite",
        "recorded_cdx": "state/cdx.unsorted",
        "partitions": "state/partitions",
        "actions_log": "logs/operator-actions.log",
        "leases_held": "host-leases-held.json",
        "render_ca": "state/render-ca",
    }
    assert job.part(2).crawl_log == tmp_path / "state" / "part-2" / "logs" / "crawl.log"


def test_files_found_only_when_there(tmp_path: Path) -> None:
    job = JobDir(tmp_path)
    assert job.report_files() == [] and job.crawl_log_file() is None
    job.reports.mkdir()
    (job.reports / "b-report.txt").write_text("x")
    (job.reports / "a-report.txt").write_text("x")
    (job.reports / "notes.md").write_text("x")
    assert [p.name for p in job.report_files()] == ["a-report.txt", "b-report.txt"]
    job.logs.mkdir()
    job.crawl_log_gz.write_bytes(b"")
    assert job.crawl_log_file() == job.crawl_log_gz
    job.crawl_log.write_text("")
    assert job.crawl_log_file() == job.crawl_log
