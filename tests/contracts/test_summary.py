"""summary.json through its model: round trip, files of before the model, bad fields named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harvestflow.contracts import ContractError
from harvestflow.contracts.summary import SUMMARY_VERSION, DomainSummary, JobSummary

# a summary.json as the crawler wrote it before the model (no "version"), copied from a job of
# the demo: every key the readers used
OLD_SUMMARY = {
    "job_id": 3,
    "status": "complete",
    "started": "2026-11-22T03:00:00.123456+00:00",
    "ended": "2026-11-22T03:10:00+00:00",
    "urls": 41,
    "bytes": 123456,
    "warcs": ["3-1-20261122030000-00000-p0.warc.gz"],
    "metadata_warc": "3-1-metadata-1.warc.gz",
    "domains": {
        "example-a.test": {
            "config_id": 5,
            "objects": 40,
            "bytes": 123000,
            "stop_reason": 0,
            "in_job": True,
        },
        "cdn.test": {
            "config_id": None,
            "objects": 1,
            "bytes": 456,
            "stop_reason": 0,
            "in_job": False,
        },
    },
    "repaired_warcs": [],
}


def test_round_trip_write_then_read_is_equal(tmp_path: Path) -> None:
    summary = JobSummary(
        job_id=7,
        status="time_limit",
        started="2026-11-22T03:00:00+00:00",
        ended="2026-11-22T04:00:00+00:00",
        urls=12,
        bytes=3400,
        warcs=["7-2-a.warc.gz", "7-2-b.warc.gz"],
        metadata_warc="7-2-metadata-1.warc.gz",
        domains={"a.test": DomainSummary(config_id=1, objects=12, bytes=3400, stop_reason=6)},
        repaired_warcs=["7-2-a.warc.gz"],
        processes=2,
        peak_rss_kb=90000,
        salvaged={"reason": "worker died", "at": "2026-11-22T04:00:01+00:00", "repaired_warcs": []},
        extra={"written_by_a_newer_crawler": [1, 2]},
    )
    path = tmp_path / "summary.json"
    summary.write(path)
    assert JobSummary.read(path) == summary
    data = json.loads(path.read_text())
    assert data["version"] == SUMMARY_VERSION
    assert data["written_by_a_newer_crawler"] == [1, 2]


def test_a_summary_without_version_reads_as_before(tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(OLD_SUMMARY))
    summary = JobSummary.read(path)
    assert summary.version == 0
    assert (summary.job_id, summary.status, summary.urls, summary.bytes) == (
        3,
        "complete",
        41,
        123456,
    )
    assert summary.domains["cdn.test"] == DomainSummary(None, 1, 456, 0, False)
    assert summary.ended_at is not None and summary.ended_at.minute == 10
    # written back: the same keys, with "version" the only new one
    assert summary.to_dict() == {**OLD_SUMMARY, "version": SUMMARY_VERSION}


def test_a_partial_old_summary_takes_the_defaults() -> None:
    summary = JobSummary.from_dict({"domains": {"a.test": {"objects": 3}}})
    assert summary.urls == 0 and summary.warcs == [] and summary.metadata_warc is None
    assert summary.domains["a.test"].stop_reason == 4  # DOWNLOAD_UNFINISHED
    assert summary.domains["a.test"].bytes == 0


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("urls", "forty", "expected an integer, got 'forty'"),
        ("bytes", True, "expected an integer, got True"),
        ("job_id", 1.5, "expected an integer, got 1.5"),
        ("status", 3, "expected a string, got 3"),
        ("warcs", "a.warc.gz", "expected a list of strings"),
        ("domains", [], "expected an object"),
        ("salvaged", "yes", "expected an object"),
        ("version", "1", "expected an integer"),
    ],
)
def test_a_bad_field_is_named_with_the_file(
    tmp_path: Path, field: str, value: object, expected: str
) -> None:
    path = tmp_path / "summary.json"
    path.write_text(json.dumps({**OLD_SUMMARY, field: value}))
    with pytest.raises(ContractError) as err:
        JobSummary.read(path)
    assert str(err.value).startswith(f"{path}: field {field!r}: {expected}")


def test_a_newer_version_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    path.write_text(json.dumps({**OLD_SUMMARY, "version": SUMMARY_VERSION + 1}))
    with pytest.raises(ContractError, match=r"summary.json: field 'version': 2 is not one"):
        JobSummary.read(path)


def test_a_bad_domain_entry_is_kept_aside_and_named(tmp_path: Path) -> None:
    """One bad domain does not hide the others: harvest records it as unfinished, QA leaves it
    out, both say why (the file, the domain and the field)."""
    path = tmp_path / "summary.json"
    domains = {**OLD_SUMMARY["domains"], "broken.test": {"stop_reason": "x"}, "gone.test": 3}  # type: ignore[dict-item]
    path.write_text(json.dumps({**OLD_SUMMARY, "domains": domains}))
    summary = JobSummary.read(path)
    assert sorted(summary.domains) == ["cdn.test", "example-a.test"]
    assert summary.bad_domains == {
        "broken.test": f"{path}: domains.broken.test: field 'stop_reason': expected an integer,"
        " got 'x'",
        "gone.test": f"{path}: field 'domains.gone.test': expected an object, got 3",
    }


def test_not_json_is_named(tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    path.write_text('{"urls": 1')
    with pytest.raises(ContractError, match=r"summary.json: unreadable summary"):
        JobSummary.read(path)
    path.write_text("[1, 2]")
    with pytest.raises(ContractError, match=r"summary.json: expected a JSON object, got list"):
        JobSummary.read(path)
