"""Gzip members of a WARC file, read one at a time from an ``mmap``: streamed or inflated whole.

Why a module of its own: the fast scanner (:mod:`indexing.warcscan`) decides what a member holds;
this part only hands out a member's inflated bytes, with memory bounded however large the record
(``OUT_MAX`` per inflate call, ``WHOLE_MAX`` for a member inflated whole by libdeflate in
indexing/_gzmember.c), and reports a damaged or truncated member as :class:`WarcDamage` at its
offset, as the reference reader would.
"""

from __future__ import annotations

import importlib
import mmap
import struct
import types
import zlib
from typing import Any

from indexing.record_model import WarcDamage

_inflate_mod: types.ModuleType
_INFLATE_ERRORS: tuple[type[BaseException], ...]
try:  # ISA-L's inflate (python-isal, PSF licence) is faster than zlib's, same API
    from isal import isal_zlib

    _inflate_mod = isal_zlib
    _INFLATE_ERRORS = (zlib.error, isal_zlib.error)  # type: ignore[assignment]  # stub types it badly
except ImportError:  # pragma: no cover - isal is a dependency, zlib is the safety net
    _inflate_mod = zlib
    _INFLATE_ERRORS = (zlib.error,)

Inflater: Any
try:  # whole members inflated by libdeflate (indexing/_gzmember.c), built by pip install -e .
    Inflater = importlib.import_module("indexing._gzmember").Inflater
except ImportError:  # pragma: no cover - a build without libdeflate: the streaming path only
    Inflater = None

WHOLE_MAX = 1 << 25  # members inflating to more than this are streamed (memory stays bounded)
WHOLE_FIRST = 1 << 13  # a whole member's bytes handed to the header parser first
CHUNK = 1 << 16  # compressed bytes fed per call (at most)
FIRST_FEED = 1 << 12  # compressed bytes fed first
OUT_MAX = 1 << 20  # bound on the output of one inflate call (memory stays flat on huge records)
GZIP_MAGIC = b"\x1f\x8b"


class Member:
    """One gzip member being inflated; ``read()`` returns output pieces, b"" at the member end."""

    __slots__ = ("d", "feed", "forced_end", "mm", "pending", "size", "start", "step")

    def __init__(self, mm: mmap.mmap, start: int, size: int) -> None:
        self.d = _inflate_mod.decompressobj(31)
        self.mm = mm
        self.start = start
        self.feed = start
        # bytes to feed next: small first (most members are a few hundred bytes, and every byte
        # fed past the member end is copied again into ``unused_data``), doubling up to CHUNK
        self.step = FIRST_FEED
        self.size = size
        self.pending = b""
        self.forced_end: int | None = None

    def find_end(self, isize: int) -> int | None:
        """Where this member ends if it inflates to ``isize`` bytes, found without inflating.

        The gzip trailer ends with ISIZE (size mod 2**32, little-endian) and the next member
        starts with 1f 8b 08: the first place of that 7-byte pattern (a false match has odds of
        about 2**-56 per byte) marks the end, or ISIZE as the file's last 4 bytes.
        """
        # zlib may already have read the trailer while holding output back: search from the
        # member's first possible trailer position, not from the bytes consumed
        lo = self.start + 18
        size4 = struct.pack("<I", isize & 0xFFFFFFFF)
        idx = self.mm.find(size4 + GZIP_MAGIC + b"\x08", lo)
        if idx >= 0:
            return idx + 4
        if self.size - 4 >= lo and self.mm[self.size - 4 : self.size] == size4:
            return self.size
        return None

    def read(self, max_out: int = OUT_MAX, feed: int = CHUNK) -> bytes:
        d = self.d
        while not d.eof:
            if not self.pending:
                if self.feed >= self.size:
                    raise WarcDamage(self.start, "truncated gzip member (file ends inside it)")
                step = min(self.step, feed)
                self.pending = self.mm[self.feed : self.feed + step]
                self.feed += len(self.pending)
                self.step = step * 2
            try:
                out = d.decompress(self.pending, max_out)
            except _INFLATE_ERRORS as exc:
                raise WarcDamage(self.start, f"corrupt gzip member: {exc}") from exc
            self.pending = d.unconsumed_tail
            if out:
                return out
        return b""

    @property
    def end(self) -> int:
        if self.forced_end is not None:
            return self.forced_end
        return self.feed - len(self.d.unused_data) - len(self.pending)


class Whole:
    """One gzip member already inflated whole (CRC checked) by libdeflate.

    ``read()`` hands its bytes out like :class:`Member` does (headers first, a little at a
    time); the payload itself is never copied out unless it must be hashed or kept.
    """

    __slots__ = ("end", "given", "inf", "size", "start")

    def __init__(self, inf: Any, start: int, end: int, size: int) -> None:
        self.inf = inf
        self.start = start
        self.end = end
        self.size = size
        self.given = 0

    def read(self, max_out: int = OUT_MAX, feed: int = CHUNK) -> bytes:
        step = WHOLE_FIRST if not self.given else min(max_out, max(self.given, CHUNK))
        out: bytes = self.inf.copy(self.given, self.given + step)
        self.given += len(out)
        return out


def open_member(mm: mmap.mmap, pos: int, size: int, inf: Any) -> Member | Whole:
    """The member at ``pos``: inflated whole when it can be, else streamed (a member libdeflate
    refuses is streamed too, so a damaged one is reported exactly as the streaming path says)."""
    if inf is not None:
        got = inf.member(mm, pos, WHOLE_MAX)
        if got is not None:
            return Whole(inf, pos, got[0], got[1])
    return Member(mm, pos, size)
