"""The chain end to end on a real PostgreSQL: ingest → index → transfer → backup → delete,
daily merge, bigmerge, cleanarcrepository, collections, quarantine."""

from __future__ import annotations

import hashlib
import os
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from app.cli.main import build_parser
from harvestflow import settings as settings_mod
from indexing import chain, cleanup, manifest, merge
from indexing.errors import IndexingError
from indexing.files import sha1_of
from indexing.layout import Layout
from preservation.records import file_preserved
from tests.support.chainkit import expected_index, job_warcs, make_harvest, make_job
from tests.support.warcgen import write_warc

pytestmark = pytest.mark.services


@pytest.fixture
def cfg(db_engine: sa.Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Settings with a per-test data directory and a directory backup."""
    monkeypatch.setenv("HARVESTFLOW_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HARVESTFLOW_INDEXING__MIN_FREE_BYTES", "0")
    monkeypatch.setenv("HARVESTFLOW_INDEXING__BACKUP", "backup")
    settings_mod.reset()
    yield settings_mod.get_settings()
    settings_mod.reset()


def _stages(engine: sa.Engine) -> dict[str, str]:
    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT file_name, stage FROM index_manifest"))
        return {r[0]: r[1] for r in rows}


def test_chain_indexes_transfers_backs_up_merges_and_cleans(
    cfg: settings_mod.Settings, db_engine: sa.Engine, oracle: Path
):
    data = cfg.data_dir
    hid = make_harvest(db_engine, "daily")
    _, job_dir = make_job(db_engine, data, hid, files=3, seed=1)
    make_job(db_engine, data, hid, files=1, status=2, seed=2)  # still running: not ingested
    warcs = job_warcs(job_dir)
    sums = {w.name: sha1_of(w) for w in warcs}

    taken = chain.ingest(cfg)
    assert sorted(taken) == sorted(w.name for w in warcs)
    assert chain.ingest(cfg) == []
    layout = Layout.from_settings(cfg)
    queued = [len(list(d.iterdir())) for d in layout.worker_dirs()]
    assert sorted(queued) == [2, 2]  # 4 files over 2 workers, fewest-queued first

    results = [chain.process_file(name, cfg) for name in chain.pending_files(cfg)]
    assert {r["stage"] for r in results} == {"done"}
    assert set(_stages(db_engine).values()) == {"done"}
    for module in ("transfer", "backup", "delete"):
        assert not any(layout.module_dir(module).iterdir())
    assert all(not any(d.iterdir()) for d in layout.worker_dirs())

    today = datetime.now(UTC).date()
    merge.daily_merge(today, cfg)
    merge.bigmerge(cfg)
    for fmt in ("cdx11", "cdxj"):
        big = layout.big_cdx(fmt).read_text().splitlines()
        assert big == expected_index(oracle, warcs, fmt)
    paths = layout.big_path().read_text().splitlines()
    assert len(paths) == len(warcs)
    for line in paths:
        name, final = line.split("\t")
        assert sha1_of(Path(final)) == sums[name]
        assert Path(final).is_relative_to(data / "repository" / "loc1" / str(hid))
        assert sha1_of(data / "backup" / str(hid) / name) == sums[name]

    before = layout.big_cdx("cdxj").read_bytes()
    assert merge.bigmerge(cfg) == {}  # nothing new
    merge.daily_merge(today, cfg)  # a re-run of the day changes nothing either
    merge.bigmerge(cfg)
    assert layout.big_cdx("cdxj").read_bytes() == before

    report = cleanup.clean_arc_repository(cfg)
    assert report["deleted"] == len(warcs)
    assert not any(w.exists() for w in warcs)
    assert [p.name for p in (job_dir / "warcs").iterdir()] == [
        p.name for p in (job_dir / "warcs").iterdir() if p.name.endswith(".open")
    ]
    assert cleanup.clean_arc_repository(cfg)["deleted"] == 0


def test_damaged_and_non_warc_files_are_quarantined_and_never_cleaned(
    cfg: settings_mod.Settings, db_engine: sa.Engine, oracle: Path
):
    hid = make_harvest(db_engine, "bad-input")
    job_id, job_dir = make_job(db_engine, cfg.data_dir, hid, files=2, seed=3)
    good, *_ = job_warcs(job_dir)
    truncated = job_dir / "warcs" / f"{job_id}-{hid}-20261122031700000-00007-crawler.warc.gz"
    full = good.read_bytes()
    truncated.write_bytes(full[: len(full) // 2])
    junk = job_dir / "warcs" / f"{job_id}-{hid}-20261122031800000-00008-crawler.warc.gz"
    junk.write_text("<html>not a warc</html>\n")

    chain.ingest(cfg)
    results = {name: chain.process_file(name, cfg) for name in chain.pending_files(cfg)}
    assert results[truncated.name]["quarantined"]
    assert "damaged at byte offset" in results[truncated.name]["error"]
    assert results[junk.name]["quarantined"]
    assert "not a WARC or ARC file" in results[junk.name]["error"]
    others = [r for n, r in results.items() if n not in (truncated.name, junk.name)]
    assert others and all(r["stage"] == "done" for r in others)

    layout = Layout.from_settings(cfg)
    qdir = layout.quarantine_dir()
    kept = (qdir / (truncated.name + ".cdxj")).read_text().splitlines()
    good_lines = set(expected_index(oracle, [good], "cdxj"))
    assert kept and all(line.replace(truncated.name, good.name) in good_lines for line in kept)
    assert (qdir / truncated.name).exists() and (qdir / junk.name).exists()

    merge.daily_merge(datetime.now(UTC).date(), cfg)
    merge.bigmerge(cfg)
    assert truncated.name not in layout.big_cdx("cdxj").read_text()
    cleanup.clean_arc_repository(cfg)
    assert truncated.exists() and junk.exists()


def test_collection_routing_gives_a_definition_its_own_index(
    cfg: settings_mod.Settings, db_engine: sa.Engine, monkeypatch: pytest.MonkeyPatch
):
    routed = make_harvest(db_engine, "elections")
    plain = make_harvest(db_engine, "other")
    cfg["indexing"]["collections"] = {str(routed): "elections"}
    _, routed_dir = make_job(db_engine, cfg.data_dir, routed, files=1, seed=4)
    _, plain_dir = make_job(db_engine, cfg.data_dir, plain, files=1, seed=5)
    chain.run_chain(cfg)
    merge.daily_merge(datetime.now(UTC).date(), cfg)
    merge.bigmerge(cfg)
    layout = Layout.from_settings(cfg)
    own = layout.big_cdx("cdx11", "elections").read_text()
    main = layout.big_cdx("cdx11").read_text()
    for w in job_warcs(routed_dir):
        assert w.name in own and w.name not in main
    for w in job_warcs(plain_dir):
        assert w.name in main and w.name not in own


def test_no_repository_space_leaves_file_waiting_in_transfer(
    cfg: settings_mod.Settings, db_engine: sa.Engine
):
    hid = make_harvest(db_engine, "full-disk")
    make_job(db_engine, cfg.data_dir, hid, files=1, seed=6)
    names = chain.ingest(cfg)
    cfg["indexing"]["min_free_bytes"] = 1 << 62
    with pytest.raises(chain.NoSpaceError):
        chain.process_file(names[0], cfg)
    layout = Layout.from_settings(cfg)
    assert (layout.module_dir("transfer") / names[0]).exists()
    cfg["indexing"]["min_free_bytes"] = 0
    assert chain.process_file(names[0], cfg)["stage"] == "done"


def test_backup_to_s3_is_verified_before_the_original_is_deleted(
    cfg: settings_mod.Settings,
    db_engine: sa.Engine,
    fresh_bucket: str,
    s3_client,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setenv("HARVESTFLOW_INDEXING__BACKUP", f"s3://{fresh_bucket}/warcs")
    settings_mod.reset()
    cfg = settings_mod.get_settings()
    hid = make_harvest(db_engine, "s3-backup")
    _, job_dir = make_job(db_engine, cfg.data_dir, hid, files=1, seed=10)
    warcs = job_warcs(job_dir)
    sums = {w.name: sha1_of(w) for w in warcs}
    result = chain.run_chain(cfg)
    assert result["done"] == len(warcs)
    for name, digest in sums.items():
        body = s3_client.get_object(Bucket=fresh_bucket, Key=f"warcs/{hid}/{name}")["Body"].read()
        assert hashlib.sha1(body).hexdigest() == digest
    # a backup object that goes missing blocks the deletion of the original
    s3_client.delete_object(Bucket=fresh_bucket, Key=f"warcs/{hid}/{warcs[0].name}")
    report = cleanup.clean_arc_repository(cfg)
    assert warcs[0].exists() and "backup" in report["kept"][warcs[0].name]
    assert report["deleted"] == len(warcs) - 1


def test_ingest_queues_each_file_on_the_worker_with_fewest_files(
    cfg: settings_mod.Settings, db_engine: sa.Engine
):
    hid = make_harvest(db_engine, "balance")
    cfg["indexing"]["index_workers"] = 1
    make_job(db_engine, cfg.data_dir, hid, files=2, seed=17, records=5)  # 2 data + 1 metadata
    backlog = chain.ingest(cfg)  # one worker: w1 gets a backlog of 3 files
    cfg["indexing"]["index_workers"] = 2
    make_job(db_engine, cfg.data_dir, hid, files=3, seed=11, records=5)  # 3 data + 1 metadata
    w1, w2 = Layout.from_settings(cfg).worker_dirs()
    assert len(backlog) == 3 and len(list(w1.iterdir())) == 3
    taken = chain.ingest(cfg)
    assert len(taken) == 4
    workers = {name: (manifest.get(db_engine, name) or pytest.fail(name)).worker for name in taken}
    # queues 3/0: w2 takes three files, then at 3/3 the tie goes to w1 (round robin: 2/2)
    assert sorted(workers.values()) == ["w1", "w2", "w2", "w2"]
    for name, worker in workers.items():
        assert (w1 if worker == "w1" else w2).joinpath(name).exists()


def test_transfer_skips_repository_locations_without_room(
    cfg: settings_mod.Settings, db_engine: sa.Engine, monkeypatch: pytest.MonkeyPatch
):
    cfg["indexing"]["repository_locations"] = ["repository/full", "repository/roomy"]
    cfg["indexing"]["min_free_bytes"] = 55_500
    real_usage = shutil.disk_usage

    def usage(path):  # type: ignore[no-untyped-def]
        found = real_usage(path)
        return found._replace(free=60_000) if Path(path).name == "full" else found

    monkeypatch.setattr(shutil, "disk_usage", usage)
    hid = make_harvest(db_engine, "two-locations")
    _, job_dir = make_job(db_engine, cfg.data_dir, hid, files=1, seed=14, records=5)
    warcs = job_warcs(job_dir)
    small = min(warcs, key=lambda w: w.stat().st_size)
    big = max(warcs, key=lambda w: w.stat().st_size)
    assert small.stat().st_size < 4_500 < big.stat().st_size  # 60,000 free - 55,500 kept
    assert chain.run_chain(cfg)["done"] == len(warcs)
    final = {
        w.name: Path((manifest.get(db_engine, w.name) or pytest.fail(w.name)).final_path or "")
        for w in warcs
    }
    assert final[small.name] == cfg.data_dir / "repository" / "full" / str(hid) / small.name
    assert final[big.name] == cfg.data_dir / "repository" / "roomy" / str(hid) / big.name
    merge.daily_merge(datetime.now(UTC).date(), cfg)
    merge.bigmerge(cfg)
    paths = dict(
        line.split("\t") for line in Layout.from_settings(cfg).big_path().read_text().splitlines()
    )
    assert {name: Path(p) for name, p in paths.items()} == final
    for name, path in final.items():
        assert sha1_of(path) == sha1_of(job_dir / "warcs" / name)


def _flip_last_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))


def test_cleanup_deletes_only_originals_whose_copies_verify(
    cfg: settings_mod.Settings, db_engine: sa.Engine
):
    hid = make_harvest(db_engine, "cleanup-rules")
    job_id, job_dir = make_job(db_engine, cfg.data_dir, hid, files=4, seed=15, records=5)
    chain.run_chain(cfg)
    altered, bad_backup, no_backup, sound, not_done = job_warcs(job_dir)
    entry = {
        w.name: manifest.get(db_engine, w.name) or pytest.fail(w.name) for w in job_warcs(job_dir)
    }
    _flip_last_byte(Path(entry[altered.name].final_path or ""))  # same size, other bytes
    _flip_last_byte(Path(entry[bad_backup.name].backup_location or ""))
    Path(entry[no_backup.name].backup_location or "").unlink()
    manifest.update(db_engine, not_done.name, stage="transferred")  # not through the chain yet

    cfg["indexing"]["cleanup_requires_preservation"] = True
    with pytest.raises(IndexingError, match="no way to ask preservation"):
        cleanup.clean_arc_repository(cfg)  # nobody handed it preservation's answer
    report = cleanup.clean_arc_repository(cfg, preserved=file_preserved)
    assert report["deleted"] == 0
    assert "SHA-1" in report["kept"][altered.name]
    assert "does not verify" in report["kept"][bad_backup.name]
    assert "does not verify" in report["kept"][no_backup.name]
    assert "preservation" in report["kept"][sound.name]
    assert not_done.name not in report["kept"]

    with db_engine.begin() as conn:  # the preservation stage verified the sound file's copy
        conn.execute(
            sa.text("INSERT INTO preservation_packages (job_id, harvest_id) VALUES (:j, :h)"),
            {"j": job_id, "h": hid},
        )
        conn.execute(
            sa.text(
                "INSERT INTO preservation_files (job_id, file_name, role, size, sha256, status)"
                " VALUES (:j, :f, 'data', 1, 'x', 'verified')"
            ),
            {"j": job_id, "f": sound.name},
        )
    # the CLI hands `index clean` preservation's answer (indexing may not import preservation)
    preserved = build_parser().parse_args(["index", "clean"]).preserved
    assert preserved(db_engine, job_id, sound.name)
    assert not preserved(db_engine, job_id, altered.name)
    report = cleanup.clean_arc_repository(cfg, preserved=preserved)
    assert report["deleted"] == 1 and not sound.exists()
    assert all(w.exists() for w in (altered, bad_backup, no_backup, not_done))
    cfg["indexing"]["cleanup_requires_preservation"] = False
    assert cleanup.clean_arc_repository(cfg)["deleted"] == 0  # the other copies still fail


def test_a_warc_dropped_in_a_working_directory_goes_through_the_chain(
    cfg: settings_mod.Settings, db_engine: sa.Engine, oracle: Path, tmp_path: Path
):
    hid = make_harvest(db_engine, "dropped")
    _, job_dir = make_job(db_engine, cfg.data_dir, hid, files=1, seed=16, records=5)
    layout = Layout.from_settings(cfg)
    dropped = []
    for i, where in enumerate((layout.module_dir("transfer"), layout.worker_dirs()[1])):
        where.mkdir(parents=True, exist_ok=True)
        name = f"77-{hid}-2026112203150000{i}-0000{i}-old.warc.gz"
        dropped.append(write_warc(where / name, n=8, seed=160 + i))
    originals = {p.name: (sha1_of(p), tmp_path / p.name) for p in dropped}
    for p in dropped:
        shutil.copy2(p, tmp_path / p.name)

    result = chain.run_chain(cfg)
    assert result["done"] == len(job_warcs(job_dir)) + len(dropped)
    for name, (digest, _) in originals.items():
        entry = manifest.get(db_engine, name) or pytest.fail(name)
        assert entry.stage == "done" and entry.sha1 == digest
        assert sha1_of(Path(entry.final_path or "")) == digest
    for d in [*layout.worker_dirs(), layout.module_dir("transfer"), layout.module_dir("delete")]:
        assert not any(d.iterdir()), d
    merge.daily_merge(datetime.now(UTC).date(), cfg)
    merge.bigmerge(cfg)
    copies = [c for _, c in originals.values()]
    assert layout.big_cdx("cdxj").read_text().splitlines() == expected_index(
        oracle, job_warcs(job_dir) + copies, "cdxj"
    )
    # a copy of a file the chain already finished is left where it is (and said so)
    again = shutil.copy2(copies[0], layout.module_dir("transfer") / copies[0].name)
    assert chain.ingest(cfg) == [] and Path(again).exists()


def test_a_path_line_written_after_its_days_merge_reaches_the_big_files(
    cfg: settings_mod.Settings, db_engine: sa.Engine, oracle: Path
):
    hid = make_harvest(db_engine, "late-transfer")
    _, job_dir = make_job(db_engine, cfg.data_dir, hid, files=2, seed=18, records=5)
    names = sorted(chain.ingest(cfg))
    late, *others = names
    for name in others:
        chain.process_file(name, cfg)
    cfg["indexing"]["min_free_bytes"] = 1 << 62  # no repository has room: late waits
    with pytest.raises(chain.NoSpaceError):
        chain.process_file(late, cfg)
    today = datetime.now(UTC).date()
    merge.daily_merge(today, cfg)
    merge.bigmerge(cfg)
    layout = Layout.from_settings(cfg)

    def in_big_path() -> list[str]:
        return sorted(line.split("\t")[0] for line in layout.big_path().read_text().splitlines())

    assert in_big_path() == others
    cfg["indexing"]["min_free_bytes"] = 0  # room again (say, the next day)
    assert chain.process_file(late, cfg)["stage"] == "done"  # PATH line in its index day's dir
    result = merge.daily_merge(today + timedelta(days=1), cfg)
    assert result["caught_up"] == [today.isoformat()]
    merge.bigmerge(cfg)
    assert in_big_path() == names
    expected = expected_index(oracle, job_warcs(job_dir), "cdxj")
    assert layout.big_cdx("cdxj").read_text().splitlines() == expected  # each line once
    assert merge.daily_merge(today + timedelta(days=2), cfg)["caught_up"] == []


def test_a_location_that_fills_up_during_the_copy_is_chosen_again_later(
    cfg: settings_mod.Settings, db_engine: sa.Engine, monkeypatch: pytest.MonkeyPatch
):
    import errno

    from harvestflow import atomic

    cfg["indexing"]["repository_locations"] = ["repository/full", "repository/roomy"]
    hid = make_harvest(db_engine, "fills-up")
    _, job_dir = make_job(db_engine, cfg.data_dir, hid, files=1, seed=24, records=5)
    name = sorted(chain.ingest(cfg))[0]

    class DiskFull:  # os, whose fsync fails as on a full file system (the "full" location)
        def __getattr__(self, attr: str):  # type: ignore[no-untyped-def]
            return getattr(os, attr)

        def fsync(self, fd: int) -> None:
            if "/repository/full/" in os.readlink(f"/proc/self/fd/{fd}"):
                raise OSError(errno.ENOSPC, "No space left on device")
            os.fsync(fd)

    with monkeypatch.context() as m:
        m.setattr(atomic, "os", DiskFull())
        with pytest.raises(chain.NoSpaceError, match="filled up"):
            chain.process_file(name, cfg)
    full = cfg.data_dir / "repository" / "full"
    assert [p for p in full.rglob("*") if p.is_file()] == []  # no partial copy left there
    assert (manifest.get(db_engine, name) or pytest.fail(name)).final_path is None

    real_usage = shutil.disk_usage
    monkeypatch.setattr(
        shutil,
        "disk_usage",
        lambda p: real_usage(p)._replace(free=0) if Path(p).name == "full" else real_usage(p),
    )
    assert chain.process_file(name, cfg)["stage"] == "done"
    final = Path((manifest.get(db_engine, name) or pytest.fail(name)).final_path or "")
    assert final == cfg.data_dir / "repository" / "roomy" / str(hid) / name
    assert sha1_of(final) == sha1_of(job_dir / "warcs" / name)
