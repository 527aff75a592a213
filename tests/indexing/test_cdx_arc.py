"""Legacy ARC files: CDX11 and CDXJ lines equal cdxj-indexer's for ARC and ARC.gz,
``harvestflow index cdx`` takes them, damage in an uncompressed ARC is reported and the rest kept,
and pywb replays a capture from an ARC file with our index."""

from __future__ import annotations

import random
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from indexing.cdx import index_warc, sorted_lines
from tests.support.arcgen import sample_captures, write_arc
from tests.support.cdx_oracle import ORACLE_VENV, reference_lines
from tests.support.environment import free_port as _free_port

HARVESTFLOW = Path(sys.executable).parent / "harvestflow"
PYWB_SAMPLES = ORACLE_VENV / "sample_archive" / "warcs"  # shipped with pywb (the oracle)


@pytest.mark.parametrize("fmt", ["cdxj", "cdx11"])
@pytest.mark.parametrize("name", ["crawl-1996.arc", "crawl-1996.arc.gz"])
def test_arc_lines_equal_reference_indexer(oracle: Path, tmp_path: Path, name: str, fmt: str):
    arc = write_arc(tmp_path / name)
    result = index_warc(arc)
    assert result.damage is None
    expected = reference_lines(oracle, arc, fmt)
    assert len([line for line in expected if line != " CDX N b a m s k r M S V g"]) == len(
        sample_captures()
    )
    assert result.lines(fmt) == expected
    statuses = {c.status for c in result.captures}
    assert {"200", "301", "404"} <= statuses
    assert any(c.url and "caf\u00e9" in c.url for c in result.captures)


@pytest.mark.parametrize("name", ["example.arc", "example.arc.gz"])
def test_pywb_sample_arcs_give_the_reference_lines(oracle: Path, name: str):
    arc = PYWB_SAMPLES / name
    assert arc.is_file(), f"pywb's sample {arc} is missing from the oracle venv"
    result = index_warc(arc)
    assert result.damage is None and result.captures
    for fmt in ("cdxj", "cdx11"):
        assert result.lines(fmt) == reference_lines(oracle, arc, fmt)


def test_pywb_bad_arc_is_reported_not_silently_indexed(oracle: Path):
    # lengths of -1 and "abc", which warcio reads as empty records without a word
    bad = PYWB_SAMPLES / "bad.arc"
    result = index_warc(bad)
    assert [d.offset for d in result.damages] == [0, 262]
    assert "invalid ARC record header line" in result.damages[0].reason
    assert "-1" in result.damages[0].reason
    # the one sound record is indexed as the reference indexes it
    assert result.lines("cdxj") == [
        line for line in reference_lines(oracle, bad, "cdxj") if '"offset": "202"' in line
    ]


def test_index_cdx_command_prints_reference_lines_for_arc_files(oracle: Path, tmp_path: Path):
    plain = write_arc(tmp_path / "a.arc")
    gz = write_arc(tmp_path / "b.arc.gz")
    for fmt in ("cdxj", "cdx11"):
        out = subprocess.run(
            [str(HARVESTFLOW), "index", "cdx", str(plain), str(gz), "--format", fmt],
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
        assert out.returncode == 0, out.stderr
        expected = reference_lines(oracle, plain, fmt) + reference_lines(oracle, gz, fmt)
        assert out.stdout.splitlines() == expected


def _arc_record_starts(data: bytes) -> list[int]:
    starts = [0]
    pos = data.find(b"\nhttp://")
    while pos >= 0:
        starts.append(pos + 1)
        pos = data.find(b"\nhttp://", pos + 1)
    dns = data.find(b"\ndns:")
    return sorted(starts + ([dns + 1] if dns >= 0 else []))


@pytest.mark.parametrize("seed", range(4))
def test_bytes_inserted_in_an_uncompressed_arc_are_damage_and_the_rest_is_indexed(
    oracle: Path, tmp_path: Path, seed: int
):
    good = write_arc(tmp_path / "good.arc")
    data = good.read_bytes()
    starts = _arc_record_starts(data)
    rnd = random.Random(seed)
    # inside the body of a capture in the middle of the file
    victim = rnd.randrange(2, len(starts) - 2)
    pos = rnd.randrange(data.index(b"\n", starts[victim]) + 1, starts[victim + 1] - 1)
    junk = bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 100)))
    bad = tmp_path / "good-bad.arc"
    bad.write_bytes(data[:pos] + junk + data[pos:])
    result = index_warc(bad)
    assert [d.offset for d in result.damages] == [starts[victim]], result.damage_text()
    expected = [
        line.replace(f" {o} good.arc", f" {o + len(junk) if o > pos else o} good.arc")
        for line in reference_lines(oracle, good, "cdx11")[1:]
        if (o := int(line.split()[-2])) != starts[victim]
    ]
    assert result.lines("cdx11", "good.arc")[1:] == expected


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=20) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_pywb_replays_arc_captures_with_our_index(oracle: Path, tmp_path: Path):
    archive = tmp_path / "archive"
    archive.mkdir()
    arcs = [write_arc(archive / "crawl-1996.arc"), write_arc(archive / "crawl-1996b.arc.gz")]
    coll = tmp_path / "pywb"
    coll.mkdir()
    lines = sorted_lines(line for arc in arcs for line in index_warc(arc).lines("cdxj"))
    (coll / "index.cdxj").write_text("\n".join(lines) + "\n")
    (coll / "config.yaml").write_text(
        f"collections:\n  old:\n    index: {coll / 'index.cdxj'}\n    archive_paths: {archive}/\n"
    )
    port = _free_port()
    proc = subprocess.Popen(
        [str(oracle / "bin" / "wayback"), "-p", str(port), "-b", "127.0.0.1"],
        cwd=coll,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                time.sleep(0.2)
        base = f"http://127.0.0.1:{port}/old"
        captures = {c.url: c for c in sample_captures()}
        for url in (b"http://www.example.fr/logo.gif", b"http://www.example.fr/b.html"):
            status, body = _get(f"{base}/19961015123003id_/{url.decode()}")
            assert status == 200, (url, body[:300])
            assert body == captures[url].http.split(b"\r\n\r\n", 1)[1]
        status, _ = _get(f"{base}/19961015123005id_/http://www.example.fr/missing.html")
        assert status == 404
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_a_corrupt_member_of_an_arc_gz_loses_only_its_record(oracle: Path, tmp_path: Path):
    good = write_arc(tmp_path / "good.arc.gz")
    reference = reference_lines(oracle, good, "cdx11")[1:]
    offsets = [int(line.split()[-2]) for line in reference]
    target = offsets[3]
    data = bytearray(good.read_bytes())
    for i in range(target + 20, target + 40):
        data[i] ^= 0x5A
    bad = tmp_path / "bad.arc.gz"
    bad.write_bytes(bytes(data))
    result = index_warc(bad)
    assert [d.offset for d in result.damages] == [target], result.damage_text()
    assert f"next record at byte {offsets[4]}" in result.damages[0].reason
    assert result.lines("cdx11", "good.arc.gz")[1:] == [
        line for line in reference if int(line.split()[-2]) != target
    ]
