"""bench/run fulltext: the chain's text extraction over our crawler's WARCs, against
resiliparse and pypdf in a loop over warcio with payload-digest dedup (peer_extract.py).

Why this peer: it is what a user would write with the libraries the chain calls, and the
digest dedup a user would add to it (the crawl repeats payloads at other URLs), so the ratio
measures what the chain adds per document: capture metadata, damage checks, batching and
checkpoints. The corpus is the crawl of a generated news site by our crawler (corpus.py,
newssite.py: English and French articles, 5 % PDFs, 5 % payloads repeated at another URL, 404
links, images, robots.txt), cached between runs. Output check: each side's documents, one
``<payload digest> <SHA-256 of the text>`` line each, sorted — the same texts by hash, not
only the same count. Both sides are whole processes (interpreter start and imports included).
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Any

from bench.runner.spec import Benchmark, Side, Target

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


class FulltextBenchmark(Benchmark):
    name = "fulltext"
    title = "full-text extraction of our crawler's WARCs vs resiliparse + pypdf over warcio"
    output_check = (
        "the documents' texts by hash: one line per document (payload digest, SHA-256 of the"
        " text), sorted, count and SHA-256"
    )
    unit = "documents"
    targets = (
        Target("≥ 1.0 × the peer with digest dedup per CPU-second, texts identical", "cpu", 1.0),
    )

    def __init__(self) -> None:
        self.files: list[Path] = []

    def prepare(self, work: Path, quick: bool) -> dict[str, Any]:
        from bench.fulltext.corpus import crawl_corpus

        mb = 5 if quick else 100
        self.files = crawl_corpus(work / f"corpus-{mb}mb", mb, processes=2)
        return {
            "warcs": [p.name for p in self.files],
            "mb": round(sum(p.stat().st_size for p in self.files) / 1e6, 1),
            "source": "bench/fulltext/corpus.py: harvestflow crawl (--render none"
            " --no-politeness --processes 2) of bench/fulltext/newssite.py on loopback, the"
            " WARCs checked by warcio check",
        }

    def sides(self) -> tuple[Side, Side]:
        files = [str(p) for p in self.files]
        ours = Side(
            "chain",
            [sys.executable, str(HERE / "chain_extract.py"), "{out}", *files],
            1,
            "indexing.fulltext.extract_warc into an in-memory backend (digests kept, texts"
            " hashed): digest dedup, capture metadata (SURT, host, registrable domain), damage"
            " checks, encoding and language detection, outlinks, batches and checkpoints",
            shown=f"python bench/fulltext/chain_extract.py <out> <{len(files)} WARCs>",
        )
        peer = Side(
            "peer",
            [sys.executable, str(HERE / "peer_extract.py"), "{out}", *files],
            1,
            "warcio ArchiveIterator; a payload whose WARC-Payload-Digest was extracted before"
            " skipped; HTML: resiliparse extract_plain_text(main_content=True) (the whole text"
            " when that finds nothing) + title + detect_fast, the HTTP or meta charset; PDF:"
            " pypdf extract_text per page; text/plain decoded + detect_fast",
            shown=f"python bench/fulltext/peer_extract.py <out> <{len(files)} WARCs>",
        )
        return ours, peer

    def figures(self, side: Side, out: Path) -> Any:
        lines = sorted((out / "texts").read_text().splitlines())
        text = "\n".join(lines).encode()
        return {"documents": len(lines), "sha256": hashlib.sha256(text).hexdigest()}

    def problems(self, figures: Any) -> list[str]:
        return [] if figures["documents"] else ["no document extracted"]

    def units(self, figures: Any) -> int | None:
        return int(figures["documents"])


BENCHMARK = FulltextBenchmark()
