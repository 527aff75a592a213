"""A public body's site on loopback for the document step's tests: a publications listing,
landing pages with catalogue metadata, PDFs made with pypdf at test time (with and without
embedded metadata), a Word document, the same PDF at two URLs, a broken PDF, a PDF linked only
from inside another PDF (a link annotation), and a PDF outside the target's document URL
scheme."""

from __future__ import annotations

import io
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

from pypdf import PdfWriter
from pypdf.annotations import Link

HOST = "pubs.test"
PDF = "application/pdf"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


def make_pdf(metadata: dict[str, str] | None = None, link: str | None = None) -> bytes:
    """A one-page PDF (blank), with a document information dictionary and a link annotation
    (a URI action, as a PDF writer makes for a hyperlink) when given."""
    writer = PdfWriter()
    writer.add_blank_page(width=200, height=200)
    if metadata:
        writer.add_metadata(metadata)
    if link:
        writer.add_annotation(page_number=0, annotation=Link(rect=(20, 20, 180, 40), url=link))
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def make_pdf_with_doi(doi: str, link: str | None = None) -> bytes:
    """A PDF with its own title, author, date, and a DOI among its keywords."""
    return make_pdf(
        {
            "/Title": "Strategy 2026-2030",
            "/Author": "Office of Strategy",
            "/CreationDate": "D:20260115093000Z",
            "/Keywords": f"strategy; doi:{doi}",
        },
        link,
    )


def make_docx(title: str, creator: str, language: str) -> bytes:
    """A minimal Word (OOXML) file with its Dublin Core core properties."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr(
            "[Content_Types].xml",
            '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
            'content-types"/>',
        )
        zf.writestr(
            "word/document.xml",
            '<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/'
            'wordprocessingml/2006/main"><w:body/></w:document>',
        )
        zf.writestr(
            "docProps/core.xml",
            '<?xml version="1.0"?><cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/'
            'package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/"'
            ' xmlns:dcterms="http://purl.org/dc/terms/"'
            f"><dc:title>{title}</dc:title><dc:creator>{creator}</dc:creator>"
            f"<dc:language>{language}</dc:language>"
            "<dcterms:created>2025-11-02T10:00:00Z</dcterms:created></cp:coreProperties>",
        )
    return out.getvalue()


def page(title: str, body: str, head: str = "") -> bytes:
    return (
        f'<!doctype html><html lang="en"><head><title>{title}</title>{head}</head>'
        f"<body>{body}</body></html>"
    ).encode()


@dataclass
class Site:
    port: int
    files: dict[str, tuple[str, bytes]]

    def url(self, path: str) -> str:
        return f"http://{HOST}:{self.port}{path}"


def build(port: int) -> dict[str, tuple[str, bytes]]:
    annual = make_pdf()  # no embedded metadata: the landing page says everything
    annex = (
        f"http://{HOST}:{port}/publications/files/strategy-annex.pdf"  # linked from the PDF only
    )
    strategy = make_pdf_with_doi("10.5555/strategy.2026", annex)
    return {
        "/": (
            "text/html",
            page("Office of Publications", '<a href="/publications/">Publications</a>'),
        ),
        "/publications/": (
            "text/html",
            page(
                "Publications",
                '<ul><li><a href="/publications/annual-report-2025">Annual report 2025</a>'
                ' (<a href="/publications/files/mirror/annual-report-2025.pdf">PDF</a>)</li>'
                '<li><a href="/publications/strategy">Strategy</a></li>'
                '<li><a href="/publications/guide">Guide</a></li>'
                '<li><a href="/publications/files/notes.pdf">Meeting notes</a></li>'
                '<li><a href="/about/privacy.pdf">Privacy notice</a></li></ul>',
            ),
        ),
        "/publications/annual-report-2025": (
            "text/html",
            page(
                "Annual report 2025 - Office of Publications",
                '<h1>Annual report 2025</h1><a href="/publications/files/annual-report-2025.pdf">'
                "Download the annual report 2025 (PDF)</a>",
                '<meta name="citation_title" content="Annual Report and Accounts 2025">'
                '<meta name="citation_author" content="Jane Smith">'
                '<meta name="citation_author" content="Ravi Patel">'
                '<meta name="citation_publication_date" content="2025-07-14">'
                '<meta name="citation_isbn" content="978-1-5286-1234-5">'
                '<meta name="citation_issn" content="2050-1234">',
            ),
        ),
        "/publications/strategy": (
            "text/html",
            page(
                "Strategy",
                '<a href="/publications/files/strategy.pdf">Our strategy</a>',
                '<meta name="DC.language" content="en-GB">'
                '<meta name="DC.date" content="2026-01-20">',
            ),
        ),
        "/publications/guide": (
            "text/html",
            page(
                "Guide to services",
                '<a href="/publications/files/guide.docx">Guide (Word)</a>',
                '<script type="application/ld+json">{"@context": "https://schema.org",'
                ' "@type": "Report", "name": "A Guide to Our Services",'
                ' "datePublished": "2025-11-03", "inLanguage": "cy"}</script>',
            ),
        ),
        "/publications/files/annual-report-2025.pdf": (PDF, annual),
        "/publications/files/mirror/annual-report-2025.pdf": (PDF, annual),
        "/publications/files/strategy.pdf": (PDF, strategy),
        "/publications/files/strategy-annex.pdf": (
            PDF,
            make_pdf({"/Title": "Strategy 2026-2030: annex", "/Author": "Office of Strategy"}),
        ),
        "/publications/files/guide.docx": (DOCX, make_docx("Guide", "Services Team", "cy")),
        "/publications/files/notes.pdf": (PDF, b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog /Pa"),
        "/about/privacy.pdf": (PDF, make_pdf({"/Title": "Privacy notice"})),
    }


class _Handler(BaseHTTPRequestHandler):
    files: ClassVar[dict[str, tuple[str, bytes]]] = {}

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        if path == "/robots.txt" or path not in self.files:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        mime, body = self.files[path]
        self.send_response(200)
        self.send_header("Content-Type", mime)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def serve() -> Iterator[Site]:
    handler = type("Handler", (_Handler,), {"files": {}})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    files = handler.files = build(server.server_address[1])
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Site(server.server_address[1], files)
    finally:
        server.shutdown()
        server.server_close()
