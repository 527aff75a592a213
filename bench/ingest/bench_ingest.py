"""Benchmark: harvestflow's preservation ingest vs a plain boto3 ``upload_file`` loop.

Same files (generated random data under WARC names, 2 GB by default), same SeaweedFS, same run.
harvestflow's time includes everything it does to call a file preserved: staging the BagIt bag
(hard links + sha256/sha512 of every file), the upload with per-part SHA-256 checksums checked by
the server and the whole-file SHA-256 compared before committing, HEAD verification, the full
re-read of the sampled share (``--sample-rate``, default the settings' 1.0 = every file) and the
DB bookkeeping. The peer only uploads (boto3 defaults: 8 MB multipart, 10 threads, CRC32).
Rounds alternate the order (peer first, then harvestflow first) so that neither always gets the
warmer cache. Prints MB/s for each and the throughput ratio harvestflow / boto3 (target ≥ 0.8).

    .venv/bin/python bench/ingest/bench_ingest.py [--total-mb 2048] [--file-mb 128] [--rounds 2]

Starts its own embedded PostgreSQL and SeaweedFS on free loopback ports in a temporary folder.
"""

from __future__ import annotations

import argparse
import copy
import logging
import os
import random
import shutil
import socket
import statistics
import sys
import tempfile
import time
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


def make_job(engine: sa.Engine, sources: list[Path], repo: Path, round_no: int) -> int:
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
                " VALUES (:h, 1, :i, 3, 'LARGE', 'default', '{}', '', now(), now())"
                " RETURNING job_id"
            ),
            {"h": hid, "i": round_no},
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total-mb", type=int, default=2048)
    parser.add_argument("--file-mb", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--sample-rate",
        type=float,
        default=None,
        help="share of data files re-read (default: settings, 1.0)",
    )
    parser.add_argument("--part-mb", type=int, default=None, help="override part_size")
    parser.add_argument("--threads", type=int, default=None, help="override upload_threads")
    parser.add_argument("--tmp", default=None, help="parent folder of the temporary data dir")
    args = parser.parse_args()
    logging.basicConfig(
        level=os.environ.get("BENCH_LOG", "WARNING"),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    for noisy in ("botocore", "urllib3", "boto3", "s3transfer"):
        logging.getLogger(noisy).setLevel(logging.WARNING)

    data_dir = Path(tempfile.mkdtemp(prefix="hf-bench-ingest-", dir=args.tmp))
    data_dir.chmod(0o755)
    os.environ.update(
        {
            "HARVESTFLOW_DATA_DIR": str(data_dir),
            "HARVESTFLOW_POSTGRES__PORT": str(free_port()),
            "HARVESTFLOW_S3__S3_PORT": str(free_port(True)),
            "HARVESTFLOW_S3__MASTER_PORT": str(free_port(True)),
            "HARVESTFLOW_S3__VOLUME_PORT": str(free_port(True)),
            "HARVESTFLOW_S3__FILER_PORT": str(free_port(True)),
            # one copy, as the boto3 loop it is compared with writes one
            "HARVESTFLOW_S3_REPLICA__ENABLED": "false",
        }
    )
    from harvestflow import db, services
    from harvestflow import settings as settings_mod
    from harvestflow.s3 import s3_client
    from harvestflow.settings import Settings
    from preservation.ingest import ingest_job
    from preservation.staging import stage_package

    settings_mod.reset()
    settings = settings_mod.get_settings()
    services.start_all(settings)
    try:
        client = s3_client(settings)
        engine = db.get_engine(settings.harvest_db_url)
        t0 = time.monotonic()
        sources = make_files(data_dir / "generated", args.total_mb, args.file_mb)
        total = sum(p.stat().st_size for p in sources)
        print(
            f"generated {len(sources)} files, {total / MiB:.0f} MiB of random data"
            f" in {time.monotonic() - t0:.1f}s",
            flush=True,
        )
        peer_times: list[float] = []
        ours_times: list[float] = []
        for round_no in range(args.rounds):
            job_id = make_job(engine, sources, data_dir / "repository", round_no)
            tag = uuid.uuid4().hex[:8]

            def peer(tag: str = tag) -> float:
                bucket = f"peer-{tag}"
                client.create_bucket(Bucket=bucket)
                start = time.monotonic()
                for path in sources:
                    client.upload_file(str(path), bucket, f"peer/{path.name}")
                elapsed = time.monotonic() - start
                # upload_file raises on a failed upload; check what the store holds all the same
                listed = client.list_objects_v2(Bucket=bucket, Prefix="peer/").get("Contents", [])
                stored = {o["Key"]: o["Size"] for o in listed}
                wanted = {f"peer/{p.name}": p.stat().st_size for p in sources}
                if stored != wanted:
                    raise SystemExit(f"benchmark FAILED: the peer's bucket holds {stored}")
                return elapsed

            def ours(tag: str = tag, job_id: int = job_id) -> float:
                data = copy.deepcopy(settings.data)
                data["s3"]["bucket"] = f"ours-{tag}"
                if args.sample_rate is not None:
                    data["preservation"]["verify_sample_rate"] = args.sample_rate
                if args.part_mb:
                    data["preservation"]["part_size"] = args.part_mb * MiB
                if args.threads:
                    data["preservation"]["upload_threads"] = args.threads
                mine = Settings(data, settings.source)
                start = time.monotonic()
                staged = stage_package(job_id, mine)
                staged_s = time.monotonic() - start
                result = ingest_job(job_id, mine)
                elapsed = time.monotonic() - start
                if result["status"] != "preserved":
                    raise SystemExit(f"ingest failed: {result}")
                print(
                    f"  harvestflow: staging {staged_s:.1f}s ({staged['files']} files),"
                    f" ingest+verify {elapsed - staged_s:.1f}s,"
                    f" {result['reread']} objects re-read",
                    flush=True,
                )
                return elapsed

            order = [("boto3", peer), ("harvestflow", ours)]
            if round_no % 2:
                order.reverse()
            for name, run in order:
                seconds = run()
                (peer_times if name == "boto3" else ours_times).append(seconds)
                print(
                    f"round {round_no + 1} {name:12s} {seconds:7.1f}s"
                    f"  {total / MiB / seconds:7.1f} MiB/s",
                    flush=True,
                )
        ratios = [p / o for p, o in zip(peer_times, ours_times, strict=True)]
        per_round = ", ".join(f"{r:.2f}" for r in ratios)
        print(f"\nper-round ratio harvestflow/boto3: {per_round}")
        peer_s, ours_s = statistics.median(peer_times), statistics.median(ours_times)
        print(
            f"boto3 upload_file loop : {total / MiB / peer_s:7.1f} MiB/s (median of"
            f" {len(peer_times)})"
        )
        print(f"harvestflow ingest     : {total / MiB / ours_s:7.1f} MiB/s (with verification)")
        print(
            f"ratio harvestflow/boto3: median of the rounds' ratios {statistics.median(ratios):.2f}"
            f" (target >= 0.8); ratio of the medians {peer_s / ours_s:.2f};"
            f" load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}"
        )
    finally:
        db.dispose_engines()
        services.stop_all(settings)
        shutil.rmtree(data_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
