"""kill -9 at every step of the chain, run again: every WARC indexed exactly once, no CDX or PATH
line lost or doubled, and no original deleted before its copies verify."""

from __future__ import annotations

import multiprocessing
import os
import random
import shutil
import signal
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from harvestflow import db
from harvestflow import settings as settings_mod
from harvestflow.atomic import tmp_path as tmp_path_beside
from indexing.cdx import index_warc
from indexing.chain import run_chain
from indexing.cleanup import clean_arc_repository
from indexing.crashpoints import ENV, EXIT_CODE
from indexing.dedup_index import sidecar_lines
from indexing.files import sha1_of
from indexing.layout import Layout
from indexing.merge import bigmerge, daily_merge
from tests.support.chainkit import expected_indexes, job_warcs, make_harvest, make_job

pytestmark = pytest.mark.services

CRASH_POINTS = [
    "ingest.placed",
    "ingest.recorded",
    "index.wrote_cdx11",
    "index.wrote_cdxj",
    "index.dedup_written",
    "index.recorded",
    "transfer.copied",
    "transfer.path_written",
    "transfer.recorded",
    "backup.copied",
    "backup.recorded",
    "delete.unlinked",
    "merge.written",
    "bigmerge.renamed",
    "cleanup.unlinked",
]


def _chain_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backup: bool = False
) -> settings_mod.Settings:
    """The chain's settings on the test's own data directory, free-space check off (and the
    backup module on with ``backup``)."""
    monkeypatch.setenv("HARVESTFLOW_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HARVESTFLOW_INDEXING__MIN_FREE_BYTES", "0")
    if backup:
        monkeypatch.setenv("HARVESTFLOW_INDEXING__BACKUP", "backup")
    settings_mod.reset()
    return settings_mod.get_settings()


def _run_all(crash: str | None) -> None:
    """The whole chain as the DAGs run it, in a forked child (kill -9 = ``os._exit`` there)."""
    os.environ.pop(ENV, None)
    if crash:
        os.environ[ENV] = crash
    settings_mod.reset()
    run_chain()
    daily_merge(datetime.now(UTC).date())
    bigmerge()
    clean_arc_repository()
    os._exit(0)


def _run(crash: str | None) -> int:
    db.dispose_engines()  # the child must not share the parent's pooled connections
    child = multiprocessing.get_context("fork").Process(target=_run_all, args=(crash,))
    child.start()
    child.join(300)
    assert child.exitcode in (0, EXIT_CODE), f"chain run failed (exit {child.exitcode})"
    return int(child.exitcode)


def _originals_safe(warcs: list[Path], sums: dict[str, str], data: Path, hid: int) -> None:
    """Every original already deleted has a verified final copy and a verified backup."""
    for w in warcs:
        if not w.exists():
            final = data / "repository" / "loc1" / str(hid) / w.name
            backup = data / "backup" / str(hid) / w.name
            assert sha1_of(final) == sums[w.name], f"{w.name} deleted before its copy verified"
            assert sha1_of(backup) == sums[w.name], f"{w.name} deleted before its backup verified"


@pytest.mark.parametrize("point", CRASH_POINTS)
def test_crash_anywhere_then_rerun_indexes_each_warc_exactly_once(
    point: str,
    db_engine: sa.Engine,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    oracle: Path,
):
    cfg = _chain_settings(tmp_path, monkeypatch, backup=True)
    hid = make_harvest(db_engine, f"crash-{point}")
    _, job_dir = make_job(db_engine, cfg.data_dir, hid, files=2, seed=9, records=15)
    warcs = job_warcs(job_dir)
    sums = {w.name: sha1_of(w) for w in warcs}
    (tmp_path / "orig").mkdir()
    originals = [Path(shutil.copy2(w, tmp_path / "orig" / w.name)) for w in warcs]
    expected = expected_indexes(oracle, originals, ("cdx11", "cdxj"))

    assert _run(point) == EXIT_CODE, f"crash point {point} was never reached"
    _originals_safe(warcs, sums, cfg.data_dir, hid)
    assert _run(None) == 0
    assert _run(None) == 0  # and once more: nothing changes
    _assert_complete(cfg, db_engine, hid, warcs, sums, originals, expected, tmp_path)
    settings_mod.reset()


def _assert_complete(
    cfg: settings_mod.Settings,
    db_engine: sa.Engine,
    hid: int,
    warcs: list[Path],
    sums: dict[str, str],
    originals: list[Path],
    expected: dict[str, list[str]],
    tmp_path: Path,
) -> None:
    layout = Layout.from_settings(cfg)
    for fmt in ("cdx11", "cdxj"):
        assert layout.big_cdx(fmt).read_text().splitlines() == expected[fmt]
    path_lines = layout.big_path().read_text().splitlines()
    assert sorted(line.split("\t")[0] for line in path_lines) == sorted(sums)
    with db_engine.connect() as conn:
        rows = conn.execute(
            sa.text("SELECT file_name, stage, source_deleted_at IS NOT NULL FROM index_manifest")
        ).all()
    assert sorted(r[0] for r in rows) == sorted(sums)
    assert all(r[1] == "done" and r[2] for r in rows)
    _originals_safe(warcs, sums, cfg.data_dir, hid)
    assert not any(w.exists() for w in warcs)
    leftovers = [p for p in (cfg.data_dir / "indexing").rglob("*") if p.is_file()]
    assert leftovers == []
    # the dedup sidecars (record id, ETag, Last-Modified of each capture): one per file, each
    # holding its file's response captures exactly once
    sidecars = {p.name: p.read_text().splitlines() for p in layout.dedup_dir(hid).glob("*.dedup")}
    assert sidecars == {
        o.name + ".dedup": sidecar_lines(index_warc(o).captures, o.name) for o in originals
    }


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sigkill_at_random_moments_then_rerun_indexes_each_warc_exactly_once(
    seed: int,
    db_engine: sa.Engine,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    oracle: Path,
):
    """Real SIGKILLs at random times (mid-copy, mid-merge, mid-transaction), not named points."""
    cfg = _chain_settings(tmp_path, monkeypatch, backup=True)
    hid = make_harvest(db_engine, f"sigkill-{seed}")
    _, job_dir = make_job(db_engine, cfg.data_dir, hid, files=3, seed=20 + seed, records=40)
    warcs = job_warcs(job_dir)
    sums = {w.name: sha1_of(w) for w in warcs}
    (tmp_path / "orig").mkdir()
    originals = [Path(shutil.copy2(w, tmp_path / "orig" / w.name)) for w in warcs]
    expected = expected_indexes(oracle, originals, ("cdx11", "cdxj"))

    # each killed run keeps some progress; the delay grows until a run gets to its end
    rnd = random.Random(seed)
    kills = 0
    for attempt in range(30):
        db.dispose_engines()
        child = multiprocessing.get_context("fork").Process(target=_run_all, args=(None,))
        child.start()
        child.join(rnd.uniform(0.5, 1.5) * 0.01 * 1.4**attempt)
        if child.exitcode is not None:
            assert child.exitcode == 0
            break
        os.kill(child.pid or 0, signal.SIGKILL)
        child.join(30)
        kills += 1
        _originals_safe(warcs, sums, cfg.data_dir, hid)
    assert kills >= 3, f"only {kills} run(s) killed"
    assert _run(None) == 0
    assert _run(None) == 0
    _assert_complete(cfg, db_engine, hid, warcs, sums, originals, expected, tmp_path)
    settings_mod.reset()


def test_crash_while_quarantining_then_rerun_finishes_the_quarantine(
    db_engine: sa.Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    cfg = _chain_settings(tmp_path, monkeypatch)
    hid = make_harvest(db_engine, "crash-quarantine")
    job_id, job_dir = make_job(db_engine, cfg.data_dir, hid, files=1, seed=23, records=10)
    good = job_warcs(job_dir)[0]
    bad = job_dir / "warcs" / f"{job_id}-{hid}-20261122031700000-00007-crawler.warc.gz"
    bad.write_bytes(good.read_bytes()[: good.stat().st_size // 2])

    assert _run("quarantine.recorded") == EXIT_CODE
    assert _run(None) == 0
    layout = Layout.from_settings(cfg)
    assert (layout.quarantine_dir() / bad.name).exists()
    working = [p.name for d in layout.worker_dirs() if d.is_dir() for p in d.iterdir()]
    assert working == []
    with db_engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT file_name, stage FROM index_manifest")).all()
    stages: dict[str, str] = {r[0]: r[1] for r in rows}
    assert stages.pop(bad.name) == "quarantined"
    assert set(stages.values()) == {"done"}
    assert bad.exists()  # a quarantined original is never cleaned
    settings_mod.reset()


def test_a_placement_killed_before_its_rename_leaves_no_temporary_copy_once_the_file_is_done(
    db_engine: sa.Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A kill between a placement's link and its rename (seen once among the random SIGKILLs
    above) leaves the WARC under a hidden temporary name in the worker's directory; the rerun
    places it under a name of its own, so the old one is the chain's to remove."""
    cfg = _chain_settings(tmp_path, monkeypatch)
    hid = make_harvest(db_engine, "killed-placement")
    _, job_dir = make_job(db_engine, cfg.data_dir, hid, files=1, seed=29, records=10)
    warc = next(w for w in job_warcs(job_dir) if "metadata" not in w.name)
    layout = Layout.from_settings(cfg)
    worker = layout.worker_dirs()[0]
    worker.mkdir(parents=True, exist_ok=True)
    left = tmp_path_beside(worker / warc.name)  # what place() had made when it was killed
    os.link(warc, left)
    other = worker / f".{warc.name}x.1.abcdef01.tmp"  # another file's temporary name: kept
    other.write_bytes(b"x")

    assert _run(None) == 0
    assert not left.exists()
    assert other.exists()
    other.unlink()
    leftovers = [p for p in (cfg.data_dir / "indexing").rglob("*") if p.is_file()]
    assert leftovers == []
    with db_engine.connect() as conn:
        stages = set(conn.execute(sa.text("SELECT stage FROM index_manifest")).scalars())
    assert stages == {"done"}
    settings_mod.reset()
