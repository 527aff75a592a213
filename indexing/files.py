"""Safe file moves and verified copies used by every module of the chain.

Why: a module may be killed at any instruction. Files only ever appear under their final name
complete (temporary name, fsync, rename), copies are checked against the SHA-1 taken at ingest,
and moving a file between working directories is one atomic rename.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path

from harvestflow.atomic import commit, tmp_path
from indexing.errors import IndexingError

BLOCK = 1 << 20
log = logging.getLogger(__name__)


class ChecksumMismatch(IndexingError, RuntimeError):
    """A copy whose content differs from the ingested file (never deleted from the source)."""


def sha1_of(path: Path) -> str:
    h = hashlib.sha1()
    with open(path, "rb") as fh:
        while block := fh.read(BLOCK):
            h.update(block)
    return h.hexdigest()


def copy_verified(src: Path, dest: Path, sha1: str) -> None:
    """Copy ``src`` to ``dest`` through a temporary name, hashing on the way; checks ``sha1``."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = tmp_path(dest)
    h = hashlib.sha1()
    try:
        with open(src, "rb") as fin, open(tmp, "wb") as fout:
            while block := fin.read(BLOCK):
                h.update(block)
                fout.write(block)
        if h.hexdigest() != sha1:
            raise ChecksumMismatch(f"{src}: sha1 {h.hexdigest()} differs from ingest's {sha1}")
        commit(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)  # e.g. ENOSPC: do not leave a partial copy taking room
        raise


def move(src: Path, dest_dir: Path) -> Path:
    """Atomically move ``src`` into ``dest_dir`` (same file system), keeping its name."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    dest = dest_dir / src.name
    os.replace(src, dest)  # a move of a complete file, not a write
    return dest


class Lock(StrEnum):
    """The chain's single-instance locks, by name: the one list every holder takes them from
    (the indexing chain, and access, whose ZipNum rebuilds read the big files the merge writes)."""

    INGEST = "ingest"
    BIGMERGE = "bigmerge"
    CLEANUP = "cleanarcrepository"


@contextmanager
def single_instance(lock_dir: Path, name: str) -> Iterator[None]:
    """Hold the lock of module ``name`` (ingest, bigmerge, cleanarcrepository run single).

    Why: two big merges at once would each rename their own result over the big file, and the
    second would drop what the first added while the state file says it is in. A second caller
    waits for the first to finish (then usually finds nothing left to do). ``flock`` on a file
    under the data directory: released by the kernel when the holder dies, even by kill -9.
    """
    lock_dir.mkdir(parents=True, exist_ok=True)
    with open(lock_dir / f".{name}.lock", "a+b") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.warning("%s: another %s is running, waiting for it", lock_dir, name)
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
