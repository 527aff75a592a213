"""A part of a file as an upload request body, read from the file as it is sent.

Why: a multipart upload whose part checksums were staged does not need the part's bytes in
Python at all; botocore sends a body in blocks, so reading each block from the file at the
moment it is sent avoids a copy of every byte (and fresh pages for each 8 MiB part).
"""

from __future__ import annotations

import os
from pathlib import Path

from preservation.errors import ChecksumMismatch


class FilePart:
    """One part of an open file as a request body, read with ``os.pread`` (so parts of one
    file descriptor go up from several threads at once).

    Why: botocore sends a body in blocks; a part read whole into memory first was one more
    copy of every byte (and fresh pages for each 8 MiB part). ``len`` gives the part's
    Content-Length, ``seek(0)`` rewinds it for a retry. A file that shrank under it raises
    :class:`ChecksumMismatch` rather than sending fewer bytes than announced.
    """

    def __init__(self, path: Path, fd: int, start: int, length: int) -> None:
        self.path = path
        self.fd = fd
        self.start = start
        self.length = length
        self.pos = 0

    def __len__(self) -> int:
        return self.length

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self.pos, 2: self.length}[whence]
        self.pos = min(max(0, base + offset), self.length)
        return self.pos

    def read(self, amount: int | None = -1) -> bytes:
        left = self.length - self.pos
        amount = left if amount is None or amount < 0 else min(amount, left)
        data = os.pread(self.fd, amount, self.start + self.pos)
        if len(data) < amount:
            raise ChecksumMismatch(
                f"{self.path}: shorter than when staged (a part ends at byte"
                f" {self.start + self.pos + len(data)})",
                file_name=self.path.name,
            )
        self.pos += len(data)
        return data
