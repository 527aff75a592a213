"""A document's metadata: from the document itself and from its landing page, then merged.

Why two sources and this order: publishers' files carry little and often wrong metadata (a PDF
titled "Microsoft Word - draft3.docx", no author), while the landing page that offers the file
is written for readers and often for catalogues (``citation_*`` tags, Dublin Core, schema.org
JSON-LD). So a field comes from the landing page's catalogue tags first, then the document's own
metadata, then the link's text and the page title. Each source's findings are kept apart
(``sources``) so that a curator sees where a value came from. A file whose own metadata cannot
be read is reported as broken (the reason), never raised: one bad file must not stop the step.
"""

from __future__ import annotations

import io
import json
import logging
import re
import zipfile
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urldefrag, urljoin

from lxml import etree, html

log = logging.getLogger(__name__)

MAX_PAGES_SCANNED = 3  # pages of a PDF read for a DOI, ISBN or ISSN
MAX_LINKS = 5000  # links kept of one page
MAX_FIELD = 2000  # characters kept of one value

_DOI = re.compile(r"\b(10\.\d{4,9}/[^\s\"'<>]+[^\s\"'<>.,;)])")
_ISBN = re.compile(r"\bISBN(?:-1[03])?:?\s*((?:97[89][\s-]?)?\d[\d\s-]{8,15}[\dXx])\b")
_ISSN = re.compile(r"\bISSN:?\s*(\d{4}-\d{3}[\dXx])\b")
FIELDS = ("title", "authors", "published", "language", "isbn", "issn", "doi")


@dataclass
class Found:
    """What one source says (absent values left out of :meth:`as_dict`)."""

    title: str | None = None
    authors: list[str] = field(default_factory=list)
    published: str | None = None
    language: str | None = None
    isbn: str | None = None
    issn: str | None = None
    doi: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k in FIELDS if (v := getattr(self, k))}


def _clean(value: Any) -> str | None:
    if value is None:
        return None
    text = " ".join(str(value).split())[:MAX_FIELD]
    return text or None


def _identifiers(found: Found, text: str) -> None:
    """DOI, ISBN and ISSN written in ``text`` (a PDF's first pages), where still missing."""
    if found.doi is None and (m := _DOI.search(text)):
        found.doi = m.group(1)
    if found.isbn is None and (m := _ISBN.search(text)):
        found.isbn = re.sub(r"[\s-]", "", m.group(1)).upper()
    if found.issn is None and (m := _ISSN.search(text)):
        found.issn = m.group(1).upper()


# --------------------------------------------------------------------------------------------
# the document's own metadata
def _pdf_date(value: Any) -> str | None:
    """A PDF date (``D:20250314...``) as ``YYYY-MM-DD``."""
    text = _clean(value)
    if not text:
        return None
    m = re.match(r"(?:D:)?(\d{4})(\d{2})?(\d{2})?", text)
    if not m:
        return None
    return "-".join(p for p in m.groups() if p)


def pdf_metadata(payload: bytes) -> Found:
    """Title, author, creation date of the document information dictionary, the XMP
    language, and the identifiers written on its first pages (pypdf)."""
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(payload), strict=False)
    info: Any = reader.metadata or {}
    found = Found(
        title=_clean(info.get("/Title")),
        authors=_split_authors(_clean(info.get("/Author"))),
        published=_pdf_date(info.get("/CreationDate")),
    )
    xmp = reader.xmp_metadata
    if xmp is not None:
        langs = xmp.dc_language or []
        found.language = _clean(langs[0]) if langs else None
        found.title = found.title or _clean((xmp.dc_title or {}).get("x-default"))
    text = "\n".join(
        [str(info.get("/Subject") or ""), str(info.get("/Keywords") or "")]
        + [page.extract_text() or "" for page in reader.pages[:MAX_PAGES_SCANNED]]
    )
    if not reader.pages:
        raise ValueError("no page")
    _identifiers(found, text)
    return found


def _split_authors(value: str | None) -> list[str]:
    if not value:
        return []
    return [a.strip() for a in re.split(r";|\band\b|&", value) if a.strip()]


_DC = "http://purl.org/dc/elements/1.1/"
_DCTERMS = "http://purl.org/dc/terms/"


def _xml(data: bytes) -> Any:
    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)
    return etree.fromstring(data, parser)


def _dc_fields(root: Any, found: Found) -> None:
    """Dublin Core elements of an OOXML core.xml, an ODF meta.xml or an EPUB package."""
    found.title = found.title or _clean(root.findtext(f".//{{{_DC}}}title"))
    for creator in root.iter(
        f"{{{_DC}}}creator", "{urn:oasis:names:tc:opendocument:xmlns:meta:1.0}initial-creator"
    ):
        if (name := _clean(creator.text)) and name not in found.authors:
            found.authors.append(name)
    date = root.findtext(f".//{{{_DC}}}date") or root.findtext(f".//{{{_DCTERMS}}}created")
    found.published = found.published or (_clean(date) or "")[:10] or None
    found.language = found.language or _clean(root.findtext(f".//{{{_DC}}}language"))
    for ident in root.iter(f"{{{_DC}}}identifier"):
        _identifiers_of_value(found, ident.text or "")


def _identifiers_of_value(found: Found, value: str) -> None:
    value = value.strip()
    low = value.lower()
    if low.startswith("urn:isbn:") or low.startswith("isbn"):
        found.isbn = found.isbn or re.sub(r"[^\dXx]", "", value.split(":")[-1]).upper() or None
    elif low.startswith("urn:issn:") or low.startswith("issn"):
        found.issn = found.issn or _clean(value.split(":")[-1])
    elif "10." in value:
        _identifiers(found, value)


def package_metadata(kind: str, payload: bytes) -> Found:
    """Word (OOXML), ODF and EPUB files: their Dublin Core package metadata."""
    found = Found()
    with zipfile.ZipFile(io.BytesIO(payload)) as zf:
        names = set(zf.namelist())
        if kind == "word" and "docProps/core.xml" in names:
            _dc_fields(_xml(zf.read("docProps/core.xml")), found)
        elif kind == "odf" and "meta.xml" in names:
            _dc_fields(_xml(zf.read("meta.xml")), found)
        elif kind == "epub":
            container = _xml(zf.read("META-INF/container.xml"))
            rootfile = next(
                (e.get("full-path") for e in container.iter() if e.get("full-path")), None
            )
            if rootfile is None or rootfile not in names:
                raise ValueError("EPUB without a package document")
            _dc_fields(_xml(zf.read(rootfile)), found)
    return found


def document_metadata(kind: str, payload: bytes) -> tuple[Found, str | None]:
    """(what the document says of itself, why it could not be read or None)."""
    try:
        if kind == "pdf":
            return pdf_metadata(payload), None
        if payload.startswith(b"PK\x03\x04"):
            return package_metadata(kind, payload), None
        return Found(), None  # a Word 97-2003 file: no reader of its properties here
    except Exception as exc:  # pypdf, zipfile and lxml raise many kinds on damaged files
        return Found(), f"unreadable {kind}: {type(exc).__name__}: {str(exc)[:300]}"


# --------------------------------------------------------------------------------------------
# landing pages
_CITATION = {
    "citation_title": "title",
    "citation_author": "authors",
    "citation_publication_date": "published",
    "citation_date": "published",
    "citation_online_date": "published",
    "citation_language": "language",
    "citation_isbn": "isbn",
    "citation_issn": "issn",
    "citation_doi": "doi",
    "dc.title": "title",
    "dc.creator": "authors",
    "dc.date": "published",
    "dcterms.issued": "published",
    "dcterms.created": "published",
    "dc.language": "language",
    "dc.identifier": "identifier",
}


@dataclass
class Page:
    """An HTML page of a watched job: its metadata and its links (absolute URL, text)."""

    title: str | None
    meta: Found
    links: list[tuple[str, str]]

    def as_dict(self) -> dict[str, Any]:
        return {"page_title": self.title, **self.meta.as_dict()}


def _put(found: Found, key: str, value: str | None) -> None:
    if not value:
        return
    if key == "isbn":  # as written on the page (hyphens, spaces): stored as its digits
        value = re.sub(r"[\s-]", "", value).upper()
    if key == "authors":
        if value not in found.authors:
            found.authors.append(value)
    elif key == "identifier":
        _identifiers_of_value(found, value)
    elif getattr(found, key) is None:
        setattr(found, key, value)


def _json_ld(found: Found, data: Any) -> None:
    """schema.org objects (a graph, a list, one object) of a publication kind."""
    if isinstance(data, list):
        for item in data:
            _json_ld(found, item)
        return
    if not isinstance(data, dict):
        return
    if "@graph" in data:
        _json_ld(found, data["@graph"])
    _put(found, "title", _clean(data.get("name") or data.get("headline")))
    authors = data.get("author") or []
    for author in authors if isinstance(authors, list) else [authors]:
        name = author.get("name") if isinstance(author, dict) else author
        _put(found, "authors", _clean(name))
    _put(found, "published", _clean(data.get("datePublished")))
    lang = data.get("inLanguage")
    _put(found, "language", _clean(lang.get("name") if isinstance(lang, dict) else lang))
    _put(found, "isbn", _clean(data.get("isbn")))
    _put(found, "issn", _clean(data.get("issn")))
    ident = data.get("identifier")
    for value in ident if isinstance(ident, list) else [ident]:
        if isinstance(value, str):
            _identifiers_of_value(found, value)


def parse_page(payload: bytes, url: str) -> Page:
    """An HTML page's title, catalogue metadata and links (lxml; a page it cannot parse has
    none of them)."""
    try:
        root = html.fromstring(payload)
    except (etree.ParserError, ValueError):
        return Page(None, Found(), [])
    title = _clean(root.findtext(".//title"))
    found = Found()
    for meta in root.iter("meta"):
        name = (meta.get("name") or meta.get("property") or "").strip().lower()
        if name in _CITATION:
            _put(found, _CITATION[name], _clean(meta.get("content")))
    for script in root.iter("script"):
        if (script.get("type") or "").lower() == "application/ld+json":
            try:
                _json_ld(found, json.loads(script.text or ""))
            except ValueError:
                continue
    found.language = found.language or _clean(root.get("lang"))
    links: dict[str, str] = {}
    for a in root.iter("a"):
        href = (a.get("href") or "").strip()
        if not href or href.startswith(("#", "javascript:", "mailto:")):
            continue
        target = urldefrag(urljoin(url, href))[0]
        if target.startswith(("http://", "https://")) and target not in links:
            links[target] = _clean(a.text_content()) or ""
        if len(links) >= MAX_LINKS:
            break
    return Page(title, found, list(links.items()))


def merge(own: Found, landing: dict[str, Any], link_text: str | None) -> dict[str, Any]:
    """The document's fields: landing page catalogue tags, then its own, then the link text
    and the page title (see the module's doc)."""
    merged: dict[str, Any] = {}
    mine = own.as_dict()
    for key in FIELDS:
        merged[key] = landing.get(key) or mine.get(key) or ([] if key == "authors" else None)
    merged["title"] = merged["title"] or link_text or landing.get("page_title")
    return merged
