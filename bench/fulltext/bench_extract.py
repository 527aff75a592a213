"""Benchmark: the chain's text extraction against the extraction library in a loop over warcio.

    .venv/bin/python bench/fulltext/bench_extract.py [--mb 200] [--rounds 2] [--workdir DIR]

Generates (once, cached in ``--workdir``) gzipped WARCs of news-like HTML pages (Zipf words,
navigation, sidebar and footer, a cookie banner; 5 % PDFs; 5 % payloads repeated at another
URL; 10 % 404s and images), then per round, each in a child process, CPU time measured with
``resource.getrusage`` of the child from after its imports to the end of its work:

- **peer**: warcio's ArchiveIterator over the files; for each 2xx HTML response resiliparse's
  ``extract_plain_text(main_content=True)`` (+ title, language; the HTTP charset, detection
  only without one, as the chain), for each PDF pypdf's text; nothing stored; every payload
  extracted (the peer knows nothing of digests: the chain's dedup is part of what it measures);
- **chain**: ``indexing.fulltext.extract_warc`` (digest dedup, capture metadata: SURT, host,
  registrable domain; damage checks; encoding and language detection; batching and
  checkpoints) into an in-memory backend, so that the figure is the chain's own CPU, not the
  search database's (the PostgreSQL write cost is a separate line below when ``--pg`` is set).

Prints documents per CPU-second of each and the ratio chain / peer (target ≥ 0.9).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

WORDS = [
    "archive",
    "web",
    "library",
    "national",
    "harvest",
    "crawl",
    "collection",
    "document",
    "heritage",
    "preservation",
    "digital",
    "record",
    "page",
    "site",
    "text",
    "search",
    "reader",
    "research",
    "history",
    "public",
    "election",
    "campaign",
    "newspaper",
    "local",
    "council",
    "government",
    "culture",
    "museum",
    "school",
    "university",
    "science",
    "report",
    "policy",
    "economy",
    "energy",
    "climate",
    "health",
    "transport",
    "housing",
    "sport",
    "music",
    "festival",
    "theatre",
    "book",
    "author",
    "publisher",
    "law",
    "court",
    "decision",
    "minister",
    "parliament",
    "region",
    "city",
    "village",
    "river",
]


def _sentence(rnd: random.Random) -> str:
    n = rnd.randint(8, 25)
    words = [WORDS[min(int(rnd.paretovariate(1.1)) - 1, len(WORDS) - 1)] for _ in range(n)]
    return " ".join(words).capitalize() + "."


def _html(rnd: random.Random, i: int) -> bytes:
    nav = "".join(f'<li><a href="/s{j}">Section {j}</a></li>' for j in range(25))
    paras = "".join(
        "<p>" + " ".join(_sentence(rnd) for _ in range(rnd.randint(2, 6))) + "</p>"
        for _ in range(rnd.randint(4, 14))
    )
    return (
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Story {i}: "
        f"{_sentence(rnd)[:60]}</title></head><body><header><nav><ul>{nav}</ul></nav></header>"
        "<div class='cookie'>We use cookies to improve your experience.</div>"
        f"<main><article><h1>Story {i}</h1>{paras}</article></main>"
        f"<aside><h3>Related</h3><ul>{nav}</ul></aside>"
        "<footer><p>Copyright 2026 Example. Privacy. Contact.</p></footer></body></html>"
    ).encode()


def _pdf(rnd: random.Random) -> bytes:
    from pypdf import PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    writer = PdfWriter()
    for _ in range(rnd.randint(1, 3)):
        page = writer.add_blank_page(612, 792)
        lines = " ".join(
            f"BT /F1 10 Tf 50 {750 - 14 * k} Td ({_sentence(rnd)[:90]}) Tj ET" for k in range(40)
        )
        stream = DecodedStreamObject()
        stream.set_data(lines.encode("latin-1"))
        font = DictionaryObject(
            {NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"):
             NameObject("/Type1"), NameObject("/BaseFont"): NameObject("/Helvetica")}
        )  # fmt: skip
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): writer._add_object(font)})}
        )
        page[NameObject("/Contents")] = writer._add_object(stream)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def generate(workdir: Path, mb: int) -> list[Path]:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    marker = workdir / f"done-v2-{mb}.json"
    if marker.exists():
        return [Path(p) for p in json.loads(marker.read_text())]
    rnd = random.Random(22)
    files: list[Path] = []
    pdfs = [_pdf(rnd) for _ in range(20)]
    recent: list[bytes] = []
    i = 0
    while sum(p.stat().st_size for p in files) < mb * 1_000_000:
        path = workdir / f"1-1-20261125000000{len(files):03d}-{len(files):05d}-bench.warc.gz"
        with open(path, "wb") as fh:
            w = WARCWriter(fh, gzip=True)
            while (
                fh.tell() < 50_000_000
                and sum(p.stat().st_size for p in files) + fh.tell() < mb * 1_000_000
            ):
                i += 1
                roll = rnd.random()
                status, ctype = "200 OK", "text/html; charset=utf-8"
                if roll < 0.05:
                    # a distinct payload each time (a comment after %%EOF), parsed in full
                    body, ctype = rnd.choice(pdfs) + b"%% %d\n" % i, "application/pdf"
                elif roll < 0.10 and recent:
                    body = rnd.choice(recent)
                elif roll < 0.15:
                    body, status = b"<html><title>Not found</title></html>", "404 Not Found"
                elif roll < 0.20:
                    body, ctype = os.urandom(2000), "image/png"
                else:
                    body = _html(rnd, i)
                    recent = [*recent, body][-50:]
                http = StatusAndHeaders(status, [("Content-Type", ctype)], protocol="HTTP/1.1")
                url = f"http://site{rnd.randint(1, 500)}.example.org/p/{i}"
                w.write_record(
                    w.create_warc_record(
                        url, "response", payload=io.BytesIO(body), http_headers=http
                    )
                )
        files.append(path)
    marker.write_text(json.dumps([str(p) for p in files]))
    return files


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


def _run(code: str, args: list[str]) -> tuple[int, float, str]:
    started = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=True
    ).stdout.split()
    return int(out[0]), float(out[1]), f"{time.monotonic() - started:.1f} s wall"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument(
        "--workdir", type=Path, default=Path(tempfile.gettempdir()) / "hf-fulltext-bench"
    )
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    files = generate(args.workdir, args.mb)
    size = sum(p.stat().st_size for p in files)
    print(f"{len(files)} WARC(s), {size / 1e6:.0f} MB")
    env_args = [str(p) for p in files]
    ratios = []
    for rnd in range(1, args.rounds + 1):
        order = [("peer", PEER, env_args), ("chain", CHAIN, [str(ROOT), *env_args])]
        if rnd % 2 == 0:
            order.reverse()
        got = {}
        for name, code, argv in order:
            docs, cpu, wall = _run(code, argv)
            got[name] = docs / cpu
            print(
                f"round {rnd} {name}: {docs} documents, {cpu:.1f} CPU-s ({wall}),"
                f" {docs / cpu:.1f} documents per CPU-second; load {os.getloadavg()[0]:.1f}"
            )
        ratios.append(got["chain"] / got["peer"])
        print(f"round {rnd}: ratio chain / peer = {ratios[-1]:.2f}")
    print(f"median ratio: {sorted(ratios)[len(ratios) // 2]:.2f} (target >= 0.9)")


if __name__ == "__main__":
    main()
