"""Kill -9 in the middle of a crawl, run the same job again: it resumes from the persisted
frontier and seen-set, captures nothing twice that was completed, and every WARC is valid."""

from __future__ import annotations

import os
import signal
import subprocess
import time

from warcio.archiveiterator import ArchiveIterator

from tests.support.crawl import REPO, fetched, make_job, run_crawl, start_crawl


def test_kill_9_then_resume(site, tmp_path):
    seeds = [site.url("www.example-a.test", "/"), site.url("example-b.test", "/")]
    template = {
        "min_delay_ms": 150,
        "max_delay_ms": 150,
        "delay_factor": 1.0,
        "connections_per_host": 1,
        "warc_max_size": 6000,
        # most accepted URLs wait in the persisted frontier only (crawler/frontier.py): a
        # resume reads its first part, the rest as the queue drains
        "max_queued_requests": 3,
    }
    job = make_job(site, seeds, template)
    out = tmp_path / "job"
    out.mkdir()
    job_path = tmp_path / "job.json"
    proc = start_crawl(job, job_path, out)
    log = out / "logs" / "crawl.log"
    deadline = time.time() + 60
    while time.time() < deadline:
        if log.exists() and len(fetched(log.read_text().splitlines())) >= 15:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    killed_at = time.time()
    proc.wait()
    before = fetched([ln for ln in log.read_text().split("\n")[:-1]])  # complete lines only
    assert 15 <= len(before) < 40, "killed too late to prove a resume"
    assert list((out / "warcs").glob("*.open")), "the killed crawl left no open WARC"
    assert not (out / "summary.json").exists()

    result = run_crawl(job, out)
    assert result.summary["status"] == "complete"
    assert result.summary["repaired_warcs"], "the dead .open WARC was not closed"
    after = fetched(result.crawl_log)[len(before) :]
    again = set(before) & set(after)
    assert not again, f"captured again after resume: {sorted(again)}"
    # summary.json: the job's first run's start, the resumed run's start beside it
    from datetime import datetime

    started = datetime.fromisoformat(result.summary["started"]).timestamp()
    (resumed,) = result.summary["resumed"]
    assert started < killed_at < datetime.fromisoformat(resumed).timestamp()
    # the resumed run's last progress line counts the URLs the first run fetched too
    ticks = (out / "logs" / "progress-statistics.log").read_text().splitlines()
    last = [ln.split() for ln in ticks if len(ln.split()) > 4 and ln.split()[3].isdigit()][-1]
    assert int(last[3]) >= len(before) + len(after), (last, len(before), len(after))
    # together the two runs captured what one uninterrupted crawl captures
    reference = run_crawl(make_job(site, seeds), tmp_path / "reference")
    assert sorted(before + after) == sorted(fetched(reference.crawl_log))
    warcs = sorted((out / "warcs").glob("*.warc.gz"))
    assert not list((out / "warcs").glob("*.open"))
    check = subprocess.run(
        [str(REPO / ".venv/bin/warcio"), "check", *map(str, warcs)], capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout
    # the CDX in the metadata WARC lists every capture of every data WARC exactly once
    from tests.support.crawl import our_cdx

    cdx_file = tmp_path / "index.cdx"
    our_cdx(out / "warcs" / "7-metadata-1.warc.gz", cdx_file)
    cdx = cdx_file.read_text().splitlines()[1:]
    captures = []
    for warc in (p for p in warcs if "metadata" not in p.name):
        with warc.open("rb") as fh:
            it = ArchiveIterator(fh)
            for rec in it:
                if rec.rec_type in ("response", "revisit"):
                    captures.append((warc.name, str(it.get_record_offset())))
    assert sorted((ln.split(" ")[10], ln.split(" ")[9]) for ln in cdx) == sorted(captures)
    # ... and each line is the reference indexer's (recorded, or read again after the repair)
    data = [str(p) for p in warcs if "metadata" not in p.name]
    ref = subprocess.run(
        [str(REPO / ".oracle-venv/bin/cdxj-indexer"), "-11", *data],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert sorted(cdx) == sorted(ln for ln in ref if not ln.startswith(" CDX"))
    names = [p.name for p in warcs if "metadata" not in p.name]
    serials = [int(n.split("-")[3]) for n in names]
    assert serials == list(range(len(serials)))  # rotation continued numbering after restart
