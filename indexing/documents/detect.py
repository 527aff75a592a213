"""Which payloads are documents: the MIME type says so AND the bytes agree (their signature).

Why both: servers label files wrongly both ways (an HTML error page sent as
``application/pdf``, a PDF sent as ``application/octet-stream``); a declared document type whose
bytes are of another kind is no document, and bytes with a document's signature under a
generic type (octet-stream, a missing type) are one. A PDF whose header is there but whose body
cannot be read is still a document — flagged broken by the metadata reader, not dropped here.
"""

from __future__ import annotations

import io
import zipfile

PDF_MIMES = {"application/pdf", "application/x-pdf"}
WORD_MIMES = {
    "application/msword",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
}
EPUB_MIMES = {"application/epub+zip"}
ODF_PREFIX = "application/vnd.oasis.opendocument."
GENERIC_MIMES = {"", "application/octet-stream", "binary/octet-stream", "application/download"}

_OLE2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def declared_kind(mime: str) -> str | None:
    """The kind a MIME type declares (None: not a document type)."""
    mime = mime.lower()
    if mime in PDF_MIMES:
        return "pdf"
    if mime in WORD_MIMES:
        return "word"
    if mime in EPUB_MIMES:
        return "epub"
    if mime.startswith(ODF_PREFIX):
        return "odf"
    return None


def signature_kind(payload: bytes) -> str | None:
    """The kind the bytes are (None: none of ours)."""
    if b"%PDF-" in payload[:1024]:
        return "pdf"
    if payload.startswith(_OLE2):
        return "word"  # a Word 97-2003 file (an OLE2 compound file)
    if payload.startswith(b"PK\x03\x04"):
        return _zip_kind(payload)
    return None


def _zip_kind(payload: bytes) -> str | None:
    """OOXML Word, ODF or EPUB: the package's own marks (``mimetype`` entry, ``word/``)."""
    try:
        with zipfile.ZipFile(io.BytesIO(payload)) as zf:
            names = zf.namelist()
            if "mimetype" in names:
                inner = zf.read("mimetype")[:100].decode("ascii", "replace").strip()
                if inner == "application/epub+zip":
                    return "epub"
                if inner.startswith(ODF_PREFIX):
                    return "odf"
            if any(n.startswith("word/") for n in names):
                return "word"
    except (zipfile.BadZipFile, OSError, ValueError, KeyError):
        return None
    return None


def document_kind(mime: str, payload: bytes) -> str | None:
    """The document's kind when its type and its bytes agree (see the module's doc)."""
    declared = declared_kind(mime)
    found = signature_kind(payload)
    if found is None:
        return None
    if declared is not None:
        return found if found == declared else None
    return found if mime.lower() in GENERIC_MIMES else None


def in_scheme(url: str, schemes: tuple[str, ...]) -> bool:
    """Whether ``url`` is within one of the target's document URL schemes (none: every URL)."""
    return not schemes or any(url.startswith(s) for s in schemes)
