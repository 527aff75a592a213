"""A crawl killed with -9 mid-job: its partial output is salvaged (``.open`` WARC repaired,
reports, metadata WARC, summary marked "salvaged"), indexed exactly once by the chain, and
selected for preservation as a partial harvest; a job still running is never touched."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from warcio.archiveiterator import ArchiveIterator

from app.demo import samplesite
from app.demo.definition import create_demo_definition
from harvest import pipeline as p
from harvest.recovery import resubmit_dead_jobs
from harvestflow import settings as settings_mod
from harvestflow.formats.job_status import JobStatus
from harvestflow.settings import PROJECT_ROOT
from indexing import chain, manifest, merge
from indexing.layout import Layout
from preservation.config import PreservationConfig
from preservation.sources import JobFile, jobs_ready, load_job
from preservation.staging import bag_info_for
from qa.inputs import jobs_ended_on
from tests.support.cdx_oracle import oracle  # noqa: F401  (fixture)
from tests.support.chainkit import expected_index

pytestmark = pytest.mark.services
LD = datetime(2026, 11, 23, 3, 0, tzinfo=UTC)
WARCIO = Path(sys.executable).parent / "warcio"


@pytest.fixture
def site() -> Iterator[samplesite.SampleSite]:
    running = samplesite.start()
    yield running
    running.stop()


@pytest.fixture
def cfg(hdb: sa.Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("HARVESTFLOW_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HARVESTFLOW_INDEXING__MIN_FREE_BYTES", "0")
    settings_mod.reset()
    yield settings_mod.get_settings()
    settings_mod.reset()


def _age(path: Path, seconds: float) -> None:
    old = time.time() - seconds
    for item in [path, *path.rglob("*")]:
        os.utime(item, (old, old))


def _captures(warcs: list[Path]) -> list[tuple[str, str]]:
    found = []
    for warc in warcs:
        with warc.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                if rec.rec_type in ("response", "revisit"):
                    found.append(
                        (
                            rec.rec_headers.get_header("WARC-Target-URI"),
                            rec.rec_headers.get_header("WARC-Record-ID"),
                        )
                    )
    return found


def _start_crawl(hdb: sa.Engine, site, data: Path) -> tuple[int, Path, subprocess.Popen]:
    hid = create_demo_definition(site.port, engine=hdb)
    (job,) = p.generate_jobs(hid, LD, engine=hdb)
    spec_path = Path(p.prepare_job(job, data / "jobs", engine=hdb))
    spec = json.loads(spec_path.read_text())
    # small WARCs so some close before the kill, a polite pace so the kill lands mid-crawl
    spec["template"].update(
        {"warc_max_size": 20000, "min_delay_ms": 120, "max_delay_ms": 120, "delay_factor": 1.0}
    )
    spec_path.write_text(json.dumps(spec))
    p.mark_started(job, engine=hdb)
    proc = subprocess.Popen(
        [sys.executable, "-m", "crawler", "--job", str(spec_path), "--out", str(spec_path.parent)],
        cwd=PROJECT_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return job, spec_path.parent, proc


def test_killed_crawl_is_salvaged_indexed_once_and_preserved_as_partial(
    hdb: sa.Engine,
    cfg: settings_mod.Settings,
    site,
    tmp_path: Path,
    oracle: Path,  # noqa: F811
) -> None:
    job, job_dir, proc = _start_crawl(hdb, site, cfg.data_dir)
    crawl_log = job_dir / "logs" / "crawl.log"
    deadline = time.time() + 60
    while time.time() < deadline:
        if crawl_log.exists() and crawl_log.read_text().count("\n") >= 12:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert list((job_dir / "warcs").glob("*.open")), "killed too late: no open WARC left"
    assert not (job_dir / "summary.json").exists()

    # a second job of another definition is crawling right now: it must be left alone
    with hdb.begin() as conn:
        live = conn.execute(
            sa.text(
                "INSERT INTO jobs (harvest_id, harvest_num, job_index, status, channel, snapshot,"
                " template_name, template, seedlist, job_dir) SELECT harvest_id, harvest_num + 1,"
                " 0, :s, channel, snapshot, template_name, template, seedlist, :d FROM jobs"
                " WHERE job_id = :j RETURNING job_id"
            ),
            {"s": JobStatus.STARTED, "d": str(tmp_path / "live"), "j": job},
        ).scalar_one()
    (tmp_path / "live" / "warcs").mkdir(parents=True)
    (tmp_path / "live" / "warcs" / f"{live}-1-x-00000-h.warc.gz.open").write_bytes(b"WARC")

    _age(job_dir, 7200)
    result = resubmit_dead_jobs(600, hdb)
    assert result["dead"] == [job] and result["salvaged"] == [job]

    # the dead job's output is finished in place: no .open left, every WARC valid
    assert not list((job_dir / "warcs").glob("*.open"))
    summary = json.loads((job_dir / "summary.json").read_text())
    assert summary["status"] == "unfinished" and "salvaged" in summary
    assert summary["salvaged"]["repaired_warcs"], "the .open WARC was not repaired"
    data_warcs = sorted((job_dir / "warcs").glob(f"{job}-*.warc.gz"))
    meta = job_dir / "warcs" / f"{job}-metadata-1.warc.gz"
    assert meta in data_warcs and summary["metadata_warc"] == meta.name
    check = subprocess.run([str(WARCIO), "check", *map(str, data_warcs)], capture_output=True)
    assert check.returncode == 0, check.stdout + check.stderr
    with hdb.connect() as conn:
        row = conn.execute(
            sa.text("SELECT status, harvest_errors FROM jobs WHERE job_id = :j"), {"j": job}
        ).one()
        history = conn.execute(
            sa.text("SELECT sum(objectcount) FROM historyinfo WHERE job_id = :j"), {"j": job}
        ).scalar_one()
    assert row.status == JobStatus.RESUBMITTED and "worker died" in row.harvest_errors
    assert history == summary["urls"] > 0  # the history counts what the dead crawl collected
    # the live job is untouched: still STARTED, its .open WARC still there
    with hdb.connect() as conn:
        live_status = conn.execute(
            sa.text("SELECT status FROM jobs WHERE job_id = :j"), {"j": live}
        ).scalar_one()
    assert live_status == JobStatus.STARTED
    assert list((tmp_path / "live" / "warcs").glob("*.open"))
    # the daily QA counts the salvaged job (it ended today, whatever its status)
    assert job in [j.job_id for j in jobs_ended_on(hdb, datetime.now(UTC).date())]

    # the indexing chain takes the salvaged job (and not the live one), each capture once
    assert [j for j, _, _ in manifest.finished_jobs(hdb)] == [job]
    taken = chain.ingest(cfg)
    assert sorted(taken) == sorted(w.name for w in data_warcs)
    assert chain.ingest(cfg) == []
    results = [chain.process_file(name, cfg) for name in chain.pending_files(cfg)]
    assert {r["stage"] for r in results} == {"done"}
    captures = _captures([w for w in data_warcs if w != meta])
    assert captures and len(captures) == len(set(captures))
    merge.daily_merge(datetime.now(UTC).date(), cfg)
    merge.bigmerge(cfg)
    big = Layout.from_settings(cfg).big_cdx("cdxj").read_text().splitlines()
    assert big == expected_index(oracle, data_warcs, "cdxj")  # every line, exactly once

    # preservation selects it, and its package says the harvest was partial
    with hdb.connect() as conn:
        assert jobs_ready(conn) == [job]
        info = load_job(conn, job)
    info.files = [JobFile(name=meta.name, path=meta, role="metadata")]
    bag_info = bag_info_for(info, "ark:/99999/hfx", PreservationConfig())
    assert bag_info["Harvest-Status"].startswith("partial")
    assert bag_info["Job-Id"] == str(job)
