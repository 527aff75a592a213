"""Write a BagIt bag (RFC 8493, version 1.0) from files, hashing them in parallel threads.

Why not ``bagit.make_bag``: it hashes the payload one file at a time (or in a process pool, which
forks — unsafe inside threaded workers) and changes the process's working directory while it
works. Staging is CPU-bound (sha256 + sha512 of every byte), so here each file is read once and
its digests are computed in threads (hashlib releases the GIL), several files at a time. The same
pass records the SHA-256 of each upload part of a file the upload sends in parts, so the upload
can send the staged part checksums and let the store reject any part that changed since staging,
without hashing again (a file sent in one PUT is checked by the store against its whole SHA-256).
The ``bagit`` library still validates what we write (see ``staging.open_bag`` and the tests).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from io import RawIOBase
from pathlib import Path

from harvestflow.atomic import atomic_write_text, place
from preservation.errors import PreservationError

CHUNK_MIN = 1024 * 1024


@dataclass
class Digests:
    size: int
    sha256: str
    sha512: str
    part_size: int
    parts: list[str] = field(default_factory=list)  # base64 SHA-256 of each upload part


def hash_file(path: Path, part_size: int, multipart_threshold: int = 0) -> Digests:
    """One read of ``path``: whole sha256 and sha512, and the SHA-256 of every ``part_size`` part.

    The part checksums are computed only for a file larger than ``multipart_threshold`` (the
    upload sends a file up to that size in one PUT, checked against the whole-file SHA-256):
    for the others they would be a second SHA-256 pass over every byte that nothing reads.
    The file is read into one reused buffer (no new 8 MiB object per read).
    """
    h256, h512 = hashlib.sha256(), hashlib.sha512()
    parts: list[str] = []
    size = 0
    buf = bytearray(part_size)
    view = memoryview(buf)
    with path.open("rb", buffering=0) as fh:
        with_parts = os.fstat(fh.fileno()).st_size > multipart_threshold
        while True:
            n = _fill(fh, view)
            if not n:
                break
            part = view[:n]
            size += n
            h256.update(part)
            h512.update(part)
            if with_parts:
                parts.append(base64.b64encode(hashlib.sha256(part).digest()).decode("ascii"))
            if n < part_size:
                break
    return Digests(size, h256.hexdigest(), h512.hexdigest(), part_size, parts)


def _fill(fh: RawIOBase, view: memoryview) -> int:
    """Read into ``view`` until it is full or the file ends (parts must be whole)."""
    got = 0
    while got < len(view):
        n = fh.readinto(view[got:])
        if not n:
            break
        got += n
    return got


class UnportableName(PreservationError, ValueError):
    """A file name that BagIt tools do not agree on (CR, LF or % in it)."""


def _encode_path(rel: str) -> str:
    # RFC 8493 §2.1.3 percent-encodes CR, LF and % in manifests, but the bagit library (and
    # other tools) do not decode them: such a bag would not validate elsewhere. WARC names never
    # contain them, so refuse rather than write a bag others misread.
    if any(ch in rel for ch in "%\r\n"):
        raise UnportableName(f"{rel!r}: CR, LF or % in a file name is not portable in a bag")
    return rel


def _write(path: Path, text: str) -> None:
    atomic_write_text(path, text)


def write_bag(
    bag_dir: Path,
    payload: dict[str, Path],
    info: dict[str, str],
    *,
    part_size: int,
    threads: int = 2,
    multipart_threshold: int = 0,
) -> dict[str, Digests]:
    """Make ``bag_dir`` a bag whose payload ``data/<name>`` are the given (already placed) files.

    ``payload`` maps names to the files already inside ``bag_dir/data``. Returns the digests of
    each payload file. Tag files: bagit.txt, bag-info.txt (with Payload-Oxum), manifest-sha256,
    manifest-sha512, tagmanifest-sha256, tagmanifest-sha512. Part checksums are kept for the
    files larger than ``multipart_threshold`` (:func:`hash_file`).
    """
    names = sorted(payload, key=lambda n: n.encode())
    with ThreadPoolExecutor(max_workers=max(1, threads), thread_name_prefix="baghash") as pool:
        digests = dict(
            zip(
                names,
                pool.map(lambda n: hash_file(payload[n], part_size, multipart_threshold), names),
                strict=True,
            )
        )
    for algo in ("sha256", "sha512"):
        lines = [f"{getattr(digests[n], algo)}  {_encode_path('data/' + n)}\n" for n in names]
        _write(bag_dir / f"manifest-{algo}.txt", "".join(lines))
    _write(bag_dir / "bagit.txt", "BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n")
    full = dict(info)
    full["Payload-Oxum"] = f"{sum(d.size for d in digests.values())}.{len(names)}"
    text = "".join(f"{k}: {' '.join(str(v).split())}\n" for k, v in full.items())
    _write(bag_dir / "bag-info.txt", text)
    tags = ["bag-info.txt", "bagit.txt", "manifest-sha256.txt", "manifest-sha512.txt"]
    for algo in ("sha256", "sha512"):
        lines = [
            f"{hashlib.new(algo, (bag_dir / t).read_bytes()).hexdigest()}  {t}\n" for t in tags
        ]
        _write(bag_dir / f"tagmanifest-{algo}.txt", "".join(lines))
    return digests


def write_parts(path: Path, digests: dict[str, Digests]) -> None:
    """Keep the staged part checksums beside the bag (not in it) for the upload."""
    doc = {
        n: {"part_size": d.part_size, "size": d.size, "parts": d.parts} for n, d in digests.items()
    }
    _write(path, json.dumps(doc))


def read_parts(path: Path) -> dict[str, dict[str, object]]:
    try:
        data: dict[str, dict[str, object]] = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return {}
    return data


def link_or_copy(src: Path, dst: Path) -> None:
    """Hard link (WARCs are immutable), or copy under a temporary name across file systems."""
    place(src, dst)
