"""A job's dedup captures read from the merged CDX: the ranges of its domains found as ``look``
finds them, the latest capture holding a payload per URL, every sorted index file of the root
(big, merged days it lacks, per-file files not merged yet) read, sidecar fields kept."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
from pathlib import Path

import pytest

from harvestflow import settings as settings_mod
from indexing.dedup_index import write_index
from indexing.dedup_merged import DomainKeyError, host_key, key_ranges, lines_in_ranges, select
from indexing.layout import Layout

DIGEST = "A" * 32


def _line(key: str, ts: str, url: str, mime: str = "image/png", status: str = "200",
          digest: str = DIGEST, offset: int = 0, name: str = "1-1-x.warc.gz") -> str:  # fmt: skip
    return f"{key} {ts} {url} {mime} {status} {digest} - - 100 {offset} {name}"


def _sorted_file(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = sorted({ln.encode() for ln in lines})
    path.write_bytes(b"".join(ln + b"\n" for ln in data))
    return path


def test_a_domains_ranges_hold_the_lines_look_finds_for_its_host_keys(tmp_path: Path) -> None:
    rnd = random.Random(7)
    hosts = []
    for i in range(300):
        name = f"d{i:03d}"
        hosts += [f"test,{name})", f"test,{name},img)", f"test,{name}:8080)", f"test,{name}-x)",
                  f"test,{name}0)", f"test,{name},www,cdn:81)"]  # fmt: skip
    lines = [
        _line(f"{h}/p{rnd.randrange(50)}", f"2026{rnd.randrange(10**10):010d}", "http://x/")
        for h in hosts
        for _ in range(rnd.randrange(1, 6))
    ]
    cdx = _sorted_file(tmp_path / "big.cdx", lines)
    domains = [f"d{i:03d}.test" for i in rnd.sample(range(300), 40)] + ["img.d007.test"]
    got = [ln.decode() for ln in lines_in_ranges(cdx, key_ranges(domains))]
    env = {**os.environ, "LC_ALL": "C"}
    want: set[str] = set()
    for domain in domains:
        key = host_key(domain).decode()
        for end in (")", ",", ":"):
            out = subprocess.run(["look", key + end, str(cdx)], env=env, capture_output=True,
                                 text=True)  # fmt: skip
            assert out.returncode in (0, 1), out.stderr
            want.update(out.stdout.splitlines())
    assert got == sorted(want, key=str.encode)
    assert any(",img)" in ln for ln in got) and any(":8080)" in ln for ln in got)
    names = {d.split(".")[-2] for d in domains}  # d123, the decoys d123-x and d1230 stay out
    assert {re.split(r"[),:]", ln[len("test,") :], maxsplit=1)[0] for ln in got} == names


def test_a_name_that_is_no_host_is_refused_by_name() -> None:
    with pytest.raises(DomainKeyError, match=r"'a b\.test'"):
        host_key("a b.test")


def test_per_url_the_latest_capture_holding_a_payload_is_kept(tmp_path: Path) -> None:
    a, b = "B" * 32, "C" * 32
    k, u = "test,example-a)/img.png", "http://www.example-a.test/img.png"
    lines = [
        # stored a, then b, then a revisit of a (a payload found at that URL before): a's
        # capture is the one holding the URL's latest payload
        _line(k, "20240101000000", u, digest=a, offset=10),
        _line(k, "20250101000000", u, digest=b, offset=20),
        _line(k, "20260101000000", u, mime="warc/revisit", digest=a, offset=30),
        # a page whose latest answer is a 404: its last 200 stays
        _line("test,example-a)/p", "20250101000000", "http://example-a.test/p", offset=40),
        _line(
            "test,example-a)/p",
            "20260101000000",
            "http://example-a.test/p",
            status="404",
            digest=b,
            offset=50,
        ),
        # a POST answer (keyed under its body) and a URL only ever revisited: nothing to keep
        _line(
            "test,example-a)/api?__wb_method=post&q=1",
            "20260101000000",
            "http://example-a.test/api",
            offset=60,
        ),
        _line(
            "test,example-a)/copy",
            "20260101000000",
            "http://example-a.test/copy",
            mime="warc/revisit",
            offset=70,
        ),
        # two spellings of one key (http and https) are two URLs
        _line(
            "test,example-a,static)/s.js",
            "20250101000000",
            "http://static.example-a.test/s.js",
            offset=80,
        ),
        _line(
            "test,example-a,static)/s.js",
            "20250102000000",
            "https://static.example-a.test/s.js",
            offset=90,
        ),
    ]
    cdx = _sorted_file(tmp_path / "big.cdx", lines)
    again = _sorted_file(tmp_path / "day.cdx", lines[:2])  # one capture in two merged files
    kept = [ln.decode() for ln in select([cdx, again], ["example-a.test"])]
    assert [int(ln.split(" ")[9]) for ln in kept] == [10, 40, 80, 90]


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("HARVESTFLOW_DATA_DIR", str(tmp_path / "data"))
    settings_mod.reset()
    yield Layout.from_settings(settings_mod.get_settings())
    settings_mod.reset()


def test_every_sorted_index_file_of_the_root_is_read_and_sidecars_give_etags(
    layout: Layout, tmp_path: Path
) -> None:
    def cap(path: str, ts: str, name: str, offset: int) -> str:
        return _line(f"test,example-a)/{path}", ts, f"http://www.example-a.test/{path}",
                     offset=offset, name=name)  # fmt: skip

    old, mid, new = (
        "1-1-20240101000000000-00000-h.warc.gz",
        "2-3-20250101000000000-00000-h.warc.gz",
        ("3-4-20260101000000000-00000-h.warc.gz"),
    )
    big = _sorted_file(layout.big_cdx("cdx11"), [cap("a", "20240101000000", old, 0),
                                                  cap("b", "20240101000000", old, 500)])  # fmt: skip
    # a merged day the big file holds (state), one it does not hold yet
    held = _sorted_file(
        layout.cdx_merged() / "2024-01-01.cdx", [cap("a", "20240101000000", old, 0)]
    )
    fresh = _sorted_file(
        layout.cdx_merged() / "2025-01-01.cdx", [cap("b", "20250101000000", mid, 0)]
    )
    st = held.stat()
    big.with_name("big.cdx.state.json").write_text(
        json.dumps({held.name: [st.st_size, st.st_mtime_ns]})
    )
    # a day's per-file file not merged yet, and one its day's merge holds (left out)
    day = layout.index_root() / "cdx" / "daily"
    _sorted_file(day / "2026-01-01" / (new + ".cdx"), [cap("c", "20260101000000", new, 0)])
    _sorted_file(day / "2025-01-01" / (mid + ".cdx"), [cap("b", "20250101000000", mid, 0)])
    fresh.with_name(fresh.name + ".inputs.json").write_text(
        json.dumps({"inputs": [[mid + ".cdx", 1]]})
    )
    # another domain's capture stays out
    _sorted_file(day / "2026-01-01" / ("9-9-z.warc.gz.cdx"),
                 [_line("test,example-b)/", "20260101000000", "http://example-b.test/")])  # fmt: skip
    sidecar = layout.dedup_dir(3) / (mid + ".dedup")
    sidecar.parent.mkdir(parents=True)
    sidecar.write_text(f'http://www.example-a.test/b\tsha1:{DIGEST}\t2025-01-01T00:00:00Z\t{mid}'
                       '\t0\t<urn:uuid:b>\t"etag-b"\tWed, 01 Jan 2025 00:00:00 GMT\n')  # fmt: skip
    out = tmp_path / "dedup.txt"
    assert write_index(out, ["example-a.test"]) == 3
    assert out.read_text().splitlines() == [
        f"http://www.example-a.test/a\tsha1:{DIGEST}\t2024-01-01T00:00:00Z\t{old}\t0\t-\t-\t-",
        f"http://www.example-a.test/b\tsha1:{DIGEST}\t2025-01-01T00:00:00Z\t{mid}\t0"
        '\t<urn:uuid:b>\t"etag-b"\tWed, 01 Jan 2025 00:00:00 GMT',
        f"http://www.example-a.test/c\tsha1:{DIGEST}\t2026-01-01T00:00:00Z\t{new}\t0\t-\t-\t-",
    ]
