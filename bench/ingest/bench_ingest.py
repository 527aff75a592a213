"""The ingest benchmark's own side (``bench/run ingest``, bench/ingest/spec.py): harvestflow's
preservation ingest of a finished job whose WARCs are the generated files.

Everything it does to call a file preserved is in the timing: a DONE job recorded (its WARCs
hard links of the generated files under the job's names), the BagIt bag staged (sha256 +
sha512 of every file), the upload with the staged SHA-256 checked by the store (the whole
file's for a file up to the multipart threshold, as the 64 MiB WARCs here; each part's above
it), HEAD verification, the full re-read of the
sampled share (the settings' ``verify_sample_rate``, 1.0 = every file) and the DB bookkeeping.

    python bench/ingest/bench_ingest.py OUT FILE...   (the first FILE is the metadata WARC)
"""

from __future__ import annotations

import copy
import logging
import os
import random
import socket
import sys
import uuid
from pathlib import Path

import sqlalchemy as sa

MiB = 1024 * 1024


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port(grpc: bool = False) -> int:
    for _ in range(500):
        port = random.randint(20000, 44000)
        if _free(port) and (not grpc or _free(port + 10000)):
            return port
    raise RuntimeError("no free port")


def make_files(repo: Path, total_mb: int, file_mb: int) -> list[Path]:
    repo.mkdir(parents=True, exist_ok=True)
    files = []
    count = max(1, total_mb // file_mb)
    for n in range(count):
        path = repo / f"src-{n:05d}.warc.gz"
        with path.open("wb") as fh:
            for _ in range(file_mb // 8):
                fh.write(os.urandom(8 * MiB))
        files.append(path)
    meta = repo / "src-metadata.warc.gz"
    meta.write_bytes(os.urandom(2 * MiB))
    return [meta, *files]


def make_job(engine: sa.Engine, sources: list[Path], repo: Path) -> int:
    """A DONE job whose WARCs are hard links of the generated files under the job's names."""
    with engine.begin() as conn:
        hid = conn.execute(
            sa.text(
                "INSERT INTO harvestdefinitions (name, kind) VALUES ('bench', 'full')"
                " ON CONFLICT (name) DO UPDATE SET name = 'bench' RETURNING harvest_id"
            )
        ).scalar_one()
        job_id = conn.execute(
            sa.text(
                "INSERT INTO jobs (harvest_id, harvest_num, job_index, status, channel,"
                " template_name, template, seedlist, startdate, enddate)"
                " SELECT :h, 1, coalesce(max(job_index), 0) + 1, 3, 'LARGE', 'default', '{}',"
                " '', now(), now() FROM jobs WHERE harvest_id = :h RETURNING job_id"
            ),
            {"h": hid},
        ).scalar_one()
        where = repo / f"job-{job_id}"
        where.mkdir(parents=True)
        for n, src in enumerate(sources):
            name = (
                f"{job_id}-metadata-1.warc.gz"
                if n == 0
                else f"{job_id}-{hid}-20261122000000000-{n:05d}-bench.warc.gz"
            )
            os.link(src, where / name)
            conn.execute(
                sa.text(
                    "INSERT INTO index_manifest (file_name, job_id, harvest_id, source_path,"
                    " size, stage, final_path) VALUES (:n, :j, :h, :s, :z, 'transferred', :s)"
                ),
                {"n": name, "j": job_id, "h": hid, "s": str(where / name), "z": src.stat().st_size},
            )
    return int(job_id)


def main(argv: list[str]) -> int:
    out, sources = Path(argv[0]), [Path(p) for p in argv[1:]]
    logging.basicConfig(level=logging.WARNING)
    from harvestflow import db
    from harvestflow.settings import Settings, get_settings
    from preservation.ingest import ingest_job
    from preservation.staging import stage_package

    settings = get_settings()
    engine = db.get_engine(settings.harvest_db_url)
    job_id = make_job(engine, sources, settings.path("repository"))
    data = copy.deepcopy(settings.data)
    bucket = f"ours-{uuid.uuid4().hex[:12]}"
    data["s3"]["bucket"] = bucket
    mine = Settings(data, settings.source)
    stage_package(job_id, mine)
    result = ingest_job(job_id, mine)
    if result["status"] != "preserved":
        raise SystemExit(f"ingest failed: {result}")
    (out / "bucket.txt").write_text(bucket + "\n")
    db.dispose_engines()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
