"""Two copies and fixity audits, on the session's two real embedded SeaweedFS servers ([s3] and
[s3_replica]): an ingest writes and verifies both copies; the audit repairs a copy corrupted in
one store from the other and reports it; a file corrupted in both goes to the manual queue and
fails the audit; the daily selection reads the oldest-verified first and covers every file
within the period."""

from __future__ import annotations

import argparse
import hashlib
import math
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from app.cli.preservation import cmd_status
from app.curator.webapp import create_app
from harvestflow.settings import Settings
from preservation import records
from preservation.fixity import audit
from preservation.ingest import ingest_job
from preservation.manual_queue import preservation_queue
from tests.support.objects import MiB, corrupt_one_byte

COPIES = ["primary", "replica"]


def _sha256(client: Any, bucket: str, key: str) -> str:
    return hashlib.sha256(client.get_object(Bucket=bucket, Key=key)["Body"].read()).hexdigest()


def _copies(db_engine: sa.Engine, job_id: int) -> dict[tuple[str, str], dict[str, Any]]:
    with db_engine.connect() as conn:
        return records.copies_of(conn, job_id)


def _preserved(pres_settings: Settings, make_job, sizes: tuple[int, ...]):  # type: ignore[no-untyped-def]
    job = make_job(sizes, metadata_size=50_000)
    result = ingest_job(job.job_id, pres_settings)
    assert result["status"] == "preserved", result
    prefix = f"packages/hd-{job.harvest_id}/job-{job.job_id}/data/"
    return job, result, prefix


def test_ingest_writes_both_copies_and_verifies_each(
    pres_settings: Settings, make_job, db_engine: sa.Engine, s3_client: Any, replica_client: Any
) -> None:  # type: ignore[no-untyped-def]
    job, result, prefix = _preserved(pres_settings, make_job, (300_000, 7 * MiB))
    bucket = pres_settings.s3.bucket
    # 3 WARCs + 6 tag files in each copy; the 7 MiB one in parts (multipart) in both
    assert result["uploaded"] == result["replica_uploaded"] == 9
    for name, path in job.files.items():
        want = hashlib.sha256(path.read_bytes()).hexdigest()
        assert _sha256(s3_client, bucket, prefix + name) == want
        assert _sha256(replica_client, bucket, prefix + name) == want
        head = replica_client.head_object(Bucket=bucket, Key=prefix + name)
        assert head["Metadata"]["sha256"] == want
    copies = _copies(db_engine, job.job_id)
    with db_engine.connect() as conn:
        names = [f.file_name for f in records.files_of(conn, job.job_id)]
    assert len(names) == 9
    assert {key: row["status"] for key, row in copies.items()} == {
        (n, c): "verified" for n in names for c in COPIES
    }
    assert all(row["verified_at"] is not None for row in copies.values())


def test_audit_repairs_a_corrupted_copy_from_the_other_and_reports_it(
    pres_settings: Settings,
    make_job,
    db_engine: sa.Engine,
    s3_client: Any,
    replica_client: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # type: ignore[no-untyped-def]
    job, _, prefix = _preserved(pres_settings, make_job, (200_000, 300_000))
    bucket = pres_settings.s3.bucket
    first, second = sorted(n for n in job.files if n != job.metadata_name)
    corrupt_one_byte(replica_client, bucket, prefix + first)  # the other site's copy
    corrupt_one_byte(s3_client, bucket, prefix + second)  # this site's copy
    assert _sha256(replica_client, bucket, prefix + first) != _sha256(
        s3_client, bucket, prefix + first
    )

    result = audit(pres_settings, share=1.0)

    assert result["status"] == "ok", result
    assert (result["files"], result["repaired"], result["failed"]) == (9, 2, 0)
    assert result["good"] == 7
    notes = {item["file"]: item["notes"] for item in result["repaired_files"]}
    assert set(notes) == {first, second}
    assert "replica copy repaired from the primary copy" in notes[first][0]
    assert "primary copy repaired from the replica copy" in notes[second][0]
    for name in (first, second):
        want = hashlib.sha256(job.files[name].read_bytes()).hexdigest()
        assert _sha256(s3_client, bucket, prefix + name) == want
        assert _sha256(replica_client, bucket, prefix + name) == want
        assert want in notes[name][0]  # the report says what was expected
    copies = _copies(db_engine, job.job_id)
    assert copies[(first, "replica")]["repairs"] == 1
    assert copies[(second, "primary")]["repairs"] == 1
    assert copies[(first, "primary")]["repairs"] == 0
    assert {row["status"] for row in copies.values()} == {"verified"}
    with db_engine.connect() as conn:
        kinds = conn.execute(
            sa.text("SELECT file_name FROM preservation_events WHERE kind = 'fixity_repaired'")
        ).scalars()
        package = records.get_package(conn, job.job_id)
        run = conn.execute(sa.text("SELECT * FROM preservation_audits")).mappings().one()
    assert sorted(kinds) == sorted([first, second])
    assert package is not None and package["status"] == "preserved"
    assert (run["files"], run["repaired"], run["failed"]) == (9, 2, 0)
    assert run["finished_at"] is not None
    # a second audit finds everything good
    again = audit(pres_settings, share=1.0)
    assert (again["good"], again["repaired"], again["failed"]) == (9, 0, 0)

    # the progress, as the curator pages' Preservation page and `preservation status` show it
    app = create_app(lambda: db_engine, data_dir=tmp_path)
    page = TestClient(app).get("/preservation").text
    section = page.split('<h2 id="fixity">Fixity audits</h2>')[1].split("<h2>")[0]
    assert "within the last 365 days: <b>9</b> of 9" in section
    assert "copies found bad and not repaired: 0" in section
    runs = re.findall(r"<tr><td>(\d+)</td>.*?</tr>", section)
    assert len(runs) == 2
    assert '<td class="n">2</td><td class="n">0</td></tr>' in section  # repaired 2, failed 0
    packages = page.split("<h2>Packages</h2>")[1]
    row = packages.split(f'href="/jobs/{job.job_id}"')[1].split("</tr>")[0]
    verified = row.rsplit("<td>", 1)[1].removesuffix("</td>")
    assert verified.startswith(str(datetime.now(UTC).year)), row
    assert cmd_status(argparse.Namespace(json=False)) == 0
    out = capsys.readouterr().out
    assert "preserved files: 9, verified in every copy within the period: 9" in out
    assert "repaired 2, failed 0" in out


def test_a_file_bad_in_both_copies_goes_to_the_manual_queue_and_fails_the_audit(
    pres_settings: Settings, make_job, db_engine: sa.Engine, s3_client: Any, replica_client: Any
) -> None:  # type: ignore[no-untyped-def]
    job, _, prefix = _preserved(pres_settings, make_job, (200_000,))
    bucket = pres_settings.s3.bucket
    (victim,) = [n for n in job.files if n != job.metadata_name]
    want = hashlib.sha256(job.files[victim].read_bytes()).hexdigest()
    corrupt_one_byte(s3_client, bucket, prefix + victim)
    corrupt_one_byte(replica_client, bucket, prefix + victim)

    result = audit(pres_settings, share=1.0)

    assert result["status"] == "failed"
    assert (result["failed"], result["repaired"], result["good"]) == (1, 0, 7)
    (failed,) = result["failed_files"]
    assert failed["file"] == victim
    reason = failed["notes"][0]
    assert "bad in every copy" in reason and want in reason
    assert "primary (" in reason and "replica (" in reason  # each copy, named with its store
    (queued,) = preservation_queue(pres_settings)
    assert queued["job_id"] == job.job_id
    assert "bad in every copy" in queued["error"]
    assert victim in queued["files"]
    copies = _copies(db_engine, job.job_id)
    assert copies[(victim, "primary")]["status"] == copies[(victim, "replica")]["status"] == "bad"
    # the damaged objects are left as they are, for a person to look at
    assert _sha256(s3_client, bucket, prefix + victim) != want


def _seed_rows(db_engine: sa.Engine, make_job, verified: list[datetime | None]) -> list[str]:  # type: ignore[no-untyped-def]
    """A preserved package whose files have the given last verification (None: no replica
    copy recorded yet); returns the file names in that order."""
    job = make_job((1000,), metadata_size=1000)
    names = [f"f{i:03d}.warc.gz" for i in range(len(verified))]
    with db_engine.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO preservation_packages (job_id, harvest_id, status)"
                " VALUES (:j, :h, 'preserved')"
            ),
            {"j": job.job_id, "h": job.harvest_id},
        )
        for name, when in zip(names, verified, strict=True):
            conn.execute(
                sa.text(
                    "INSERT INTO preservation_files (job_id, file_name, role, size, sha256,"
                    " s3_key, status) VALUES (:j, :n, 'data', 1, 'x', :n, 'verified')"
                ),
                {"j": job.job_id, "n": name},
            )
            for copy in COPIES if when is not None else COPIES[:1]:
                conn.execute(
                    sa.text(
                        "INSERT INTO preservation_copies (job_id, file_name, copy, status,"
                        " verified_at) VALUES (:j, :n, :c, 'verified', :t)"
                    ),
                    {
                        "j": job.job_id,
                        "n": name,
                        "c": copy,
                        "t": when or datetime(2026, 1, 1, tzinfo=UTC),
                    },
                )
    return names


def _due(db_engine: sa.Engine, now: datetime, share: float, period: int) -> list[str]:
    with db_engine.connect() as conn:
        return [
            f.file_name
            for f in records.files_due_for_audit(
                conn, COPIES, now=now, share=share, period_days=period
            )
        ]


def test_the_selection_reads_the_oldest_verified_first(db_engine: sa.Engine, make_job) -> None:  # type: ignore[no-untyped-def]
    now = datetime(2026, 6, 1, tzinfo=UTC)
    ages = [5, 300, None, 40, 200, 1, 120, 90]  # days since the last verification
    names = _seed_rows(
        db_engine, make_job, [now - timedelta(days=a) if a is not None else None for a in ages]
    )
    by_age = [
        n
        for _, n in sorted(
            zip([a if a is not None else 10**6 for a in ages], names, strict=True), reverse=True
        )
    ]
    # a quarter of 8 files: the one never verified in the replica, then the oldest
    assert _due(db_engine, now, 0.25, 365) == by_age[:2]
    assert _due(db_engine, now, 0.5, 365) == by_age[:4]
    # files last verified period - 1 days ago or more are read whatever the share
    assert _due(db_engine, now, 0.0, 150) == by_age[:3]
    # a file of a package not preserved (the manual queue) is not audited
    with db_engine.begin() as conn:
        conn.execute(sa.text("UPDATE preservation_packages SET status = 'manual'"))
    assert _due(db_engine, now, 1.0, 365) == []


def test_the_selection_covers_every_file_within_the_period(db_engine: sa.Engine, make_job) -> None:  # type: ignore[no-untyped-def]
    """Forty files ingested on one day, a 10-day period, a share (2 a day) too small to cover
    it alone: simulated daily runs read each file again before its period is over, and only
    the share on days nothing is due."""
    start = datetime(2026, 3, 1, tzinfo=UTC)
    period, share, n = 10, 0.05, 40
    names = _seed_rows(db_engine, make_job, [start] * n)
    last = dict.fromkeys(names, start)
    reads_per_day = []
    for day in range(1, 41):
        now = start + timedelta(days=day)
        due = _due(db_engine, now, share, period)
        assert len(due) >= math.ceil(share * n)
        assert sorted(due, key=lambda name: last[name]) == due  # oldest first
        reads_per_day.append(len(due))
        with db_engine.begin() as conn:
            conn.execute(
                sa.text(
                    "UPDATE preservation_copies SET verified_at = :t WHERE file_name = ANY(:n)"
                ),
                {"t": now, "n": due},
            )
        for name in due:
            assert now - last[name] <= timedelta(days=period), name
            last[name] = now
        assert all(now - t < timedelta(days=period) for t in last.values())
    assert sum(reads_per_day) >= 4 * n  # everything read every period
    assert min(reads_per_day) == math.ceil(share * n)  # the share alone on a quiet day
