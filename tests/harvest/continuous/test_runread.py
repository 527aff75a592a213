"""Reading back a continuous crawl run: the noise rules' bodies are decoded within the crawler's
inflate bounds (crawler/inflate.py), whatever the Content-Encoding.

Before, runread read each body with warcio's ``content_stream().read()``: a compression bomb
was inflated whole (gigabytes of zeros in a few MB), zstd and stacked encodings not at all (the
noise digest was taken of the compressed bytes).
"""

from __future__ import annotations

import gzip
from pathlib import Path

import brotli
from backports import zstd

from harvest.continuous.noise import NoiseFilter, NoiseRule
from harvest.continuous.runread import read_warc_infos
from tests.support.bombs import bomb_warc, call_measured
from tests.support.hostile import brotli_bomb, gzip_bomb, zstd_bomb

SITE = "http://news.rhythm.test"
# past the address space call_measured's child runs in (a reader inflating a bomb whole fails
# there); 10 GiB made each bomb ~2.5 CPU-s to build
BOMB_SIZE = 4 << 30
GROWTH_BOUND_MB = 200
PAGE = b"<html><p>generated at 10:42</p><p>the story</p></html>"
RULES = [NoiseRule(r"^http://news\.rhythm\.test/", r"generated at \d\d:\d\d")]


def noise_digests(warc: str) -> dict[str, str | None]:
    """(In a child process) the noise digest of every response of ``warc``."""
    infos = read_warc_infos([Path(warc)], NoiseFilter(RULES))
    return {url: info.noise_digest for url, info in infos.items()}


def test_noise_digests_are_read_within_the_inflate_bounds(tmp_path: Path) -> None:
    responses = {
        f"{SITE}/bomb-gzip": ("text/html", "gzip", gzip_bomb(BOMB_SIZE, PAGE)),
        f"{SITE}/bomb-br": ("text/html", "br", brotli_bomb(BOMB_SIZE, PAGE)),
        f"{SITE}/bomb-zstd": ("text/html", "zstd", zstd_bomb(BOMB_SIZE, PAGE)),
        f"{SITE}/zstd": ("text/html", "zstd", zstd.compress(PAGE)),
        f"{SITE}/stacked": ("text/html", "gzip, br", brotli.compress(gzip.compress(PAGE))),
        f"{SITE}/plain": ("text/html", "", PAGE),
    }
    ((_, name, _, _), *_) = bomb_warc(tmp_path, responses)
    digests, growth_kb = call_measured(
        "tests.harvest.continuous.test_runread:noise_digests", str(tmp_path / name)
    )
    print(f"runread peak RSS growth: {growth_kb // 1024} MB (bound {GROWTH_BOUND_MB} MB)")
    stripped = NoiseFilter(RULES).digest(f"{SITE}/plain", PAGE)
    assert stripped is not None
    # decoded whatever the encoding: the same digest as the page served plain
    assert digests[f"{SITE}/zstd"] == digests[f"{SITE}/stacked"] == stripped
    assert digests[f"{SITE}/plain"] == stripped
    # past the bounds: no noise digest (the strict payload digest judges the page)
    for bomb in ("gzip", "br", "zstd"):
        assert digests[f"{SITE}/bomb-{bomb}"] is None, bomb
    assert growth_kb < GROWTH_BOUND_MB * 1024, f"grew by {growth_kb // 1024} MB"
