"""Helpers of the chain tests: finished jobs with WARCs in the DB, and the expected indexes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import sqlalchemy as sa

from tests.support.cdx_oracle import reference_lines, reference_lines_by_format
from tests.support.warcgen import write_warc


def wipe_chain_dirs(data_dir: Path) -> None:
    """Remove the job directories and the chain's working, index and repository folders.

    Why: DAG tests share their pytest session's data directory while each gets a fresh database
    whose ids restart at 1, so job 1's directory and files of an earlier test would collide
    with (or be taken in as) this test's.
    """
    for name in ("jobs", "indexing", "index", "repository"):
        shutil.rmtree(data_dir / name, ignore_errors=True)


def make_harvest(engine: sa.Engine, name: str) -> int:
    with engine.begin() as conn:
        return int(
            conn.execute(
                sa.text(
                    "INSERT INTO harvestdefinitions (name, kind) VALUES (:n, 'partial')"
                    " RETURNING harvest_id"
                ),
                {"n": name},
            ).scalar_one()
        )


def make_job(
    engine: sa.Engine,
    data_dir: Path,
    harvest_id: int,
    *,
    files: int = 2,
    status: int = 3,
    seed: int = 0,
    records: int = 25,
) -> tuple[int, Path]:
    """A job row with status ``status`` and its WARCs (data + metadata + one .open file)."""
    with engine.begin() as conn:
        job_id = int(
            conn.execute(
                sa.text(
                    "INSERT INTO jobs (harvest_id, harvest_num, job_index, status, channel,"
                    " template_name, template, seedlist)"
                    " VALUES (:h, 1, (SELECT count(*) FROM jobs), :s, 'CIBLEE', 'default',"
                    " CAST(:t AS jsonb), 'http://example.com/') RETURNING job_id"
                ),
                {"h": harvest_id, "s": status, "t": json.dumps({})},
            ).scalar_one()
        )
        job_dir = data_dir / "jobs" / str(harvest_id) / str(job_id) / "20261122031500"
        conn.execute(
            sa.text("UPDATE jobs SET job_dir = :d WHERE job_id = :j"),
            {"d": str(job_dir), "j": job_id},
        )
    warcs = job_dir / "warcs"
    warcs.mkdir(parents=True)
    for serial in range(files):
        name = f"{job_id}-{harvest_id}-20261122031500{serial:03d}-{serial:05d}-crawler.warc.gz"
        write_warc(warcs / name, n=records, seed=seed * 100 + serial)
    write_warc(warcs / f"{job_id}-metadata-1.warc.gz", n=3, seed=seed * 100 + 99)
    write_warc(
        warcs / f"{job_id}-{harvest_id}-20261122031600000-{files:05d}-crawler.warc.gz.open",
        n=2,
        seed=7,
    )
    return job_id, job_dir


def job_warcs(job_dir: Path) -> list[Path]:
    return sorted(p for p in (job_dir / "warcs").iterdir() if p.name.endswith(".warc.gz"))


def expected_index(oracle: Path, warcs: list[Path], fmt: str) -> list[str]:
    """The reference indexer's lines of all ``warcs``, merged: byte order, each line once.

    One oracle process for all the files (it indexes each input in turn, naming each line's
    file by its base name, as for a single input): each process costs about half a CPU-second
    of start-up, and the crash tests ask for several files' lines in every case."""
    if not warcs:
        return []
    return _merged(reference_lines(oracle, warcs, fmt))


def expected_indexes(
    oracle: Path, warcs: list[Path], fmts: tuple[str, ...] = ("cdx11", "cdxj")
) -> dict[str, list[str]]:
    """:func:`expected_index` of ``warcs`` in each format of ``fmts``, from one oracle process
    for them all (:func:`tests.support.cdx_oracle.reference_lines_by_format`)."""
    if not warcs:
        return {fmt: [] for fmt in fmts}
    found = reference_lines_by_format(oracle, warcs, fmts)
    return {fmt: _merged(lines) for fmt, lines in found.items()}


def _merged(lines: list[str]) -> list[str]:
    """Merged as our index is: byte order, each line once."""
    return sorted(set(lines), key=lambda s: s.encode("utf-8"))
