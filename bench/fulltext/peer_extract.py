"""The full-text peer: resiliparse and pypdf in a loop over warcio, with payload-digest dedup.

Why this is the peer: a user without our chain reads the WARCs with warcio and calls the
extraction libraries the chain calls, with the choices a user reading their documentation
makes (main content, the whole visible text when that finds nothing, the HTTP charset or the
HTML meta's, each PDF page's text) — and skips a payload whose ``WARC-Payload-Digest`` was
already extracted, as anyone indexing a crawl with repeated pages would add. Writes one line
per document, ``<payload digest> <SHA-256 of its text>``, to ``OUT/texts`` for the runner's
check.

    python bench/fulltext/peer_extract.py OUT WARC...
"""

from __future__ import annotations

import hashlib
import io
import re
import sys
from pathlib import Path

from pypdf import PdfReader
from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.encoding import bytes_to_str, detect_encoding
from resiliparse.parse.html import HTMLTree
from resiliparse.parse.lang import detect_fast
from warcio.archiveiterator import ArchiveIterator

CHARSET = re.compile(r"charset\s*=\s*[\"']?([\w.:-]+)", re.IGNORECASE)


def text_of(data: bytes, mime: str, content_type: str) -> str:
    found = CHARSET.search(content_type)
    if mime == "application/pdf":
        pages = [p.extract_text() or "" for p in PdfReader(io.BytesIO(data)).pages[:200]]
        text = "\n".join(p.strip() for p in pages if p.strip())
    else:
        html = mime == "text/html"
        charset = found.group(1) if found else detect_encoding(data, from_html_meta=html)
        text = str(bytes_to_str(data, charset or "utf-8"))
        if html:
            tree = HTMLTree.parse(text)
            _ = tree.title
            text = extract_plain_text(tree, main_content=True)
            if len(text.strip()) < 20:
                text = extract_plain_text(tree, main_content=False)
        text = text.strip()
    if text:
        detect_fast(text[:20000])
    return text


def main(out: Path, paths: list[str]) -> int:
    done: set[str] = set()
    lines = []
    for path in paths:
        with open(path, "rb") as fh:
            for rec in ArchiveIterator(fh):
                if rec.rec_type != "response" or rec.http_headers is None:
                    continue
                if not (rec.http_headers.get_statuscode() or "").startswith("2"):
                    continue
                content_type = rec.http_headers.get_header("Content-Type") or ""
                mime = content_type.split(";")[0].strip().lower()
                if mime not in ("text/html", "text/plain", "application/pdf"):
                    continue
                digest = rec.rec_headers.get_header("WARC-Payload-Digest")
                if digest in done:  # the same payload at another URL: extracted once
                    continue
                text = text_of(rec.content_stream().read(), mime, content_type)
                if text:
                    done.add(digest)
                    lines.append(f"{digest} {hashlib.sha256(text.encode()).hexdigest()}\n")
    (out / "texts").write_text("".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), sys.argv[2:]))
