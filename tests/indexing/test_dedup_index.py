"""Dedup across jobs: a snapshot job on the domains of an earlier selective job (another
definition) gets that job's captures from the merged CDX, writes revisits for the unchanged
files — an identical payload at a new URL included — and counts the bytes saved; its revisits
replay through the replay service while the originals are only in S3."""

from __future__ import annotations

import hashlib
import logging
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from warcio.archiveiterator import ArchiveIterator

from access.config import AccessConfig
from access.service import ReplayService
from app.demo.samplesite import start
from harvestflow import settings as settings_mod
from indexing import chain, cleanup, manifest, merge
from indexing.dedup_index import dedup_index_for_job
from preservation.ingest import ingest_job
from tests.support.crawl import make_job, run_crawl
from tests.support.replay import access_settings, get, replay_venv  # noqa: F401 (fixtures)

pytestmark = pytest.mark.services


def _insert(conn: sa.Connection, sql: str, **params: object) -> int:
    return int(conn.execute(sa.text(sql + " RETURNING 1"), params).scalar_one() or 0)


def _definitions(engine: sa.Engine, data_dir: Path, seeds: str) -> tuple[int, int, Path, int]:
    """A DONE selective job (its own definition) and a NEW snapshot job of a first step (no
    previous step) whose configuration is the domain example-a.test: (selective definition,
    selective job, its directory, snapshot job)."""
    with engine.begin() as c:
        x = c.execute
        sel = x(sa.text("INSERT INTO harvestdefinitions (name, kind) VALUES ('sel', 'partial')"
                        " RETURNING harvest_id")).scalar_one()  # fmt: skip
        snap = x(sa.text("INSERT INTO harvestdefinitions (name, kind) VALUES ('snap', 'full')"
                         " RETURNING harvest_id")).scalar_one()  # fmt: skip
        x(sa.text("INSERT INTO fullharvests (harvest_id) VALUES (:h)"), {"h": snap})
        tpl = x(sa.text("INSERT INTO templates (name) VALUES ('dedup-t') RETURNING template_id"))
        dom = x(sa.text("INSERT INTO domains (name) VALUES ('example-a.test') RETURNING domain_id"))
        cfg = x(
            sa.text("INSERT INTO configurations (name, domain_id, template_id) VALUES"
                    " ('default', :d, :t) RETURNING config_id"),
            {"d": dom.scalar_one(), "t": tpl.scalar_one()},
        ).scalar_one()  # fmt: skip
        job_sql = (
            "INSERT INTO jobs (harvest_id, harvest_num, job_index, status, channel, snapshot,"
            " template_name, template, seedlist) VALUES (:h, 1, 0, :s, 'C', :snap, 'default',"
            " CAST('{}' AS jsonb), :seeds) RETURNING job_id"
        )
        sel_job = x(sa.text(job_sql), {"h": sel, "s": 3, "snap": False, "seeds": seeds})
        sel_job_id = int(sel_job.scalar_one())
        snap_job = x(sa.text(job_sql), {"h": snap, "s": 0, "snap": True, "seeds": ""})
        snap_job_id = int(snap_job.scalar_one())
        x(sa.text("INSERT INTO job_configs (job_id, config_id) VALUES (:j, :c)"),
          {"j": snap_job_id, "c": cfg})  # fmt: skip
        sel_dir = data_dir / "jobs" / str(sel) / str(sel_job_id) / "20261120120000"
        x(sa.text("UPDATE jobs SET job_dir = :d WHERE job_id = :j"),
          {"d": str(sel_dir), "j": sel_job_id})  # fmt: skip
    return int(sel), sel_job_id, sel_dir, snap_job_id


def _records(warcs: list[Path]) -> dict[str, tuple[str, object]]:
    found = {}
    for warc in warcs:
        with warc.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                if rec.rec_type in ("response", "revisit"):
                    found[rec.rec_headers.get_header("WARC-Target-URI")] = (rec.rec_type, rec)
    return found


@pytest.mark.usefixtures("access_settings")
def test_a_snapshot_after_a_selective_job_on_its_domains_revisits_and_replays_from_s3(
    db_engine: sa.Engine,
    fresh_bucket: str,
    caplog: pytest.LogCaptureFixture,
):
    settings_mod.reset()
    settings = settings_mod.get_settings()
    cfg = AccessConfig.from_settings(settings)
    site = start()
    try:
        front = site.url("www.example-a.test", "/")
        big = site.url("static.example-a.test", "/big.bin?size=30000")
        copy = site.url("static.example-a.test", "/big.bin?size=30000&copy=2")  # same bytes
        hid, sel_job, sel_dir, snap_job = _definitions(db_engine, settings.data_dir, front)
        run_crawl(make_job(site, [front, big], job_id=sel_job, harvest_id=hid), sel_dir)
        # the selective job indexed, merged, preserved in S3, then every local copy deleted
        run = chain.run_chain(settings)
        assert run["done"] == run["processed"] >= 2 and not run["quarantined"]
        merge.daily_merge(datetime.now(UTC).date(), settings)
        merge.bigmerge(settings)
        cleanup.clean_arc_repository(settings)
        assert ingest_job(sel_job, settings)["status"] == "preserved"
        originals = [e for e in manifest.in_stages(db_engine, ("done",)) if e.job_id == sel_job]
        for entry in originals:
            Path(entry.final_path or "").unlink()
        assert not [p for e in originals for p in settings.data_dir.rglob(e.file_name)]

        # the snapshot job: its dedup index holds the selective job's captures on its domain
        with db_engine.connect() as conn:
            job = conn.execute(sa.text("SELECT * FROM jobs WHERE job_id = :j"),
                               {"j": snap_job}).first()  # fmt: skip
            snap_dir = settings.data_dir / "jobs" / "snap" / "20261127120000"
            snap_dir.mkdir(parents=True)
            index = dedup_index_for_job(conn, job, snap_dir)
        assert index is not None
        indexed = {ln.split("\t")[0] for ln in Path(index).read_text().splitlines()}
        assert front in indexed and big in indexed
        second = run_crawl(
            make_job(site, [front, copy], job_id=snap_job, harvest_id=job.harvest_id,
                     dedup_index=index),
            snap_dir,
        )  # fmt: skip
        served = {(r.host, r.path): r.sha1 for r in site.requests}
    finally:
        site.stop()  # from now on only the archive can answer

    recs = _records(second.data_warcs())
    revisits = {u: r for u, (t, r) in recs.items() if t == "revisit"}
    images = [u for u in revisits if u.endswith(".png")]
    assert len(images) >= 10
    assert recs[front][0] == "response"  # text is not deduplicated
    # the identical payload at another URL refers to the URL it was stored under
    target = revisits[copy].rec_headers.get_header("WARC-Refers-To-Target-URI")  # type: ignore[attr-defined]
    assert target == big
    # the bytes saved: the payloads written as revisits, counted in the crawl report
    sizes = {f[3]: int(f[2]) for f in second.log_fields() if f[11] == "duplicate:digest"}
    assert set(sizes) == {u for u in revisits if u.split("/")[-1] != "etag.html"}
    assert sizes[copy] == 30000
    report = (second.out / "reports" / "crawl-report.txt").read_text()
    assert f"storage saved by deduplication: {sum(sizes.values())} bytes" in report

    # indexed, then replayed: each revisit gives the original's payload, read from S3
    run = chain.run_chain(settings)
    assert not run["quarantined"]
    merge.daily_merge(datetime.now(UTC).date(), settings)
    merge.bigmerge(settings)
    ts = second.line_for(copy)[8][:14]
    service = ReplayService(settings)
    service.start()
    caplog.set_level(logging.INFO, logger="access.resolver")
    try:
        for url in [copy, *images[:4]]:
            status, body = get(cfg.replay_url("all", ts, url, "id_"))
            assert status == 200, (url, body[:200])
            host, path = url.split("/", 3)[2].split(":")[0], "/" + url.split("/", 3)[3]
            sent = served[(host, "/big.bin?size=30000&copy=2" if url == copy else path)]
            assert hashlib.sha1(body).hexdigest() == sent, url
    finally:
        service.stop()
    fetched = {
        m.group(1) for r in caplog.records if (m := re.search(r"GET /warc/(\S+) ", r.getMessage()))
    }
    assert fetched & {e.file_name for e in originals}  # the originals came from S3
