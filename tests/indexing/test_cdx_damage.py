"""No record lost without a word: bytes inserted in an uncompressed WARC are reported as damage
at the damaged record's offset, and every intact record after it is still indexed."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from indexing.cdx import index_warc
from tests.support.cdx_oracle import reference_lines
from tests.support.warcgen import write_warc

HARVESTFLOW = Path(sys.executable).parent / "harvestflow"


def _record_starts(data: bytes) -> list[int]:
    starts, pos = [], data.find(b"WARC/1.0\r\nWARC-Type: ")
    while pos >= 0:
        starts.append(pos)
        pos = data.find(b"WARC/1.0\r\nWARC-Type: ", pos + 1)
    return starts


def _shifted(line: str, at: int, by: int) -> tuple[int, str]:
    """A reference CDXJ line as it reads once ``by`` bytes are inserted at ``at``."""
    key, ts, body = line.split(" ", 2)
    fields = json.loads(body)
    offset = int(fields["offset"])
    if offset >= at:
        fields["offset"] = str(offset + by)
    return offset, f"{key} {ts} {json.dumps(fields)}"


def _insert_junk(good: Path, dest: Path, seed: int) -> tuple[int, int]:
    data = good.read_bytes()
    rnd = random.Random(seed)
    pos = rnd.randrange(len(data) // 4, 3 * len(data) // 4)
    junk = bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 300)))
    dest.write_bytes(data[:pos] + junk + data[pos:])
    return pos, len(junk)


@pytest.mark.parametrize("seed", range(8))
def test_inserted_bytes_are_damage_at_the_record_and_the_rest_is_indexed(
    oracle: Path, tmp_path: Path, seed: int
):
    good = write_warc(tmp_path / "good.warc", n=50, gz=False, seed=21)
    bad = tmp_path / "good-bad.warc"
    pos, size = _insert_junk(good, bad, seed)
    damaged = max(s for s in _record_starts(good.read_bytes()) if s <= pos)

    result = index_warc(bad)
    assert result.damage is not None, f"inserted {size} bytes at {pos}: no damage reported"
    assert result.damage.offset == damaged, str(result.damage)
    # every record the insertion did not touch is indexed, where it now is in the file, with
    # the line cdxj-indexer writes for it in the intact file
    expected = [
        line
        for offset, line in (
            _shifted(ref, pos, size) for ref in reference_lines(oracle, good, "cdxj")
        )
        if offset != damaged
    ]
    got = result.lines("cdxj", "good.warc")
    assert [line for line in got if f'"offset": "{damaged}"' not in line] == expected
    assert len(got) >= len(expected)


@pytest.mark.parametrize("seed", range(4))
def test_inserted_bytes_in_a_gzipped_warc_lose_only_the_damaged_member(
    oracle: Path, tmp_path: Path, seed: int
):
    good = write_warc(tmp_path / "good.warc.gz", n=50, seed=31)
    bad = tmp_path / "good-bad.warc.gz"
    pos, size = _insert_junk(good, bad, seed)
    # member starts, from the reference's offsets and the records it does not index
    data = good.read_bytes()
    starts, at = [], data.find(b"\x1f\x8b\x08")
    while at >= 0:
        starts.append(at)
        at = data.find(b"\x1f\x8b\x08", at + 1)
    ref_offsets = {int(_shifted(line, 0, 0)[0]) for line in reference_lines(oracle, good, "cdxj")}
    assert ref_offsets <= set(starts)
    damaged = max(s for s in starts if s <= pos)

    result = index_warc(bad)
    assert result.scanner == "fast"
    assert [d.offset for d in result.damages] == [damaged], result.damage_text()
    expected = [
        line
        for offset, line in (
            _shifted(ref, pos, size) for ref in reference_lines(oracle, good, "cdxj")
        )
        if offset != damaged
    ]
    got = result.lines("cdxj", "good.warc.gz")
    assert [line for line in got if f'"offset": "{damaged}"' not in line] == expected


def test_several_damaged_spots_are_each_reported(oracle: Path, tmp_path: Path):
    good = write_warc(tmp_path / "two.warc", n=50, gz=False, seed=22)
    data = good.read_bytes()
    starts = _record_starts(data)
    first, second = starts[len(starts) // 3], starts[2 * len(starts) // 3]
    a, b = first + 200, second + 5  # in a header block, in a WARC version line
    junk = b"\x00junk\r\n"
    bad = tmp_path / "two-bad.warc"
    bad.write_bytes(data[:a] + junk + data[a:b] + b"XX" + data[b:])
    result = index_warc(bad)
    assert [d.offset for d in result.damages] == [first, second + len(junk)]
    reference = reference_lines(oracle, good, "cdxj")
    assert len(result.captures) >= len(reference) - 2


def test_index_cdx_reports_damage_and_not_an_archive_and_goes_on(oracle: Path, tmp_path: Path):
    good = write_warc(tmp_path / "ok.warc.gz", n=10, seed=5)
    plain = write_warc(tmp_path / "plain.warc", n=40, gz=False, seed=23)
    bad = tmp_path / "plain-bad.warc"
    pos, size = _insert_junk(plain, bad, 3)
    notes = tmp_path / "notes.txt"
    notes.write_text("shopping list for the weekend\neggs\n")  # five fields: warcio's ARC
    out = subprocess.run(
        [str(HARVESTFLOW), "index", "cdx", str(notes), str(bad), str(good), "--processes", "1"],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    # 2: a file could not be indexed at all; 1: damage only
    assert out.returncode == 2, out.stderr
    assert (
        f"{notes}: not a WARC or ARC file: first line 'shopping list for the weekend'" in out.stderr
    )
    assert "ARC record found" not in out.stderr
    damaged = max(s for s in _record_starts(plain.read_bytes()) if s <= pos)
    assert f"{bad}: damaged at byte offset {damaged}:" in out.stderr
    lines = out.stdout.splitlines()
    expected_good = reference_lines(oracle, good, "cdxj")
    assert lines[-len(expected_good) :] == expected_good
    intact = [
        line
        for offset, line in (
            _shifted(ref, pos, size) for ref in reference_lines(oracle, plain, "cdxj")
        )
        if offset != damaged
    ]
    kept = [line.replace("plain-bad.warc", "plain.warc") for line in lines[: -len(expected_good)]]
    assert [line for line in kept if f'"offset": "{damaged}"' not in line] == intact

    only_damage = subprocess.run(
        [str(HARVESTFLOW), "index", "cdx", str(bad)], capture_output=True, text=True, timeout=300
    )
    assert only_damage.returncode == 1


@pytest.mark.services
def test_the_chain_quarantines_a_damaged_uncompressed_warc_with_every_intact_line(
    db_engine, oracle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from harvestflow import settings as settings_mod
    from indexing import chain
    from indexing.layout import Layout

    monkeypatch.setenv("HARVESTFLOW_DATA_DIR", str(tmp_path / "data"))
    settings_mod.reset()
    try:
        cfg = settings_mod.get_settings()
        layout = Layout.from_settings(cfg)
        worker = layout.worker_dirs()[0]
        worker.mkdir(parents=True)
        good = write_warc(tmp_path / "retro-00001.warc", n=40, gz=False, seed=24)
        bad = worker / "retro-00001.warc"
        pos, size = _insert_junk(good, bad, 5)
        damaged = max(s for s in _record_starts(good.read_bytes()) if s <= pos)
        assert chain.ingest(cfg) == [bad.name]
        result = chain.process_file(bad.name, cfg)
        assert result["quarantined"] and result["stage"] == "quarantined"
        assert f"damaged at byte offset {damaged}:" in result["error"]
        kept = (layout.quarantine_dir() / (bad.name + ".cdxj")).read_text().splitlines()
        intact = [
            line
            for offset, line in (
                _shifted(ref, pos, size) for ref in reference_lines(oracle, good, "cdxj")
            )
            if offset != damaged
        ]
        assert sorted(intact, key=lambda s: s.encode()) == [
            line for line in kept if f'"offset": "{damaged}"' not in line
        ]
        assert any(int(json.loads(line.split(" ", 2)[2])["offset"]) > pos for line in kept)
    finally:
        settings_mod.reset()


def test_blank_lines_before_the_first_record_are_damage_not_a_silent_empty_index(
    oracle: Path, tmp_path: Path
):
    # cdxj-indexer prints nothing at all for such a file, and says nothing
    good = write_warc(tmp_path / "lead.warc", n=20, gz=False, seed=25)
    bad = tmp_path / "lead-bad.warc"
    bad.write_bytes(b"\r\n" + good.read_bytes())
    result = index_warc(bad)
    assert [d.offset for d in result.damages] == [0]
    expected = [_shifted(line, 0, 2)[1] for line in reference_lines(oracle, good, "cdxj")]
    assert result.lines("cdxj", "lead.warc") == expected
