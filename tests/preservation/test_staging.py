"""Staging a job as a BagIt package in the temporary zone, with its rows and ARKs."""

from __future__ import annotations

from pathlib import Path

import bagit
import sqlalchemy as sa

from harvestflow.settings import Settings
from preservation import ark
from preservation.ingest import jobs_ready_for_preservation
from preservation.staging import stage_package


def test_stage_builds_a_valid_bag_naming_definition_job_and_checksums(
    pres_settings: Settings, make_job, db_engine: sa.Engine
) -> None:  # type: ignore[no-untyped-def]
    job = make_job()
    result = stage_package(job.job_id, pres_settings)
    assert result["status"] == "staged" and result["files"] == 3
    bag = bagit.Bag(result["bag_path"])
    bag.validate()  # full validation: every sha256 and sha512 recomputed by bagit
    assert set(bag.algorithms) == {"sha256", "sha512"}
    info = bag.info
    assert info["Harvest-Definition-Id"] == str(job.harvest_id)
    assert info["Harvest-Definition-Name"] == "selective-test"
    assert info["Job-Id"] == str(job.job_id)
    assert info["Metadata-File"] == job.metadata_name
    assert info["External-Identifier"] == result["ark"]
    assert info["Job-Start-Date"] and info["Job-End-Date"] and info["Bag-Software-Agent"]
    assert ark.verify(result["ark"]).valid
    # the staged payload is the repository's files
    for name, path in job.files.items():
        assert (Path(result["bag_path"]) / "data" / name).read_bytes() == path.read_bytes()
    with db_engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT file_name, role, ark, sha256, s3_key FROM preservation_files"
                " WHERE job_id = :j"
            ),
            {"j": job.job_id},
        ).all()
    payload = {r.file_name: r for r in rows if r.role != "manifest"}
    assert payload[job.metadata_name].role == "metadata"
    assert {r.role for r in rows} == {"metadata", "data", "manifest"}
    for name, row in payload.items():
        assert ark.verify(row.ark).valid
        assert row.sha256 == bag.entries[f"data/{name}"]["sha256"]
        assert row.s3_key == f"packages/hd-{job.harvest_id}/job-{job.job_id}/data/{name}"


def test_restaging_reuses_the_bag_and_the_arks(
    pres_settings: Settings, make_job, db_engine: sa.Engine
) -> None:  # type: ignore[no-untyped-def]
    job = make_job()
    first = stage_package(job.job_id, pres_settings)
    with db_engine.connect() as conn:
        before = conn.execute(sa.text("SELECT ark, kind, ref FROM arks ORDER BY ark")).all()
    second = stage_package(job.job_id, pres_settings)
    with db_engine.connect() as conn:
        after = conn.execute(sa.text("SELECT ark, kind, ref FROM arks ORDER BY ark")).all()
    assert first["ark"] == second["ark"] and first["bag_path"] == second["bag_path"]
    assert before == after and len(after) == 1 + 3  # one package + one per WARC


def test_job_without_metadata_warc_goes_to_manual_queue(
    pres_settings: Settings, make_job, db_engine: sa.Engine
) -> None:  # type: ignore[no-untyped-def]
    job = make_job(with_metadata=False)
    result = stage_package(job.job_id, pres_settings)
    assert result["status"] == "manual"
    assert "no metadata WARC" in result["error"]
    with db_engine.connect() as conn:
        status, error = conn.execute(
            sa.text("SELECT status, error FROM preservation_packages WHERE job_id = :j"),
            {"j": job.job_id},
        ).one()
    assert status == "manual" and error.startswith("missing_file")


def test_ready_jobs_are_done_fully_transferred_and_not_yet_preserved(
    pres_settings: Settings, make_job, db_engine: sa.Engine
) -> None:  # type: ignore[no-untyped-def]
    ready = make_job()
    not_transferred = make_job()
    being_copied = make_job()
    unindexed = make_job(in_manifest=False)
    with db_engine.begin() as conn:
        conn.execute(
            sa.text(
                "UPDATE index_manifest SET final_path = NULL, stage = 'indexed'"
                " WHERE job_id = :j AND file_name NOT LIKE '%metadata%'"
            ),
            {"j": not_transferred.job_id},
        )
        # the indexing chain records final_path before the copy is done and checked
        conn.execute(
            sa.text("UPDATE index_manifest SET stage = 'indexed' WHERE job_id = :j"),
            {"j": being_copied.job_id},
        )
    assert jobs_ready_for_preservation(pres_settings) == [ready.job_id]
    assert jobs_ready_for_preservation(pres_settings, include_unindexed=True) == [
        ready.job_id,
        unindexed.job_id,
    ]
    # a job not in the manifest can still be staged from its job directory when asked
    staged = stage_package(unindexed.job_id, pres_settings)
    assert staged["status"] == "staged" and staged["source"] == "job_dir"
    assert stage_package(not_transferred.job_id, pres_settings)["status"] == "not_ready"
    assert stage_package(being_copied.job_id, pres_settings)["status"] == "not_ready"
