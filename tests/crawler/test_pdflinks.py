"""Links inside PDFs: a link annotation's URI is an ``L`` link, made absolute; a damaged or
oversized PDF gives none (and the crawl goes on)."""

from __future__ import annotations

import io

from pypdf import PdfWriter
from pypdf.annotations import Link

from crawler import pdflinks
from crawler.pdflinks import is_pdf, pdf_links


def _pdf(*uris: str) -> bytes:
    writer = PdfWriter()
    for i, uri in enumerate(uris):
        if i % 2 == 0:
            writer.add_blank_page(width=200, height=200)
        writer.add_annotation(
            page_number=i // 2, annotation=Link(rect=(10, 10 + 30 * i, 90, 30 + 30 * i), url=uri)
        )
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_the_uri_of_each_link_annotation_is_a_navigation_link() -> None:
    body = _pdf(
        "http://pubs.test/a.pdf", "annex/b.pdf", "mailto:x@pubs.test", "http://pubs.test/a.pdf"
    )
    assert is_pdf("application/octet-stream", body)
    assert pdf_links(body, "http://pubs.test/files/report.pdf") == [
        ("http://pubs.test/a.pdf", "L", "pdf/@URI"),
        ("http://pubs.test/files/annex/b.pdf", "L", "pdf/@URI"),
    ]


def test_a_damaged_or_oversized_pdf_gives_no_link(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    assert pdf_links(b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog /Pa", "http://pubs.test/x.pdf") == []
    body = _pdf("http://pubs.test/a.pdf")
    monkeypatch.setattr(pdflinks, "MAX_PDF_BYTES", len(body) - 1)
    assert pdf_links(body, "http://pubs.test/x.pdf") == []
