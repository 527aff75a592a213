"""A retrospective delivery of ARC files goes through the whole platform like a
harvest's WARCs: registered as one job, ingested, indexed (lines equal cdxj-indexer's), transferred,
backed up, cleaned, merged, and preserved as one BagIt package in S3, instead of quarantined."""

from __future__ import annotations

import copy
import hashlib
import json
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from harvestflow import settings as settings_mod
from harvestflow.settings import Settings
from indexing import chain, cleanup, manifest, merge
from indexing.layout import Layout
from preservation.ingest import ingest_job
from tests.support.arcgen import ArcCapture, http_response, sample_captures, write_arc
from tests.support.chainkit import expected_index

pytestmark = pytest.mark.services
HARVESTFLOW = Path(sys.executable).parent / "harvestflow"


@pytest.fixture
def cfg(db_engine: sa.Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("HARVESTFLOW_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HARVESTFLOW_INDEXING__MIN_FREE_BYTES", "0")
    monkeypatch.setenv("HARVESTFLOW_INDEXING__BACKUP", "backup")
    settings_mod.reset()
    yield settings_mod.get_settings()
    settings_mod.reset()


def _delivery(root: Path) -> Path:
    """An Internet Archive-style delivery: two ARC files, a README and a mislabelled text file."""
    root.mkdir(parents=True)
    write_arc(root / "IA-1996-00001.arc.gz")
    later = [
        ArcCapture(
            b"http://www.example.fr/",
            "19970301080000",
            "text/html",
            http_response("200 OK", "text/html", b"<html>1997</html>"),
        ),
        *sample_captures()[3:6],
    ]
    write_arc(root / "IA-1997-00002.arc", later)
    (root / "README.txt").write_text("delivery of 2 ARC files\n")
    (root / "IA-1997-00003.arc").write_text("this file was truncated to nothing useful\n")
    return root


def _objects(s3_client: Any, bucket: str) -> dict[str, str]:
    out = {}
    for page in s3_client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for obj in page.get("Contents", []):
            body = s3_client.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read()
            out[obj["Key"]] = hashlib.sha256(body).hexdigest()
    return out


def test_an_arc_delivery_is_indexed_transferred_backed_up_and_preserved(
    cfg: Settings, db_engine: sa.Engine, oracle: Path, s3_client: Any, tmp_path: Path
):
    source = _delivery(tmp_path / "deliveries" / "ia-1996")
    arcs = sorted(source.glob("IA-199?-0000[12].arc*"))
    sha256 = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in arcs}

    out = subprocess.run(
        [str(HARVESTFLOW), "index", "delivery", str(source), "--name", "ia-1996"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 1, out.stderr  # two files refused
    assert "IA-1997-00003.arc: refused: not a WARC or ARC file: first line" in out.stderr
    assert "README.txt: refused" in out.stderr
    summary = json.loads(out.stdout)
    assert sorted(summary["registered"]) == [p.name for p in arcs]
    job_id = summary["job_id"]
    meta_name = f"{job_id}-metadata-1.warc.gz"

    # the ordinary chain: every file ends "done", none quarantined
    assert sorted(chain.ingest(cfg)) == sorted([*sha256, meta_name])
    results = [chain.process_file(name, cfg) for name in chain.pending_files(cfg)]
    assert {r["file"]: (r["stage"], r["quarantined"]) for r in results} == {
        name: ("done", False) for name in [*sha256, meta_name]
    }
    for arc in arcs:
        entry = manifest.get(db_engine, arc.name)
        assert entry is not None and entry.job_id == job_id
        assert Path(entry.final_path or "").read_bytes() == arc.read_bytes()
        assert entry.backup_location and any((cfg.data_dir / "backup").rglob(arc.name))
    layout = Layout.from_settings(cfg)
    merge.daily_merge(datetime.now(UTC).date(), cfg)
    merge.bigmerge(cfg)
    for fmt in layout.formats:
        big = layout.big_cdx(fmt).read_text().splitlines()
        want = [line for line in expected_index(oracle, arcs, fmt) if not line.startswith(" CDX")]
        assert len(want) == len(sample_captures()) + 4
        assert set(want) <= set(big)
    cleanup.clean_arc_repository(cfg)
    assert all(p.exists() for p in arcs)  # the delivered originals are never touched

    # preservation: one package for the delivery, metadata WARC first, the ARC files as sent
    data = copy.deepcopy(cfg.data)
    bucket = f"pres-{uuid.uuid4().hex[:12]}"
    s3_client.create_bucket(Bucket=bucket)
    data["s3"]["bucket"] = bucket
    data["preservation"]["staging_subdir"] = f"preservation/staging-{bucket}"
    pres = Settings(data, cfg.source)
    result = ingest_job(job_id, pres)
    assert result["status"] == "preserved", result
    objects = _objects(s3_client, bucket)
    harvest_id = summary["harvest_id"]
    prefix = f"packages/hd-{harvest_id}/job-{job_id}/"
    for name, digest in sha256.items():
        assert objects[f"{prefix}data/{name}"] == digest
    assert f"{prefix}data/{meta_name}" in objects
    bag_info = s3_client.get_object(Bucket=bucket, Key=f"{prefix}bag-info.txt")["Body"].read()
    assert b"delivery:ia-1996" in bag_info and f"Metadata-File: {meta_name}".encode() in bag_info

    again = subprocess.run(
        [str(HARVESTFLOW), "index", "delivery", str(source), "--name", "ia-1996"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert again.returncode == 0 and json.loads(again.stdout)["already"] is True


def test_an_arc_file_dropped_in_a_working_directory_is_indexed_not_ignored(
    cfg: Settings, db_engine: sa.Engine, oracle: Path
):
    layout = Layout.from_settings(cfg)
    worker = layout.worker_dirs()[0]
    worker.mkdir(parents=True)
    arc = write_arc(worker / "BnF-1999-retro-00042.arc.gz")
    reference = {fmt: expected_index(oracle, [arc], fmt) for fmt in layout.formats}
    assert chain.ingest(cfg) == [arc.name]
    result = chain.process_file(arc.name, cfg)
    assert (result["stage"], result["quarantined"], result["records"]) == (
        "done",
        False,
        len(sample_captures()),
    )
    entry = manifest.get(db_engine, arc.name)
    assert entry is not None and entry.cdx_path
    for fmt in layout.formats:
        suffix = ".cdxj" if fmt == "cdxj" else ".cdx"
        lines = Path(entry.cdx_path + suffix).read_text().splitlines()
        assert lines == reference[fmt]
