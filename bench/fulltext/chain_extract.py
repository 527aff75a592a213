"""Our side of ``bench/run fulltext``: the chain's extraction (``indexing.fulltext.extract_warc``)
over the WARCs into an in-memory backend that keeps each document's text hash.

Why an in-memory backend: the figure is the chain's own CPU (digest dedup, capture metadata,
damage checks, extraction, checkpoints), not the search database's. It keeps what a query would
find again (the digests) and writes ``<payload digest> <SHA-256 of the text>`` per document to
``OUT/texts`` for the runner's check.

    python bench/fulltext/chain_extract.py OUT WARC...
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Any

from indexing.fulltext import FileMeta, extract_warc


class MemoryBackend:
    """Stands for the search database: the digests stored, the texts hashed and forgotten."""

    def __init__(self) -> None:
        self.docs: set[str] = set()
        self.lines: list[str] = []

    def known_digests(self, digests: list[str]) -> set[str]:
        return {d for d in digests if d in self.docs}

    def add(self, documents: list[Any], captures: list[Any], progress: Any) -> None:
        for d in documents:
            self.docs.add(d.digest)
            self.lines.append(f"{d.digest} {hashlib.sha256(d.text.encode()).hexdigest()}\n")

    def progress(self, name: str) -> None:
        return None


def main(out: Path, paths: list[str]) -> int:
    backend = MemoryBackend()
    for path in paths:
        extract_warc(Path(path), FileMeta(Path(path).name), backend)  # type: ignore[arg-type]
    (out / "texts").write_text("".join(backend.lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), sys.argv[2:]))
