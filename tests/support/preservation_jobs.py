"""Fixtures of preservation: a DONE job with WARC files in the repository and the manifest, the
settings of a bucket of its own, the replica's S3 client (the preservation, DAG, monitoring and
fault tests import them through their conftest or test file).

The WARC files are random bytes under WARC names: preservation treats them as opaque files
(it checksums, packages and stores them; it never parses them), so their content does not matter.
Each test gets its own bucket and its own temporary zone, and settings with short retry delays and
small parts so that multipart uploads are exercised on small files.
"""

from __future__ import annotations

import copy
import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import sqlalchemy as sa

from harvestflow.settings import Settings
from tests.support.objects import MiB, replica_s3_client


@pytest.fixture
def pres_settings(services: Settings, db_engine: sa.Engine, s3_client) -> Iterator[Settings]:  # type: ignore[no-untyped-def]
    data = copy.deepcopy(services.data)
    bucket = f"pres-{uuid.uuid4().hex[:12]}"
    s3_client.create_bucket(Bucket=bucket)
    data["s3"]["bucket"] = bucket
    data["preservation"].update(
        {
            "multipart_threshold": 6 * MiB,
            "part_size": 5 * MiB,
            "upload_threads": 2,
            "retry_attempts": 25,
            "retry_base_delay_s": 0.2,
            "retry_max_delay_s": 2.0,
            "connect_timeout_s": 2.0,
            "read_timeout_s": 10.0,
            "staging_subdir": f"preservation/staging-{bucket}",
            "reports_subdir": f"preservation/reports-{bucket}",
            "progress_interval_s": 1.0,
        }
    )
    yield Settings(data, services.source)


@dataclass
class MadeJob:
    job_id: int
    harvest_id: int
    files: dict[str, Path]

    @property
    def metadata_name(self) -> str:
        return f"{self.job_id}-metadata-1.warc.gz"


@pytest.fixture
def make_job(db_engine: sa.Engine, tmp_path: Path) -> Callable[..., MadeJob]:
    """Create a harvest definition (once per name), a DONE job and its WARCs, manifest rows."""

    def make(
        data_sizes: tuple[int, ...] = (3 * MiB, 7 * MiB),
        *,
        metadata_size: int = 200_000,
        harvest_name: str = "selective-test",
        in_manifest: bool = True,
        with_metadata: bool = True,
    ) -> MadeJob:
        with db_engine.begin() as conn:
            harvest_id = conn.execute(
                sa.text(
                    "INSERT INTO harvestdefinitions (name, kind) VALUES (:n, 'partial')"
                    " ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name RETURNING harvest_id"
                ),
                {"n": harvest_name},
            ).scalar_one()
            index = conn.execute(
                sa.text("SELECT count(*) FROM jobs WHERE harvest_id = :h"), {"h": harvest_id}
            ).scalar_one()
            job_dir = tmp_path / f"jobs/{harvest_id}/{index}"
            job_id = conn.execute(
                sa.text(
                    "INSERT INTO jobs (harvest_id, harvest_num, job_index, status, channel,"
                    " template_name, template, seedlist, startdate, enddate, job_dir)"
                    " VALUES (:h, 1, :i, 3, 'CIBLEE', 'default', '{}', 'http://example.org/',"
                    " now() - interval '1 hour', now(), :d) RETURNING job_id"
                ),
                {"h": harvest_id, "i": index, "d": str(job_dir)},
            ).scalar_one()
            repo = tmp_path / "repository" / f"job-{job_id}"
            repo.mkdir(parents=True)
            (job_dir / "warcs").mkdir(parents=True)
            names = []
            if with_metadata:
                names.append((f"{job_id}-metadata-1.warc.gz", metadata_size))
            names += [
                (f"{job_id}-{harvest_id}-20261122030000000-{n:05d}-host.warc.gz", size)
                for n, size in enumerate(data_sizes)
            ]
            files: dict[str, Path] = {}
            for name, size in names:
                where = repo if in_manifest else job_dir / "warcs"
                path = where / name
                path.write_bytes(os.urandom(size))
                files[name] = path
                if in_manifest:
                    conn.execute(
                        sa.text(
                            "INSERT INTO index_manifest (file_name, job_id, harvest_id,"
                            " source_path, size, stage, final_path)"
                            " VALUES (:n, :j, :h, :s, :z, 'transferred', :f)"
                        ),
                        {
                            "n": name,
                            "j": job_id,
                            "h": harvest_id,
                            "s": str(job_dir / "warcs" / name),
                            "z": size,
                            "f": str(path),
                        },
                    )
        return MadeJob(int(job_id), int(harvest_id), files)

    return make


@pytest.fixture
def replica_client(services: Settings):  # type: ignore[no-untyped-def]
    return replica_s3_client(services)
