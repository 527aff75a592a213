"""Daily report (DB and store sides), the manual queue and its release, the CLI."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from harvestflow.settings import Settings
from preservation.ingest import ingest_job
from preservation.manual_queue import preservation_queue, release_job
from preservation.report import preservation_report
from preservation.staging import stage_package

MiB = 1024 * 1024


def test_report_counts_both_sides_and_is_rewritten_not_duplicated(
    pres_settings: Settings, make_job, db_engine: sa.Engine
) -> None:  # type: ignore[no-untyped-def]
    done = make_job((1 * MiB, 2 * MiB))
    waiting = make_job((1 * MiB,), harvest_name="snapshot-2026")
    assert ingest_job(done.job_id, pres_settings)["status"] == "preserved"
    assert stage_package(waiting.job_id, pres_settings)["status"] == "staged"
    today = datetime.now(UTC).date()
    result = preservation_report(today, pres_settings)
    stats = result["stats"]
    assert stats["files_ingested"] == 3
    assert stats["bytes_ingested"] == sum(p.stat().st_size for p in done.files.values())
    assert stats["arks_issued_file"] == 3 + 2 and stats["arks_issued_package"] == 2
    assert stats["packages_preserved"] == 1 and stats["packages_in_temporary_zone"] == 1
    assert stats["store_objects"] == 3 + 6 and stats["store_mismatches"] == 0
    text = Path(result["text_path"]).read_text()
    assert f"job {waiting.job_id}  harvest definition {waiting.harvest_id} (snapshot-2026)" in text
    report = json.loads(Path(result["json_path"]).read_text())
    assert report["db"]["per_day"] == [
        {"day": str(today), "files": 3, "bytes": stats["bytes_ingested"]}
    ]
    preservation_report(today, pres_settings)
    with db_engine.connect() as conn:
        rows = conn.execute(
            sa.text("SELECT key, value FROM preservation_stats WHERE day = :d"), {"d": today}
        ).all()
    assert len(rows) == len(stats)
    assert dict(rows)["files_ingested"] == 3


def test_manual_queue_lists_reason_and_release_lets_a_repaired_job_through(
    pres_settings: Settings, make_job, db_engine: sa.Engine
) -> None:  # type: ignore[no-untyped-def]
    job = make_job((1 * MiB,))
    staged = stage_package(job.job_id, pres_settings)
    data_name = next(n for n in job.files if "metadata" not in n)
    staged_file = Path(staged["bag_path"]) / "data" / data_name
    original = staged_file.read_bytes()
    staged_file.write_bytes(original[:-1] + bytes([original[-1] ^ 1]))
    assert ingest_job(job.job_id, pres_settings)["status"] == "manual"
    queue = preservation_queue(pres_settings)
    assert [q["job_id"] for q in queue] == [job.job_id]
    assert "checksum_mismatch" in queue[0]["error"] and data_name in queue[0]["files"]
    # the definition's name, asked of the harvest stage, right after its id
    assert queue[0]["harvest_name"] == "selective-test"
    assert list(queue[0])[:3] == ["job_id", "harvest_id", "harvest_name"]
    with pytest.raises(ValueError, match="not in the manual queue"):
        release_job(job.job_id + 1000, pres_settings)
    staged_file.write_bytes(original)  # the operator restores the file
    release_job(job.job_id, pres_settings, note="restored from backup")
    assert ingest_job(job.job_id, pres_settings)["status"] == "preserved"
    assert preservation_queue(pres_settings) == []
