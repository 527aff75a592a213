"""A read-only pass-through filesystem whose reads cost a chosen latency: storage that is slow
the way an uncached disk is, on a machine whose disk its host caches.

Why: a ZipNum index is meant for indexes larger than memory, where a lookup's reads reach the
device. On this VM the host caches the virtual disk (a 4 KB ``O_DIRECT`` read takes ~12 µs),
so "cold" lookups cost what warm ones do and the benchmark cannot show the case the ZipNum
exists for. Mounted with FUSE, every read the kernel cannot answer from its page cache comes
here: it is counted and answered after ``--latency-us`` (the kernel's page cache and
read-ahead work as on any filesystem: ``kernel_cache``, so opening a file does not drop it).

    .venv/bin/python bench/access/slowfs.py ROOT MOUNTPOINT --latency-us 100 --counter FILE

``FILE`` holds two little-endian 64-bit counters, device reads and bytes read, updated at each
read (``read_counter``). Needs ``fusepy`` and libfuse 2 (``apt-get install libfuse2``,
``.venv/bin/pip install fusepy``): a benchmark's tool, not a dependency of the platform.
Unmount with ``umount MOUNTPOINT`` (or stop the process).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import errno
import mmap
import os
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Any

COUNTER = struct.Struct("<QQ")
PR_SET_TIMERSLACK = 29  # prctl(2): sleeps end within 1 ns of their time, not 50 µs late


def read_counter(path: Path) -> tuple[int, int]:
    """(reads, bytes) the filesystem has served from its storage so far."""
    with open(path, "rb") as fh:
        reads, size = COUNTER.unpack(fh.read(COUNTER.size))
    return int(reads), int(size)


def main() -> int:
    from fuse import FUSE, FuseOSError, Operations  # fusepy: a benchmark's tool

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", type=Path)
    ap.add_argument("mountpoint", type=Path)
    ap.add_argument("--latency-us", type=float, default=100.0)
    ap.add_argument("--counter", type=Path, required=True)
    args = ap.parse_args()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_TIMERSLACK, 1)
    args.counter.write_bytes(COUNTER.pack(0, 0))
    counter_fd = os.open(args.counter, os.O_RDWR)
    counts = mmap.mmap(counter_fd, COUNTER.size)
    latency = args.latency_us / 1e6
    root = str(args.root.resolve())
    lock = threading.Lock()
    served = [0, 0]

    class SlowFS(Operations):  # type: ignore[misc]
        def _full(self, path: str) -> str:
            return root + path

        def getattr(self, path: str, fh: Any = None) -> dict[str, Any]:
            try:
                st = os.lstat(self._full(path))
            except OSError as exc:
                raise FuseOSError(exc.errno) from None
            keys = ("st_mode", "st_size", "st_nlink", "st_uid", "st_gid")
            times = ("st_atime", "st_mtime", "st_ctime")
            return {k: getattr(st, k) for k in keys + times}

        def readdir(self, path: str, fh: Any) -> list[str]:
            return [".", "..", *os.listdir(self._full(path))]

        def readlink(self, path: str) -> str:
            return os.readlink(self._full(path))

        def open(self, path: str, flags: int) -> int:
            if flags & (os.O_WRONLY | os.O_RDWR):
                raise FuseOSError(errno.EROFS)
            return os.open(self._full(path), os.O_RDONLY)

        def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
            deadline = time.perf_counter() + latency
            data = os.pread(fh, size, offset)
            with lock:
                served[0] += 1
                served[1] += len(data)
                counts[:] = COUNTER.pack(*served)
            left = deadline - time.perf_counter()
            if left > 0:
                time.sleep(left)
            return data

        def release(self, path: str, fh: int) -> int:
            os.close(fh)
            return 0

        def statfs(self, path: str) -> dict[str, Any]:
            st = os.statvfs(self._full(path))
            keys = ("f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail", "f_files")
            return {k: getattr(st, k) for k in keys}

    args.mountpoint.mkdir(parents=True, exist_ok=True)
    FUSE(SlowFS(), str(args.mountpoint), foreground=True, ro=True, kernel_cache=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
