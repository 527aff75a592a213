"""bench/run ingest: harvestflow's preservation ingest of a job's WARCs against a plain boto3
``upload_file`` loop of the same files, each side with its store (and ours with its
PostgreSQL) started inside its own process tree.

Why the store in the side: SeaweedFS does much of an upload's work (hashing, writing, serving
the verification reads); started by the side (``with_store.py``), its CPU is counted for the
side that made it work. The files are random data under WARC names (preservation treats WARCs
as opaque files, so random content is fair): a 2 MiB metadata WARC and 512 MiB of data WARCs
in 64 MiB files (``--quick``: 32 MiB in 8 MiB files), generated once into the work folder.

The output check reads every object each side stored back from the store after the side (the
store started again for it, untimed) and hashes it: the SHA-256 of each stored WARC must be
the source file's, for every file, on both sides (ours' bag tag files are not compared).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from bench.runner.spec import Benchmark, Side, Target

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


class IngestBenchmark(Benchmark):
    name = "ingest"
    title = "preservation ingest of a job's WARCs vs a boto3 upload_file loop, stores counted"
    output_check = (
        "every WARC stored, read back from the store and hashed: the SHA-256 of each equals"
        " its source file's, on both sides"
    )
    unit = "MiB"
    targets = (Target("≥ 0.8 × boto3 per CPU-second (the throughput target, per CPU)", "cpu", 0.8),)

    def __init__(self) -> None:
        self.files: list[Path] = []
        self.env: dict[str, str] = {}
        self.expected: list[str] = []
        self.mib = 0

    def prepare(self, work: Path, quick: bool) -> dict[str, Any]:
        from bench.ingest.bench_ingest import MiB, free_port, make_files

        total_mb, file_mb = (32, 8) if quick else (512, 64)
        source = work / f"files-{total_mb}-{file_mb}"
        if not (source / ".complete").exists():
            shutil.rmtree(source, ignore_errors=True)
            make_files(source, total_mb, file_mb)
            (source / ".complete").touch()
        self.files = [source / "src-metadata.warc.gz", *sorted(source.glob("src-0*.warc.gz"))]
        self.expected = sorted(_sha256(p) for p in self.files)  # also warms the page cache
        self.mib = round(sum(p.stat().st_size for p in self.files) / MiB)
        data = work / "data"
        shutil.rmtree(data, ignore_errors=True)
        data.mkdir(parents=True)
        data.chmod(0o755)
        self.env = {
            "HARVESTFLOW_DATA_DIR": str(data),
            "HARVESTFLOW_POSTGRES__URL": "",
            "HARVESTFLOW_POSTGRES__PORT": str(free_port()),
            "HARVESTFLOW_S3__S3_PORT": str(free_port(True)),
            "HARVESTFLOW_S3__MASTER_PORT": str(free_port(True)),
            "HARVESTFLOW_S3__VOLUME_PORT": str(free_port(True)),
            "HARVESTFLOW_S3__FILER_PORT": str(free_port(True)),
            # one copy, as the boto3 loop it is compared with writes one
            "HARVESTFLOW_S3_REPLICA__ENABLED": "false",
        }
        os.environ.update(self.env)
        from harvestflow import db, services
        from harvestflow import settings as settings_mod

        settings_mod.reset()
        settings = settings_mod.get_settings()
        s3 = settings.s3
        self.env.update(
            BENCH_S3_ENDPOINT=s3.endpoint_url,
            BENCH_S3_ACCESS_KEY=s3.access_key,
            BENCH_S3_SECRET_KEY=s3.secret_key,
        )
        postgres = services.postgres_for(settings)
        postgres.start()
        try:
            db.ensure_database(settings.harvest_db_url)
            db.migrate(db.get_engine(settings.harvest_db_url))
        finally:
            db.dispose_engines()
            postgres.stop()
        return {
            "files": len(self.files),
            "mib": self.mib,
            "source": "random data under WARC names (a 2 MiB metadata WARC, then the data"
            f" WARCs of {file_mb} MiB), generated once; one SeaweedFS copy (no replica)",
        }

    def sides(self) -> tuple[Side, Side]:
        files = [str(p) for p in self.files]
        store = [sys.executable, str(HERE / "with_store.py")]
        ours = Side(
            "harvestflow",
            [*store, "--postgres", "--", sys.executable, str(HERE / "bench_ingest.py"), "{out}",
             *files],
            2,
            "preservation.staging.stage_package + preservation.ingest.ingest_job with the"
            " settings' defaults ([preservation] part size and upload threads, every file"
            " re-read: verify_sample_rate 1.0): a DONE job recorded, the BagIt bag staged"
            " (sha256 + sha512, 2 threads), the staged SHA-256 checked by the store (whole file:"
            " 64 MiB is not above the multipart threshold), HEAD"
            " verification, DB bookkeeping, tag files; its own SeaweedFS and PostgreSQL started"
            " and stopped in the side",
            env=self.env,
            shown="with_store.py --postgres python bench/ingest/bench_ingest.py <out> <files>",
        )  # fmt: skip
        peer = Side(
            "boto3",
            [*store, "--", sys.executable, str(HERE / "peer_upload.py"), "{out}", *files],
            10,
            "boto3's defaults (8 MiB multipart threshold and parts, 10 threads, its default"
            " checksum), one new bucket, upload_file per file; its own SeaweedFS started and"
            " stopped in the side",
            env=self.env,
            shown="with_store.py python bench/ingest/peer_upload.py <out> <files>",
        )
        return ours, peer

    def figures(self, side: Side, out: Path) -> Any:
        """Every stored WARC's SHA-256, read back from the store (started again, untimed)."""
        from harvestflow import services
        from harvestflow.s3 import s3_client
        from harvestflow.settings import get_settings

        bucket = (out / "bucket.txt").read_text().strip()
        settings = get_settings()
        store = services.seaweedfs_for(settings)
        started = store.start()  # False when it runs already (a test's store): left running
        try:
            client = s3_client(settings)
            digests = []
            for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
                for obj in page.get("Contents", []):
                    if not obj["Key"].endswith(".warc.gz"):
                        continue  # ours' bag tag files
                    body = client.get_object(Bucket=bucket, Key=obj["Key"])["Body"]
                    digests.append(_sha256_of(body))
        finally:
            if started:
                store.stop()
        return {"objects": len(digests), "sha256": sorted(digests)}

    def problems(self, figures: Any) -> list[str]:
        if figures["sha256"] != self.expected:
            return [f"the {figures['objects']} stored WARCs are not the {len(self.files)} sources"]
        return []

    def units(self, figures: Any) -> int | None:
        return self.mib


def _sha256_of(stream: Any) -> str:
    digest = hashlib.sha256()
    for chunk in iter(lambda: stream.read(1 << 20), b""):
        digest.update(chunk)
    return digest.hexdigest()


def _sha256(path: Path) -> str:
    with path.open("rb") as fh:
        return _sha256_of(fh)


BENCHMARK = IngestBenchmark()
