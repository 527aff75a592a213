"""Job specs are checked with errors naming the key; the subprocess launcher relays progress
and fails with the child's error when the job cannot run."""

from __future__ import annotations

import json
import logging

import pytest

from crawler.jobspec import JobSpecError, from_dict, load
from crawler.launch import CrawlFailed, CrawlRefused, crawl_in_subprocess
from tests.support.crawl import make_job


def test_defaults_come_from_settings_and_unknown_keys_are_ignored():
    spec = from_dict({"job_id": 3, "seeds": ["http://a.org/"], "whatever": 1})
    assert spec.template.delay_factor == 5.0 and spec.template.min_delay_ms == 3000
    assert spec.template.connections_per_host == 1 and spec.template.max_hops == 20
    assert spec.warc_prefix == "3-0"


def test_resolve_comes_from_the_template_and_the_job_the_job_winning():
    spec = from_dict(
        {
            "job_id": 1,
            "seeds": ["http://a.org/"],
            "template": {"resolve": {"a.org": "192.0.2.1", "b.org": "192.0.2.2"}},
            "resolve": {"a.org": "192.0.2.9"},
        }
    )
    assert spec.all_resolve == {"a.org": "192.0.2.9", "b.org": "192.0.2.2"}
    assert spec.template.max_header_bytes == 262_144  # headers bounded by default


def test_bad_values_name_the_key(tmp_path):
    with pytest.raises(JobSpecError, match=r"template.*max_hops"):
        from_dict({"job_id": 1, "seeds": [], "template": {"max_hops": "many"}})
    with pytest.raises(JobSpecError, match="crawler_traps\\[0\\]"):
        from_dict({"job_id": 1, "seeds": [], "crawler_traps": ["(unclosed"]})
    bad = tmp_path / "job.json"
    bad.write_text("{\n  nope")
    with pytest.raises(JobSpecError, match="line 2"):
        load(bad)


def test_crawl_in_subprocess_relays_progress(site, tmp_path, caplog):
    job = make_job(
        site,
        [site.url("www.example-a.test", "/")],
        {"min_delay_ms": 30, "max_delay_ms": 30, "delay_factor": 1.0},
    )
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    logger = logging.getLogger("test.task")
    with caplog.at_level(logging.INFO, logger="test.task"):
        summary = crawl_in_subprocess(
            path, tmp_path / "out", logger=logger, progress_interval_s=0.2
        )
    assert summary.status == "complete" and summary.urls > 30
    progress = [r.getMessage() for r in caplog.records if "URLs done" in r.getMessage()]
    assert len(progress) >= 2


def test_crawl_in_subprocess_raises_with_the_reason(tmp_path):
    """A spec that breaks the contract is refused as such (CrawlRefused: not worth a retry),
    with the reason, and nothing is crawled."""
    path = tmp_path / "job.json"
    path.write_text(json.dumps({"seeds": ["http://a.org/"]}))  # no job_id
    with pytest.raises(CrawlRefused, match="job_id"):
        crawl_in_subprocess(path, tmp_path / "out", progress_interval_s=1)
    assert not (tmp_path / "out" / "summary.json").exists()


def test_a_crawl_that_fails_for_another_reason_is_not_a_refusal(tmp_path):
    """A job file not there to read (a shared directory passing away) fails the crawl as any
    failure, to be retried: only a spec read and refused is a CrawlRefused."""
    with pytest.raises(CrawlFailed, match="not found") as failed:
        crawl_in_subprocess(tmp_path / "gone.json", tmp_path / "out", progress_interval_s=1)
    assert not isinstance(failed.value, CrawlRefused)


def test_a_crawl_ends_with_the_process_that_launched_it_checkpointed_and_resumable(site, tmp_path):
    """The process running crawl_in_subprocess (an Airflow task runner) killed with SIGKILL:
    its crawler is not left crawling on its own. It gets SIGHUP (once per thread of the dead
    parent: the task runner here has two) and makes one graceful stop: the requests in flight
    are captured, summary.json says unfinished, no WARC is left open."""
    import os
    import signal
    import subprocess
    import sys
    import time

    import psutil

    seeds = [site.url("www.example-a.test", f"/slow?ms=700&n={i}") for i in range(80)]
    job_path = tmp_path / "job.json"
    job_path.write_text(json.dumps(make_job(site, seeds)))
    out = tmp_path / "out"
    code = (
        "import sys; from crawler.launch import crawl_in_subprocess;"
        f"crawl_in_subprocess({str(job_path)!r}, {str(out)!r}, progress_interval_s=1)"
    )
    runner = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    crawl_log = out / "logs" / "crawl.log"
    deadline = time.monotonic() + 60
    while not (crawl_log.exists() and crawl_log.read_text().count("/slow?") >= 5):
        assert time.monotonic() < deadline and runner.poll() is None
        time.sleep(0.1)
    (crawler,) = psutil.Process(runner.pid).children()
    os.kill(runner.pid, signal.SIGKILL)
    runner.wait()
    crawler.wait(60)  # it stopped by itself, within a bound
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "unfinished"
    assert not list((out / "warcs").glob("*.open"))
    captured = [ln.split()[3] for ln in crawl_log.read_text().splitlines() if "/slow?" in ln]
    served = [r.path for r in site.requests if r.path.startswith("/slow?")]
    assert 5 <= len(captured) < len(seeds)
    assert sorted(served) == sorted(c.split(str(site.port), 1)[1] for c in captured)
