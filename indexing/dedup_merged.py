"""The captures a job may de-duplicate against, read from the merged CDX by the job's domains.

Why from the merged CDX: it holds every capture of every earlier job, sorted by SURT key, so a
domain's captures lie in a few contiguous ranges found by binary search (never a scan, never a
list per job). Kept per URL: its latest capture that holds a payload (200, not a revisit, a
digest, a GET), or for a revisit of another URL's payload the newest capture, whose payload the
crawler finds by digest.
"""

from __future__ import annotations

import heapq
import itertools
import json
import logging
import os
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from harvestflow.formats.cdx import parse_cdx11
from harvestflow.formats.surt import SurtError, surt
from indexing.errors import IndexingError

log = logging.getLogger(__name__)

# after a host key: ")" ends the host, "," starts a subdomain, ":" a port (byte order: ) , :)
_HOST_ENDS = (b")", b",", b":")
_LINEAR_BYTES = 1 << 16  # below this, a range's start is found by reading, not by bisecting


class DomainKeyError(IndexingError, ValueError):
    """A domain name that has no SURT host key (what and which name in the message)."""


def host_key(domain: str) -> bytes:
    """The SURT host key of a domain (``example-a.test`` → ``test,example-a``)."""
    name = domain.strip().lower().rstrip(".")
    if not name or "/" in name or " " in name:
        raise DomainKeyError(f"domain {domain!r}: not a host name")
    try:
        key = surt(f"http://{name}/")
    except SurtError as exc:
        raise DomainKeyError(f"domain {domain!r}: {exc}") from exc
    if not key.endswith(")/"):
        raise DomainKeyError(f"domain {domain!r}: SURT key {key!r} has no host part")
    return key[:-2].encode("utf-8")


def key_ranges(domains: Iterable[str]) -> list[tuple[bytes, bytes]]:
    """Sorted, disjoint byte ranges [start, end) of the CDX keys of ``domains``' captures.

    A listed subdomain of a listed domain falls inside the domain's ranges (merged away).
    """
    ranges = sorted(
        (key + end, key + bytes([end[0] + 1]))
        for key in map(host_key, domains)
        for end in _HOST_ENDS
    )
    merged: list[tuple[bytes, bytes]] = []
    for start, end in ranges:
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


class _SortedFile:
    """Reads of a sorted file by offset (``pread``): a search reads a few small pieces near
    where it looks, never maps the file (its pages would count in the reader's memory)."""

    def __init__(self, fd: int, size: int) -> None:
        self.fd, self.size = fd, size

    def read(self, n: int, pos: int) -> bytes:
        return os.pread(self.fd, n, pos)

    def line_start(self, pos: int) -> int:
        """The first line start at or after ``pos``."""
        if pos <= 0:
            return 0
        pos -= 1
        while pos < self.size:
            piece = self.read(4096, pos)
            nl = piece.find(b"\n")
            if nl >= 0:
                return pos + nl + 1
            pos += len(piece)
        return self.size

    def below(self, pos: int, target: bytes) -> bool:
        """Whether the line starting at ``pos`` sorts below ``target`` (a read running past a
        shorter line's newline compares right: ``\\n`` sorts below every byte of a key)."""
        return pos < self.size and self.read(len(target), pos) < target

    def first_at_or_after(self, target: bytes, lo: int) -> int:
        """Offset of the first line starting at or after ``lo`` whose bytes are >= ``target``
        (the file's size when there is none): galloping from ``lo`` (the next domain's range
        is usually near the last one's end), then bisecting, then reading the last block."""
        lo = self.line_start(lo)
        if not self.below(lo, target):
            return lo
        hi, step = self.size, _LINEAR_BYTES
        while lo + step < self.size:  # the answer is a line start in (lo, hi]
            probe = self.line_start(lo + step)
            if not self.below(probe, target):
                hi = probe
                break
            lo, step = probe, step * 2
        while hi - lo > _LINEAR_BYTES:
            mid = self.line_start((lo + hi) // 2)
            if mid >= hi:
                break
            if self.below(mid, target):
                lo = mid
            else:
                hi = mid
        block = self.read(hi - lo, lo)
        pos = 0
        while pos < len(block):  # lines starting in [lo, hi): the first not below target
            # every line here ends inside the block (hi starts a line): its newline decides
            # before the block's end does
            if block[pos : pos + len(target)] >= target:
                return lo + pos
            nl = block.find(b"\n", pos)
            if nl < 0:
                break
            pos = nl + 1
        return hi


def lines_in_ranges(path: Path, ranges: list[tuple[bytes, bytes]]) -> Iterator[bytes]:
    """The lines of one sorted index file that fall in ``ranges`` (sorted), in file order."""
    fd = os.open(path, os.O_RDONLY)
    try:
        f = _SortedFile(fd, os.fstat(fd).st_size)
        pos = 0
        for start, end in ranges:
            first = f.first_at_or_after(start, pos)
            last = f.first_at_or_after(end, first)
            if last > first:
                yield from f.read(last - first, first).splitlines()
            pos = last
    finally:
        os.close(fd)


@dataclass(frozen=True, slots=True)
class CdxCapture:
    """The fields of one CDX (CDX11 or CDXJ) line the dedup index needs."""

    key: bytes
    timestamp: str
    url: str
    mime: str
    status: str
    digest: str  # sha1:BASE32
    filename: str
    offset: int


def parse_line(line: bytes) -> CdxCapture | None:
    """A CDX11 or CDXJ line's capture; None for a line that is neither (or a header)."""
    text = line.decode("utf-8", "surrogateescape")
    if text.endswith("}") and " {" in text:
        key, stamp, body = text.split(" ", 2)
        try:
            f = json.loads(body)
            offset = int(f.get("offset", ""))
        except (ValueError, TypeError):
            return None
        if not isinstance(f, dict) or f.get("method"):
            return None
        digest = str(f.get("digest") or "-")
        return CdxCapture(
            key.encode("utf-8", "surrogateescape"), stamp, str(f.get("url") or ""),
            str(f.get("mime") or "-"), str(f.get("status") or "-"), _sha1(digest),
            str(f.get("filename") or ""), offset,
        )  # fmt: skip
    rec = parse_cdx11(text)
    if rec is None:
        return None
    return CdxCapture(
        rec.key.encode("utf-8", "surrogateescape"), rec.timestamp, rec.url, rec.mime,
        rec.status, _sha1(rec.digest), rec.filename, rec.offset,
    )  # fmt: skip


def _sha1(digest: str) -> str:
    if digest in ("", "-"):
        return "-"
    return digest if digest.startswith("sha1:") else "sha1:" + digest


def _holds_payload(c: CdxCapture) -> bool:
    return (
        c.status == "200"
        and c.mime != "warc/revisit"
        and c.digest != "-"
        and b"__wb_method=" not in c.key
    )


def latest_per_url(lines: Iterable[bytes]) -> Iterator[bytes]:
    """From CDX lines in byte order: per URL, the line of its latest capture holding a payload
    (see the module's docstring), in byte order; identical lines (one capture in two merged
    files) count once."""
    for _key, group in itertools.groupby(lines, key=lambda s: s.split(b" ", 1)[0]):
        newest: dict[str, bytes] = {}  # url -> line of its latest capture holding a payload
        payload_of: dict[str, str] = {}  # url -> digest of its latest capture of all
        holding: dict[tuple[str, str], bytes] = {}  # (url, digest) -> latest line holding it
        for line in group:
            c = parse_line(line)
            if c is None or not c.url:
                continue
            payload_of[c.url] = c.digest
            if _holds_payload(c):
                newest[c.url] = line
                holding[(c.url, c.digest)] = line
        chosen = {holding.get((url, payload_of[url]), line) for url, line in newest.items()}
        yield from sorted(chosen)


def select(sources: Iterable[Path], domains: Iterable[str]) -> Iterator[bytes]:
    """The CDX lines a job on ``domains`` de-duplicates against, from the sorted index files
    ``sources`` (any mix of big, merged and per-file files of one format), in byte order."""
    ranges = key_ranges(domains)
    paths = [Path(p) for p in sources if Path(p).is_file()]
    with ExitStack() as stack:
        streams = [stack.enter_context(_closing(lines_in_ranges(p, ranges))) for p in paths]
        yield from latest_per_url(heapq.merge(*streams))


class _closing:
    """Close a generator (its file) when the ``with`` ends, read to its end or not."""

    def __init__(self, gen: Iterator[bytes]) -> None:
        self.gen = gen

    def __enter__(self) -> Iterator[bytes]:
        return self.gen

    def __exit__(self, *exc: object) -> None:
        close = getattr(self.gen, "close", None)
        if close is not None:
            close()
