"""A script-built site served the way production servers serve it — every text type compressed
(gzip, br, zstd, deflate, stacked ``gzip, br``) by Accept-Encoding, ``Vary: Accept-Encoding``
— renders as completely as when it is served plain: the browser gets the app script and the
JSON API decoded (before crawler/inflate.py decoded only HTML/XML/text, the browser got empty
bodies for both and the crawl found the few URLs of the shell), while the WARC keeps exactly
the compressed bytes the server sent."""

from __future__ import annotations

import base64
import hashlib
import subprocess
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from crawler.rendering.cdp import find_chromium
from tests.support import scriptsite
from tests.support.environment import oracle
from tests.support.renderjobs import Rendered, crawl_scriptsite


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    find_chromium()
    return crawl_scriptsite(
        tmp_path_factory.mktemp("compressed"), "html", "html", negotiate=scriptsite.compressed
    )


def _responses(rendered: Rendered) -> dict[str, tuple[dict[str, str], str, bytes]]:
    """URL → (WARC headers, the HTTP Content-Encoding, the payload as archived, not decoded)."""
    result, _, _ = rendered
    out = {}
    for warc in result.data_warcs():
        with warc.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                if rec.rec_type != "response":
                    continue
                uri = rec.rec_headers.get_header("WARC-Target-URI")
                coding = rec.http_headers.get_header("Content-Encoding") or ""
                out[uri] = (dict(rec.rec_headers.headers), coding, rec.raw_stream.read())
    return out


def test_a_compressed_script_built_site_renders_every_expected_url(rendered: Rendered) -> None:
    result, port, requests = rendered
    prefix = f"http://{scriptsite.HOST}:{port}"
    archived = _responses(rendered)
    expected = [f"{prefix}{p}" for p in scriptsite.ALL_PATHS]
    expected.append(f"http://{scriptsite.CDN_HOST}:{port}/cdn.png")
    missing = [u for u in expected if u not in archived]
    assert not missing, f"{len(expected) - len(missing)} of {len(expected)} captured: {missing}"
    # the site compressed what it sent: the script and the API were not served plain
    assert archived[f"{prefix}/app.js"][1] == "br"
    assert archived[f"{prefix}/api/stories-1.json"][1] == "zstd"
    assert archived[f"{prefix}/api/stories-2.json"][1] == "gzip, br"
    seed = f"{prefix}/"
    assert "rendered" in result.line_for(seed)[11].split(",")
    for n in scriptsite.STORIES:  # found only in the DOM the script built from the JSON
        line = result.line_for(f"{prefix}/story/{n}.html")
        assert (line[1], line[4], line[5]) == ("200", "L", seed), line
    assert [r for r in requests if requests.count(r) > 1] == []  # asked once per URL


def test_the_warc_keeps_the_compressed_bytes_the_server_sent(rendered: Rendered) -> None:
    _, port, _ = rendered
    prefix = f"http://{scriptsite.HOST}:{port}"
    archived = _responses(rendered)
    compressed = 0
    for path, raw in scriptsite.ROUTES.items():
        headers, coding, payload = archived[f"{prefix}{path}"]
        sent = scriptsite.encoded(path, raw)
        body, expected_coding = sent if sent is not None else (raw.body, "")
        assert (coding, payload) == (expected_coding, body), path
        digest = "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode()
        assert headers["WARC-Payload-Digest"] == digest, path
        compressed += sent is not None
    assert compressed >= 10


def test_the_compressed_sites_warcs_pass_warcio_check(rendered: Rendered) -> None:
    result, _, _ = rendered
    warcs: list[Path] = result.data_warcs()
    proc = subprocess.run(
        [str(oracle("warcio")), "check", "-v", *map(str, warcs)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
