"""Links inside PDF files: the URI actions of their link annotations (Heritrix's ExtractorPDF).

Why: official publications link to each other from inside the PDF (an annex, the previous
year's report, the data behind a chart); a document linked only from another PDF is otherwise
never fetched, so never archived nor found by the document step (indexing/documents). The
links go through scope, traps and budgets like any page's ``L`` link.

Bounded: a PDF above :data:`MAX_PDF_BYTES` is not parsed (as Heritrix's ``maxSizeToParse``),
at most :data:`MAX_PAGES` pages and :data:`MAX_LINKS` links are read, and pypdf (BSD) reads in
non-strict mode; a PDF it cannot read gives no link (the capture is archived as sent).
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from typing import Any
from urllib.parse import urljoin

from crawler.links import Link

log = logging.getLogger(__name__)

MAX_PDF_BYTES = 10 * 1024 * 1024
MAX_PAGES = 1000
MAX_LINKS = 2000
_SCHEMES = ("http://", "https://")


def is_pdf(mime: str, body: bytes) -> bool:
    """A PDF by its declared type or, declared as anything, by its signature."""
    return mime == "application/pdf" or body[:1024].lstrip().startswith(b"%PDF-")


def _uris(reader: Any) -> Iterator[str]:
    for page in reader.pages[:MAX_PAGES]:
        annots = page.get("/Annots")
        annots = annots.get_object() if annots is not None else []
        for ref in annots or []:
            annot = ref.get_object()
            if annot.get("/Subtype") != "/Link":
                continue
            action = annot.get("/A")
            action = action.get_object() if action is not None else None
            if action is not None and action.get("/S") == "/URI" and action.get("/URI"):
                uri = action["/URI"]
                yield uri.decode("latin-1") if isinstance(uri, bytes) else str(uri)


def pdf_links(body: bytes, url: str) -> list[Link]:
    """``(absolute URL, "L", "pdf/@URI")`` of each web link in the PDF ``body`` fetched at
    ``url``, in page order, once each."""
    if len(body) > MAX_PDF_BYTES:
        log.info("%s: PDF of %d bytes not read for links (limit %d)", url, len(body), MAX_PDF_BYTES)
        return []
    from pypdf import PdfReader  # only a crawl that meets a PDF imports it

    try:
        reader = PdfReader(io.BytesIO(body), strict=False)
        found: list[Link] = []
        seen: set[str] = set()
        for uri in _uris(reader):
            absolute = urljoin(url, uri.strip())
            if absolute.startswith(_SCHEMES) and absolute not in seen:
                seen.add(absolute)
                found.append((absolute, "L", "pdf/@URI"))
                if len(found) >= MAX_LINKS:
                    break
        return found
    except Exception as exc:  # pypdf raises many kinds on a damaged file
        log.info("%s: PDF not readable for links: %s", url, exc)
        return []
