"""Benchmark: the chain's text extraction against the extraction library in a loop over warcio.

    .venv/bin/python bench/fulltext/bench_extract.py [--mb 1000] [--rounds 2] [--workdir DIR]
        [--processes 2] [--warcio]

The WARCs (cached in ``--workdir``): our crawler's crawl (``harvestflow crawl``) of a generated
news site served on loopback, in English and French, until they reach ``--mb`` MB gzipped (see
corpus.py and newssite.py: 5 % PDFs, 5 % payloads repeated at another URL, 404 links, images,
a robots.txt); with ``--warcio``, the former corpus written straight by warcio. Then per round,
each in a child process (the side that runs first alternates), CPU time measured with
``resource.getrusage`` of the child from after its imports to the end of its work:

- **peer**: warcio's ArchiveIterator over the files; for each 2xx HTML response resiliparse's
  ``extract_plain_text(main_content=True)`` (+ title, language; the HTTP charset, detection
  only without one, as the chain), for each PDF pypdf's text, each plain text (robots.txt) its
  decoding and language; nothing stored; every payload
  extracted (the peer knows nothing of digests: the chain's dedup is part of what it measures);
- **chain**: ``indexing.fulltext.extract_warc`` (digest dedup, capture metadata: SURT, host,
  registrable domain; damage checks; encoding and language detection; batching and
  checkpoints) into an in-memory backend, so that the figure is the chain's own CPU, not the
  search database's.

Prints documents per CPU-second of each and the ratio chain / peer per round and their median
(target ≥ 0.9). Exit 1 with a message when the crawl fails, a WARC fails ``warcio check``, a
child exits non-zero, or the two sides do not count the same documents.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.fulltext.corpus import BenchFailed, crawl_corpus, generate_warcio  # noqa: E402

PEER = r"""
import sys, resource, time
from warcio.archiveiterator import ArchiveIterator
from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.encoding import detect_encoding, bytes_to_str
from resiliparse.parse.html import HTMLTree
from resiliparse.parse.lang import detect_fast
import io
from pypdf import PdfReader
def cpu():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime
start = cpu()
docs = 0
for path in sys.argv[1:]:
    with open(path, "rb") as fh:
        for rec in ArchiveIterator(fh):
            if rec.rec_type != "response" or not rec.http_headers.get_statuscode().startswith("2"):
                continue
            ctype = rec.http_headers.get_header("Content-Type") or ""
            data = rec.content_stream().read()
            if ctype.startswith("text/html"):
                charset = ctype.partition("charset=")[2] or detect_encoding(data)
                tree = HTMLTree.parse(bytes_to_str(data, charset))
                text = extract_plain_text(tree, main_content=True)
                detect_fast(text)
                _ = tree.title
            elif ctype == "application/pdf":
                text = "\n".join(p.extract_text() for p in PdfReader(io.BytesIO(data)).pages)
            elif ctype.startswith("text/plain"):  # robots.txt in a crawl
                text = bytes_to_str(data, ctype.partition("charset=")[2] or detect_encoding(data))
                detect_fast(text)
            else:
                continue
            docs += 1
print(docs, cpu() - start)
"""

CHAIN = r"""
import sys, resource
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from indexing.fulltext import FileMeta, extract_warc
from search.model import FileProgress

class MemoryBackend:
    # stands for the database: keeps what a query would find again (the digests), not the
    # texts and captures, which the chain hands over and forgets
    def __init__(self):
        self.docs, self.caps, self.state = set(), 0, {}
    def known_digests(self, digests):
        return {d for d in digests if d in self.docs}
    def add(self, documents, captures, progress):
        self.docs.update(d.digest for d in documents)
        self.caps += len(captures)
        self.state[progress.file_name] = progress
    def progress(self, name):
        return None
def cpu():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime
backend = MemoryBackend()
import pypdf  # imported lazily by the chain; the peer imports it at start too
from harvestflow.formats.domains import registrable_domain
registrable_domain("www.example.org")  # loads the bundled public-suffix list
start = cpu()
docs = 0
for path in sys.argv[2:]:
    state = extract_warc(Path(path), FileMeta(Path(path).name), backend)
    docs += state.extracted + state.duplicates
print(docs, cpu() - start, len(backend.docs))
"""


def _run(name: str, code: str, args: list[str]) -> tuple[int, float, str]:
    started = time.monotonic()
    got = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
    if got.returncode != 0:
        raise BenchFailed(
            f"benchmark FAILED: the {name} child exited {got.returncode}:\n{got.stderr[-3000:]}"
        )
    out = got.stdout.split()
    return int(out[0]), float(out[1]), f"{time.monotonic() - started:.1f} s wall"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=1000, help="MB of gzipped WARCs (default 1000)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument(
        "--workdir", type=Path, default=Path(tempfile.gettempdir()) / "hf-fulltext-bench"
    )
    ap.add_argument("--processes", type=int, default=2, help="crawler processes (default 2)")
    ap.add_argument(
        "--warcio", action="store_true", help="the former corpus, written by warcio, no crawl"
    )
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    if args.warcio:
        files = generate_warcio(args.workdir, args.mb)
    else:
        files = crawl_corpus(args.workdir, args.mb, args.processes)
    size = sum(p.stat().st_size for p in files)
    print(f"{len(files)} WARC(s), {size / 1e6:.1f} MB; load {_load()}", flush=True)
    env_args = [str(p) for p in files]
    ratios = []
    for rnd in range(1, args.rounds + 1):
        order = [("peer", PEER, env_args), ("chain", CHAIN, [str(ROOT), *env_args])]
        if rnd % 2 == 0:
            order.reverse()
        got, docs_of = {}, {}
        print(f"round {rnd} starts {datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC", flush=True)
        for name, code, argv in order:
            docs, cpu, wall = _run(name, code, argv)
            got[name], docs_of[name] = docs / cpu, docs
            print(
                f"round {rnd} {name}: {docs} documents, {cpu:.1f} CPU-s ({wall}),"
                f" {docs / cpu:.1f} documents per CPU-second; load {_load()}",
                flush=True,
            )
        if docs_of["peer"] != docs_of["chain"]:
            raise BenchFailed(
                f"benchmark FAILED: the peer counted {docs_of['peer']} documents, the chain"
                f" {docs_of['chain']}: the rates are not of the same documents"
            )
        ratios.append(got["chain"] / got["peer"])
        print(f"round {rnd}: ratio chain / peer = {ratios[-1]:.2f}", flush=True)
    print(
        f"median ratio over {len(ratios)} rounds: {statistics.median(ratios):.2f}"
        f" ({', '.join(f'{r:.2f}' for r in ratios)}; target >= 0.9);"
        f" {datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC"
    )


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg()) + " (1/5/15 min)"


if __name__ == "__main__":
    main()
