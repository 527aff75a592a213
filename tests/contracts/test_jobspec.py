"""job.json through its model: round trip, the file harvest wrote before the model, bad keys
named with the file."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harvestflow.contracts.jobspec import JOBSPEC_VERSION, JobSpec, JobSpecError

# job.json as harvest.jobs.build_spec wrote it before the model (no "version")
OLD_SPEC = {
    "job_id": 12,
    "harvest_id": 3,
    "harvest_name": "demo-selective",
    "harvest_num": 2,
    "channel": "CIBLEE",
    "snapshot": False,
    "seeds": ["http://www.example-a.test/", "http://www.example-b.test/#top"],
    "template": {"name": "demo_loopback", "allow_private_addresses": True, "min_delay_ms": 0,
                 "comment": "a key of the harvest DB the crawler does not use"},
    "domains": [
        {"domain": "example-a.test", "config_id": 4, "max_objects": -1, "max_bytes": 100000000},
        {"domain": "example-b.test", "config_id": 5, "max_objects": 50, "max_bytes": -1},
    ],
    "max_objects": -1,
    "max_bytes": 500000000,
    "max_running_time_s": 0,
    "crawler_traps": ["/calendar/"],
    "resolve": {"www.example-a.test": "127.0.0.1"},
    "dedup_index": "/data/jobs/3/12/dedup.tsv",
    "warc_prefix": "12-3",
    "credentials": [{"id": 1, "domain": "example-a.test", "kind": "basic"}],
    "job_control": True,
}  # fmt: skip


def test_the_old_file_reads_as_before_and_writes_back_its_keys(tmp_path: Path) -> None:
    path = tmp_path / "job.json"
    path.write_text(json.dumps(OLD_SPEC))
    spec = JobSpec.read(path)
    assert spec.version == 0
    assert spec.template.name == "demo_loopback" and spec.template.min_delay_ms == 0
    assert spec.template.max_hops == 20  # from settings [crawler]
    assert spec.domains[1].max_objects == 50 and spec.job_control is True
    assert spec.seeds == OLD_SPEC["seeds"]  # as written: the crawler strips the fragment
    # the same keys and values, "version" the only new key; the settings' defaults not frozen in
    assert spec.to_dict() == {**OLD_SPEC, "version": JOBSPEC_VERSION}


def test_round_trip_write_then_read_is_equal(tmp_path: Path) -> None:
    spec = JobSpec.from_dict(
        {**OLD_SPEC, "user_agent": "archive-bot/1.0", "job_control_interval_s": 0.5}, "built"
    )
    path = tmp_path / "job.json"
    spec.write(path)
    again = JobSpec.read(path)
    assert again == spec and again.version == JOBSPEC_VERSION
    assert json.loads(path.read_text())["user_agent"] == "archive-bot/1.0"
    assert "operator" not in json.loads(path.read_text())  # not given: settings at crawl time


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("harvest_id", "three", r"key 'harvest_id': bad value 'three'"),
        ("snapshot", "yes", r"key 'snapshot': bad value 'yes' \(expected true/false\)"),
        ("max_bytes", [1], r"key 'max_bytes': bad value \[1\]"),
        ("template", ["demo"], r"key 'template': bad value \['demo'\] \(expected an object\)"),
        ("resolve", "a.test=1.2.3.4", r"key 'resolve': bad value"),
        ("domains", [3], r"domains\[0\]: bad value 3 \(expected an object\)"),
        ("version", 99, r"field 'version': 99 is not one this reader knows"),
    ],
)
def test_a_bad_key_is_named_with_the_file(
    tmp_path: Path, key: str, value: object, message: str
) -> None:
    path = tmp_path / "job.json"
    path.write_text(json.dumps({**OLD_SPEC, key: value}))
    with pytest.raises(JobSpecError, match=f"^{path}: (.*: )?{message}"):
        JobSpec.read(path)


def test_a_bad_template_value_is_named() -> None:
    with pytest.raises(JobSpecError, match=r"^job 12: template: key 'max_hops': bad value 'x'"):
        JobSpec.from_dict({**OLD_SPEC, "template": {"max_hops": "x"}}, "job 12")


def test_the_writing_side_carries_a_bad_template_for_the_crawler_to_refuse(tmp_path: Path) -> None:
    """harvest writes the template as the harvest DB has it; the crawler refuses it when the
    crawl starts (the job FAILS with the reason, it is not stuck unprepared)."""
    data = {**OLD_SPEC, "template": {"scope": "galaxy"}}
    written = JobSpec.from_dict(data, "job 12", resolve=False)
    path = tmp_path / "job.json"
    written.write(path)
    assert json.loads(path.read_text())["template"] == {"scope": "galaxy"}
    with pytest.raises(JobSpecError, match=r"template.scope must be host, domain or path"):
        JobSpec.read(path)
    # a top-level key of the wrong type is refused on the writing side too
    with pytest.raises(JobSpecError, match=r"^job 12: key 'max_objects'"):
        JobSpec.from_dict({**data, "max_objects": "lots"}, "job 12", resolve=False)


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ({"qa_min_score": 120}, "template.qa_min_score must be between 0 and 100"),
        ({"qa_max_below_share": 1.5}, "template.qa_max_below_share must be between 0 and 1"),
        ({"qa_page_budget_s": 0}, "template.qa_page_budget_s must be more than 0"),
        ({"qa": "yes"}, "template: key 'qa': bad value 'yes'"),
    ],
)
def test_a_bad_qa_setting_is_refused_naming_it(template: dict, message: str) -> None:
    with pytest.raises(JobSpecError, match=f"^job 12: {re.escape(message)}"):
        JobSpec.from_dict({**OLD_SPEC, "template": template}, "job 12")
