"""Our BagIt writer, checked by the bagit library (the reference implementation) as an oracle."""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path

import bagit
import pytest

from preservation.bagwriter import UnportableName, hash_file, read_parts, write_bag, write_parts

MiB = 1024 * 1024


def test_bag_validates_with_bagit_including_awkward_names(tmp_path: Path) -> None:
    bag_dir = tmp_path / "bag"
    (bag_dir / "data").mkdir(parents=True)
    names = ["1-metadata-1.warc.gz", "odd name (1).warc.gz", "b.warc"]
    payload = {}
    for i, name in enumerate(names):
        path = bag_dir / "data" / name
        path.write_bytes(os.urandom(i * 3 * MiB + 7))
        payload[name] = path
    info = {"Source-Organization": "test", "Job-Id": "1", "External-Identifier": "ark:/99999/x"}
    digests = write_bag(bag_dir, payload, info, part_size=5 * MiB, threads=2)
    bag = bagit.Bag(str(bag_dir))
    bag.validate()  # full: every sha256 and sha512 recomputed by bagit
    assert bag.version_info == (1, 0)
    assert set(bag.algorithms) == {"sha256", "sha512"}
    assert bag.info["Payload-Oxum"] == f"{sum(p.stat().st_size for p in payload.values())}.3"
    assert bag.info["External-Identifier"] == "ark:/99999/x"
    for name, path in payload.items():
        data = path.read_bytes()
        assert bag.entries[f"data/{name}"]["sha512"] == hashlib.sha512(data).hexdigest()
        expected_parts = [
            base64.b64encode(hashlib.sha256(data[i : i + 5 * MiB]).digest()).decode()
            for i in range(0, len(data), 5 * MiB)
        ]
        assert digests[name].parts == expected_parts
    write_parts(tmp_path / "parts.json", digests)
    assert read_parts(tmp_path / "parts.json")["b.warc"]["parts"] == digests["b.warc"].parts
    assert read_parts(tmp_path / "missing.json") == {}


def test_names_bagit_tools_disagree_on_are_refused(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    path = tmp_path / "data" / "100%.warc.gz"
    path.write_bytes(b"x")
    with pytest.raises(UnportableName, match="not portable"):
        write_bag(tmp_path, {path.name: path}, {}, part_size=5 * MiB)


def test_hash_file_of_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty"
    path.write_bytes(b"")
    d = hash_file(path, 5 * MiB)
    assert d.size == 0 and d.parts == [] and d.sha256 == hashlib.sha256(b"").hexdigest()


def test_part_checksums_are_kept_only_for_files_the_upload_sends_in_parts(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    small, big = tmp_path / "data" / "small.warc.gz", tmp_path / "data" / "big.warc.gz"
    small.write_bytes(os.urandom(6 * MiB))  # at the threshold: one PUT
    big.write_bytes(os.urandom(12 * MiB + 3))  # above it: 3 parts of 5 MiB
    digests = write_bag(
        tmp_path,
        {p.name: p for p in (small, big)},
        {},
        part_size=5 * MiB,
        multipart_threshold=6 * MiB,
    )
    bagit.Bag(str(tmp_path)).validate()  # the whole-file digests are still every byte's
    assert digests["small.warc.gz"].parts == []
    assert digests["small.warc.gz"].sha256 == hashlib.sha256(small.read_bytes()).hexdigest()
    data = big.read_bytes()
    assert digests["big.warc.gz"].parts == [
        base64.b64encode(hashlib.sha256(data[i : i + 5 * MiB]).digest()).decode()
        for i in range(0, len(data), 5 * MiB)
    ]
