"""CDX11 and CDXJ lines equal cdxj-indexer's, for warcio-written and wget-written WARCs; bad
input is quarantined with an offset or rejected."""

from __future__ import annotations

import gzip
import http.server
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from harvestflow.formats.cdx import CDX11_HEADER
from indexing.cdx import NotAWarcError, index_warc
from tests.support.cdx_oracle import reference_lines
from tests.support.warcgen import write_warc


@pytest.mark.parametrize("fmt", ["cdxj", "cdx11"])
@pytest.mark.parametrize("gz", [True, False])
def test_lines_equal_reference_indexer(oracle: Path, tmp_path: Path, fmt: str, gz: bool):
    warc = write_warc(tmp_path / ("t.warc.gz" if gz else "t.warc"), n=120, gz=gz)
    result = index_warc(warc)
    assert result.damage is None
    assert result.scanner == ("fast" if gz else "warcio")
    expected = reference_lines(oracle, warc, fmt)
    assert len(expected) > 150
    assert result.lines(fmt) == expected


def test_record_without_payload_digest_gets_computed_digest(oracle: Path, tmp_path: Path):
    warc = write_warc(tmp_path / "d.warc.gz", n=30)
    raw = gzip.decompress(warc.read_bytes())
    assert b"nodigest0" in raw
    result = index_warc(warc)
    nodigest = [c for c in result.captures if c.url and "nodigest" in c.url]
    assert nodigest and all(c.digest and c.digest.startswith("sha1:") for c in nodigest)
    assert result.lines("cdxj") == reference_lines(oracle, warc, "cdxj")


class _Site(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def loopback_site(tmp_path: Path):
    root = tmp_path / "site"
    root.mkdir()
    (root / "index.html").write_text(
        '<html><a href="a.html">a</a><img src="img.bin"><a href="missing.html">x</a>'
        '<a href="dir">d</a></html>'
    )
    (root / "a.html").write_text("<html>" + "text " * 3000 + "</html>")
    (root / "img.bin").write_bytes(bytes(range(256)) * 50)
    (root / "dir").mkdir()
    (root / "dir" / "index.html").write_text("<p>dir</p>")

    def handler(*args, **kwargs):  # type: ignore[no-untyped-def]
        return _Site(*args, directory=str(root), **kwargs)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


def test_wget_warc_lines_equal_reference(oracle: Path, tmp_path: Path, loopback_site: str):
    wget = shutil.which("wget")
    assert wget, "wget is needed (apt-get install wget)"
    work = tmp_path / "wget"
    work.mkdir()
    subprocess.run(
        [wget, "-q", "-r", "-l", "2", "--warc-file=site", "-e", "robots=off", loopback_site],
        cwd=work,
        check=False,
        timeout=60,
    )
    warc = work / "site.warc.gz"
    assert warc.exists()
    result = index_warc(warc)
    assert result.damage is None
    for fmt in ("cdxj", "cdx11"):
        expected = reference_lines(oracle, warc, fmt)
        assert result.lines(fmt) == expected
    statuses = {c.status for c in result.captures}
    assert {"200", "404"} <= statuses or {"200", "301"} <= statuses


def _ref_offsets(oracle: Path, warc: Path) -> list[int]:
    return [int(line.split()[-2]) for line in reference_lines(oracle, warc, "cdx11")[1:]]


def test_truncated_warc_keeps_lines_before_damage(oracle: Path, tmp_path: Path):
    good = write_warc(tmp_path / "good.warc.gz", n=60)
    offsets = sorted(set(_ref_offsets(oracle, good)))
    cut_record = offsets[len(offsets) // 2]
    bad = tmp_path / "bad.warc.gz"
    bad.write_bytes(good.read_bytes()[: cut_record + 40])
    result = index_warc(bad)
    assert result.damage is not None
    assert result.damage.offset == cut_record
    assert "truncated" in result.damage.reason
    assert [c.offset for c in result.captures] == [o for o in offsets if o < cut_record]
    full = index_warc(good)
    keep = len(result.captures)
    assert result.lines("cdxj", "good.warc.gz") == full.lines("cdxj")[:keep]


def _cuts(warc: Path, oracle: Path) -> list[tuple[int, int]]:
    """(record offset, cut position) inside several records of an uncompressed WARC."""
    data = warc.read_bytes()
    offsets = sorted(set(_ref_offsets(oracle, warc)))
    cuts = []
    for start in offsets[5:-1:7]:
        head_end = data.index(b"\r\n\r\n", start) + 4
        length = data.index(b"Content-Length:", start) + len("Content-Length:")
        # in the first line, just after "Content-Length:", in the block (payload)
        cuts += [(start, start + 3), (start, length), (start, head_end + 1)]
    return cuts


def test_truncated_uncompressed_warc_is_damage_at_the_cut_record(oracle: Path, tmp_path: Path):
    # uncompressed WARCs go to the warcio-based scanner; warcio ends quietly (or raises an
    # AttributeError) on a record cut by the end of the file: both must be damage at its offset
    good = write_warc(tmp_path / "good.warc", n=60, gz=False, seed=21)
    reference = reference_lines(oracle, good, "cdxj")
    full = index_warc(good)
    cuts = _cuts(good, oracle)
    assert len(cuts) >= 9
    for start, cut in cuts:
        bad = tmp_path / "good-cut.warc"
        bad.write_bytes(good.read_bytes()[:cut])
        result = index_warc(bad)
        assert result.scanner == "warcio"
        assert result.damage is not None, (start, cut)
        assert result.damage.offset == start, (start, cut, str(result.damage))
        assert result.damage.reason.strip()
        kept = result.lines("cdxj", "good.warc")
        assert kept == [c for c in full.lines("cdxj") if int(_offset(c)) < start]
        assert set(kept) <= set(reference)


def _offset(cdxj_line: str) -> str:
    return cdxj_line.split('"offset": "', 1)[1].split('"', 1)[0]


def test_corrupt_member_is_reported_with_offset(oracle: Path, tmp_path: Path):
    good = write_warc(tmp_path / "good.warc.gz", n=60)
    offsets = sorted(set(_ref_offsets(oracle, good)))
    target = offsets[10]
    data = bytearray(good.read_bytes())
    for i in range(target + 30, target + 60):
        data[i] ^= 0x5A
    bad = tmp_path / "corrupt.warc.gz"
    bad.write_bytes(bytes(data))
    result = index_warc(bad)
    assert result.damage is not None and len(result.damages) == 1
    assert result.damage.offset == target
    resumed = int(result.damage.reason.rsplit("next record at byte ", 1)[1].rstrip(")"))
    assert target < resumed <= offsets[11]
    # the scan resynchronises on the next member: every other record keeps its line
    assert result.lines("cdxj", "good.warc.gz") == [
        line
        for line in reference_lines(oracle, good, "cdxj")
        if f'"offset": "{target}"' not in line
    ]


def test_non_warc_files_are_rejected_with_a_clear_message(tmp_path: Path):
    text = tmp_path / "notes.warc.gz"
    text.write_text("this is not a web archive\n")
    with pytest.raises(NotAWarcError, match="not a WARC or ARC file"):
        index_warc(text)
    gzipped = tmp_path / "page.warc.gz"
    gzipped.write_bytes(gzip.compress(b"<html>hello</html>\r\n\r\n"))
    with pytest.raises(NotAWarcError, match="not a WARC or ARC file: first line"):
        index_warc(gzipped)
    empty = tmp_path / "empty.warc.gz"
    empty.write_bytes(b"")
    with pytest.raises(NotAWarcError, match="empty"):
        index_warc(empty)


def test_cli_prints_reference_lines_for_several_files(oracle: Path, tmp_path: Path):
    a = write_warc(tmp_path / "a.warc.gz", n=20, seed=3)
    b = write_warc(tmp_path / "b.warc", n=10, gz=False, seed=4)
    junk = tmp_path / "junk.warc.gz"
    junk.write_text("junk\n")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "app.cli.index",
            "index",
            "cdx",
            str(a),
            str(junk),
            str(b),
            "--format",
            "cdx11",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 2
    assert "junk.warc.gz: not a WARC or ARC file" in out.stderr
    expected = reference_lines(oracle, a, "cdx11") + reference_lines(oracle, b, "cdx11")
    assert out.stdout.splitlines() == expected
    assert out.stdout.splitlines().count(CDX11_HEADER) == 2


def test_harvestflow_index_cdx_command_prints_reference_lines(oracle: Path, tmp_path: Path):
    # the installed entry point (harvestflow's CLI registers app.cli.index), not only python -m
    harvestflow = Path(sys.executable).parent / "harvestflow"
    a = write_warc(tmp_path / "a.warc.gz", n=15, seed=5)
    b = write_warc(tmp_path / "b.warc.gz", n=15, seed=6)
    for fmt in ("cdxj", "cdx11"):
        out = subprocess.run(
            [str(harvestflow), "index", "cdx", str(a), str(b), "--format", fmt],
            capture_output=True,
            text=True,
            check=True,
            timeout=300,
        )
        expected = reference_lines(oracle, a, fmt) + reference_lines(oracle, b, fmt)
        assert out.stdout.splitlines() == expected


def test_payload_skipping_mode_gives_the_same_lines(oracle: Path, tmp_path: Path):
    warc = write_warc(tmp_path / "s.warc.gz", n=150, seed=12)
    skipped = index_warc(warc, verify=False)
    assert skipped.scanner == "skip" and skipped.damage is None
    assert skipped.lines("cdxj") == reference_lines(oracle, warc, "cdxj")
    assert skipped.lines("cdx11") == reference_lines(oracle, warc, "cdx11")


def test_payload_skipping_falls_back_when_members_hold_more_than_the_record(
    oracle: Path, tmp_path: Path
):
    # a writer that pads members with extra blank lines: ISIZE is not record + CRLF CRLF
    src = write_warc(tmp_path / "src.warc.gz", n=40, seed=13)
    padded = tmp_path / "padded.warc.gz"
    with open(padded, "wb") as out:
        for offset, length in sorted(
            {(c.offset, c.length) for c in index_warc(src).captures}
            | {(0, index_warc(src).captures[0].offset)}
        ):
            member = gzip.decompress(src.read_bytes()[offset : offset + length])
            out.write(gzip.compress(member + b"\r\n\r\n"))
    result = index_warc(padded, verify=False)
    assert result.scanner == "fast"  # skipping refused, every member inflated
    assert result.lines("cdxj") == reference_lines(oracle, padded, "cdxj")


@pytest.mark.parametrize(
    "url",
    [
        "http://a.fr/p?q=1",
        'http://a.fr/"q"',
        "http://a.fr/\\x",
        "http://a.fr/é",
        "http://a.fr/\x7f",
    ],
)
def test_cdxj_block_is_json_dumps_output_for_plain_and_odd_values(url: str):
    import json

    from harvestflow.formats.cdx import _json_fields, cdxj_line
    from indexing.record_model import Capture

    cap = Capture(
        rec_type="response",
        url=url,
        date="2026-11-22T03:15:00Z",
        mime="text/html",
        status="200",
        digest="sha1:AB",
        offset=10,
        length=5,
    )
    line = cdxj_line(cap, "f.warc.gz")
    assert line.split(" ", 2)[2] == json.dumps(_json_fields(cap, "f.warc.gz"))


def test_index_cdx_runs_as_many_processes_as_the_setting_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``[indexing] scan_processes`` is what ``index cdx`` uses without --processes."""
    import app.cli.index as index_cli
    from app.cli.main import main
    from harvestflow import settings

    seen: list[int] = []

    def fake_results(paths: list[str], processes: int, verify: bool, fmt: str) -> list[object]:
        seen.append(processes)
        return []

    monkeypatch.setattr(index_cli, "iter_results", fake_results)
    monkeypatch.setenv("HARVESTFLOW_INDEXING__SCAN_PROCESSES", "3")
    settings.reset()
    try:
        assert main(["index", "cdx", str(tmp_path / "a.warc.gz")]) == 0
        assert main(["index", "cdx", str(tmp_path / "a.warc.gz"), "--processes", "1"]) == 0
    finally:
        settings.reset()
    assert seen == [3, 1]


def test_index_cdx_forks_its_workers_unless_the_parent_runs_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A forked worker inherits the parent's imports (a spawned one starts an interpreter and
    imports the indexing stack again); a parent running threads keeps "spawn"."""
    import multiprocessing

    import app.cli.index as index_cli

    warcs = [str(write_warc(tmp_path / f"{n}.warc.gz", n=10)) for n in range(2)]
    methods: list[str] = []

    def context(method: str) -> object:
        methods.append(method)
        return multiprocessing.get_context(method)

    monkeypatch.setattr(index_cli, "get_context", context)
    expected = [index_cli._index_one((w, True, "cdxj")).text for w in warcs]
    assert [r.text for r in index_cli.iter_results(warcs, 2)] == expected
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)
    worker.start()
    try:
        assert [r.text for r in index_cli.iter_results(warcs, 2)] == expected
    finally:
        stop.set()
        worker.join()
    assert methods == ["fork", "spawn"]
