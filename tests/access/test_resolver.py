"""The WARC resolver's HTTP range answers (what pywb's HttpLoader asks for), on a local file;
the locator (database lookups) is replaced by a fixed answer to isolate the HTTP part."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from access.resolver import Location, make_server
from harvestflow import settings as settings_mod
from tests.support.environment import free_port


class FixedLocator:
    def __init__(self, known: dict[str, Path]) -> None:
        self.known = known

    def locate(self, name: str) -> Location | None:
        path = self.known.get(name)
        return Location(path=path) if path else None


@pytest.fixture
def resolver(tmp_path: Path):  # type: ignore[no-untyped-def]
    warc = tmp_path / "1-2-20261125000000000-00000-h.warc.gz"
    warc.write_bytes(bytes(range(256)) * 40)
    server = make_server(settings_mod.get_settings(), "127.0.0.1", free_port())
    server.locator = FixedLocator({warc.name: warc})  # type: ignore[assignment]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", warc
    server.shutdown()
    server.server_close()


def fetch(url: str, rng: str | None = None) -> tuple[int, bytes, dict[str, str]]:
    req = urllib.request.Request(url, headers={"Range": rng} if rng else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read(), dict(resp.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), dict(exc.headers)


def test_ranges_whole_file_and_unknown_names(resolver) -> None:  # type: ignore[no-untyped-def]
    base, warc = resolver
    data = warc.read_bytes()
    url = f"{base}/warc/{warc.name}"
    status, body, headers = fetch(url, "bytes=100-299")
    assert (status, body) == (206, data[100:300])
    assert headers["Content-Range"] == f"bytes 100-299/{len(data)}"
    assert fetch(url, "bytes=0-0")[:2] == (206, data[:1])
    assert fetch(url, f"bytes={len(data) - 5}-")[:2] == (206, data[-5:])
    assert fetch(url, "bytes=10-999999")[:2] == (206, data[10:])
    assert fetch(url)[:2] == (200, data)
    assert fetch(url, f"bytes={len(data)}-")[0] == 416
    assert fetch(f"{base}/warc/unknown.warc.gz")[0] == 404
    assert fetch(f"{base}/warc/..%2Fetc%2Fpasswd")[0] == 400
    assert fetch(f"{base}/health")[:2] == (200, b"ok\n")


def test_a_range_that_ends_before_it_starts_is_refused_416_not_a_negative_length(
    resolver,  # type: ignore[no-untyped-def]
) -> None:
    base, warc = resolver
    url = f"{base}/warc/{warc.name}"
    status, body, headers = fetch(url, "bytes=100-50")
    assert status == 416, (status, headers)
    assert b"the last byte comes before the first" in body
    assert int(headers["Content-Length"]) == len(body)


@pytest.mark.parametrize(
    "header",
    [
        "bytes=0-1,5-6",  # several ranges: pywb never asks, we never answer one wrongly
        "bytes=abc-",
        "bytes=-",
        "bytes=1-2-3",
        "items=0-5",
        "bytes=0x10-20",
        "bytes=" + "9" * 30 + "-",
    ],
)
def test_malformed_and_multiple_ranges_are_refused_416_with_the_header_named(
    resolver,  # type: ignore[no-untyped-def]
    header: str,
) -> None:
    base, warc = resolver
    status, body, headers = fetch(f"{base}/warc/{warc.name}", header)
    assert status == 416, (header, status)
    assert b"Range" in body and int(headers["Content-Length"]) == len(body)
    assert "Content-Range" not in headers


def test_a_suffix_range_gives_the_last_bytes(resolver) -> None:  # type: ignore[no-untyped-def]
    base, warc = resolver
    data = warc.read_bytes()
    status, body, headers = fetch(f"{base}/warc/{warc.name}", "bytes=-7")
    assert (status, body) == (206, data[-7:])
    assert headers["Content-Range"] == f"bytes {len(data) - 7}-{len(data) - 1}/{len(data)}"
    assert fetch(f"{base}/warc/{warc.name}", "bytes=-0")[0] == 416
