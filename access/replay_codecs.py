"""Content codings pywb's replay decodes, beyond warcio's gzip, deflate and br: ``zstd`` and
stacked codings such as ``gzip, br`` (the order the server applied them), as the crawler
accepts them (crawler/inflate.py) and production servers send them.

Why: the WARC keeps the bytes the server sent; pywb decodes a record's body only for a coding
warcio knows and otherwise drops the Content-Encoding header and sends the coded bytes, so a
replayed app script or JSON API in zstd reached the reader's browser as garbage. This module
runs inside the replay service's own virtualenv (installed there by access/setup-replay.sh,
loaded at start by a ``.pth`` file): it imports only warcio and the zstd backport, never the
platform.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from warcio.bufferedreaders import BufferedReader


class Decompressor(Protocol):
    unused_data: Any

    def decompress(self, data: bytes) -> bytes: ...


class _Zstd:
    """Streaming zstd (every frame of the body), in warcio's decompressor shape."""

    def __init__(self) -> None:
        from backports.zstd import ZstdDecompressor

        self._new = ZstdDecompressor
        self._dec = ZstdDecompressor()
        self.unused_data: bytes | None = None

    def decompress(self, data: bytes) -> bytes:
        out = []
        while data:
            out.append(self._dec.decompress(data))
            if not self._dec.eof:
                break
            data = self._dec.unused_data  # a following frame
            self._dec = self._new()
        return b"".join(out)


class _Stacked:
    """Codings undone last-applied first (``gzip, br``: br, then gzip), streamed."""

    def __init__(self, stages: list[Decompressor]) -> None:
        self._stages = stages
        self.unused_data: bytes | None = None

    def decompress(self, data: bytes) -> bytes:
        for stage in self._stages:
            data = stage.decompress(data)
        return data


def _single(name: str) -> Callable[[], Decompressor]:
    if name == "zstd":
        return _Zstd
    known: Callable[[], Decompressor] = BufferedReader.DECOMPRESSORS[name]
    return known


def _stacked(names: list[str]) -> Callable[[], Decompressor]:
    makers = [_single(n) for n in reversed(names)]
    return lambda: _Stacked([make() for make in makers])


def install() -> None:
    """Register ``zstd`` and every stack of two codings of gzip, deflate, br and zstd."""
    table = BufferedReader.DECOMPRESSORS
    table["zstd"] = _Zstd
    singles = [n for n in ("gzip", "deflate", "br", "zstd") if n in table]
    for first in singles:
        for second in singles:
            table[f"{first}, {second}"] = _stacked([first, second])


install()
