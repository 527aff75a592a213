"""The digests crawler.warc.records puts in each record are the ones warcio computes itself.

Why: the record builders compute the payload and block digests (warcio's builder and writer
then skip theirs, a CPU cut per fetched URL); a digest that differed from warcio's — the HTTP
header bytes hashed differently, the payload digest of the wrong bytes — would make every
record fail ``warcio check`` and every indexer's digest. warcio is the oracle here: the same
record with our digests removed is written by warcio, which computes its own.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import io
import itertools
import subprocess
from collections.abc import Callable

import pytest
from warcio.recordloader import ArcWarcRecord
from warcio.warcwriter import WARCWriter

from crawler.warc import records
from tests.support.crawl import REPO

DATE = "2026-11-30T13:00:00.000000Z"
PAGE = b"<html><body>" + "caf\u00e9 ".encode() * 300 + b"<a href='/x'>x</a></body></html>"


def _response() -> ArcWarcRecord:
    http = records.response_http_headers(
        200, "HTTP/1.1", [("Content-Type", "text/html"), ("X-\u00dc", "\u00e9t\u00e9")]
    )
    rid = records.new_record_id()
    digest = records.sha1_digest(PAGE)
    return records.response_record(
        "http://a.test/", http, PAGE, DATE, rid, "10.0.0.1", None, "<urn:x>", digest
    )


def _truncated_response_without_given_digest() -> ArcWarcRecord:
    http = records.response_http_headers(200, "HTTP/1.1", [("Content-Length", "99999")])
    rid = records.new_record_id()
    return records.response_record("http://a.test/t", http, PAGE[:100], DATE, rid, None, "length")


def _get() -> ArcWarcRecord:
    return records.request_record(
        "http://a.test/?q=1", "GET", [("Host", "a.test")], b"", DATE, "<r>"
    )


def _post() -> ArcWarcRecord:
    return records.request_record(
        "http://a.test/api", "POST", [("Host", "a.test")], b"q=1", DATE, "<r>"
    )


def _revisit() -> ArcWarcRecord:
    http = records.response_http_headers(304, "HTTP/1.1", [("ETag", '"e"')])
    return records.revisit_record(
        "http://a.test/", http, "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ", DATE,
        records.new_record_id(), None, records.PROFILE_NOT_MODIFIED, "http://a.test/", DATE, None,
    )  # fmt: skip


def _metadata() -> ArcWarcRecord:
    fields = [("via", "http://a.test/"), ("outlink", "http://a.test/x L a/@href")]
    return records.metadata_record("http://a.test/", DATE, "<r>", fields)


def _dns() -> ArcWarcRecord:
    return records.dns_record("a.test", "10.0.0.1", dt.datetime(2026, 1, 1, tzinfo=dt.UTC))


def _screenshot() -> ArcWarcRecord:
    return records.screenshot_record("urn:screenshot:http://a.test/", DATE, b"\x89PNG\r\n", "<r>")


BUILDERS: list[Callable[[], ArcWarcRecord]] = [
    _response, _truncated_response_without_given_digest, _get, _post, _revisit, _metadata,
    _dns, _screenshot,
]  # fmt: skip


def _written(record: ArcWarcRecord) -> bytes:
    out = io.BytesIO()
    WARCWriter(out, gzip=False, warc_version=records.WARC_VERSION).write_record(record)
    return out.getvalue()


@pytest.mark.parametrize("build", BUILDERS, ids=lambda b: b.__name__.strip("_"))
def test_each_record_carries_the_digests_warcio_computes_itself(
    build: Callable[[], ArcWarcRecord], monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = itertools.count()
    monkeypatch.setattr(records, "new_record_id", lambda: f"<urn:uuid:{next(ids)}>")
    ours = build()
    assert ours.rec_headers.get_header("WARC-Block-Digest")
    ids = itertools.count()  # the same record again, its digests left to warcio
    theirs = build()
    theirs.rec_headers.remove_header("WARC-Block-Digest")
    if theirs.rec_type != "revisit":  # a revisit's payload digest is its original's
        theirs.rec_headers.remove_header("WARC-Payload-Digest")
    assert _written(ours) == _written(theirs)


def test_sha1_digest_is_base32_of_the_sha1() -> None:
    for data in (b"", b"a", PAGE):
        expected = base64.b32encode(hashlib.sha1(data).digest()).decode()
        assert records.sha1_digest(data) == "sha1:" + expected


def test_warcio_check_passes_on_every_kind_of_record(tmp_path) -> None:
    path = tmp_path / "all.warc.gz"
    with path.open("wb") as fh:
        writer = WARCWriter(fh, gzip=True, warc_version=records.WARC_VERSION)
        for build in BUILDERS:
            writer.write_record(build())
    check = subprocess.run(
        [str(REPO / ".oracle-venv" / "bin" / "warcio"), "check", "-v", str(path)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.count("digest pass") >= len(BUILDERS) - 1  # a revisit has no block
