"""The documents offered to cataloguing, as JSON lines and as Dublin Core (oai_dc) XML.

Why these two: JSON lines for our own tools and W3ACT-like curation tools, and the OAI-PMH
``oai_dc`` record (the Dublin Core every library catalogue imports) for the cataloguing
system. Only ``available`` and ``catalogued`` documents are exported: a document is offered
only once the access service replays it. Each carries its archive URL
(``<replay site>all/<timestamp>/<url>``) and its landing page's.

The Dublin Core file is validated before it is written against the published schemas, shipped
in ``schemas/`` (oai_dc.xsd of the OAI, simpledc20021212.xsd of the DCMI, and ``documents.xsd``
for the file's wrapper element): a cataloguing system that validates its input never gets a
file it refuses.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from lxml import etree
from sqlalchemy.engine import Engine

from harvestflow.atomic import atomic_open
from harvestflow.db import get_engine
from harvestflow.package_data import data_path
from harvestflow.settings import Settings, get_settings
from indexing.documents import store
from indexing.errors import IndexingError

OAI_DC = "http://www.openarchives.org/OAI/2.0/oai_dc/"
DC = "http://purl.org/dc/elements/1.1/"
XSI = "http://www.w3.org/2001/XMLSchema-instance"
OAI_DC_SCHEMA = "http://www.openarchives.org/OAI/2.0/oai_dc.xsd"
LIST_NS = "urn:harvestflow:documents"  # the wrapper of the file's oai_dc records
EXPORTED = ("available", "catalogued")


class ExportError(IndexingError, ValueError):
    """An export that does not validate against the Dublin Core schemas (which line, why)."""


@functools.cache
def export_schema() -> etree.XMLSchema:
    """The schema of the Dublin Core export file (it imports oai_dc.xsd and simpledc.xsd)."""
    return etree.XMLSchema(
        etree.parse(str(data_path("indexing.documents", "schemas", "documents.xsd")))
    )


def replay_site(settings: Settings) -> str:
    """The replay site's base URL (``[access] site_url``, else ``url``), ending in ``/``."""
    base = str(settings.get("access", "site_url") or settings.get("access", "url") or "")
    base = base or "http://127.0.0.1:8090/"
    return base if base.endswith("/") else base + "/"


def archive_url(base: str, when: datetime | None, url: str | None) -> str | None:
    if when is None or not url:
        return None
    return f"{base}all/{when:%Y%m%d%H%M%S}/{url}"


def as_record(doc: dict[str, Any], base: str) -> dict[str, Any]:
    """One document as exported (JSON-ready)."""
    first = doc["captures"][0] if doc["captures"] else {"url": doc["url"], "captured_at": None}
    return {
        "id": doc["document_id"],
        "target": doc["record_id"],
        "state": doc["state"],
        "kind": doc["kind"],
        "mime": doc["mime"],
        "digest": doc["digest"],
        "url": first["url"],
        "archive_url": archive_url(base, first["captured_at"] or doc["captured_at"], first["url"]),
        "captures": [c["url"] for c in doc["captures"]],
        "landing_url": doc["landing_url"],
        "landing_archive_url": archive_url(base, doc["landing_captured_at"], doc["landing_url"]),
        "link_text": doc["link_text"],
        "title": doc["title"],
        "authors": list(doc["authors"] or []),
        "published": doc["published"],
        "language": doc["language"],
        "isbn": doc["isbn"],
        "issn": doc["issn"],
        "doi": doc["doi"],
    }


def dublin_core(record: dict[str, Any]) -> Any:
    """An ``oai_dc:dc`` element for one exported record."""
    dc = etree.Element(
        f"{{{OAI_DC}}}dc",
        nsmap={"oai_dc": OAI_DC, "dc": DC, "xsi": XSI},
        attrib={f"{{{XSI}}}schemaLocation": f"{OAI_DC} {OAI_DC_SCHEMA}"},
    )

    def add(name: str, value: Any) -> None:
        if value:
            etree.SubElement(dc, f"{{{DC}}}{name}").text = str(value)

    add("title", record["title"])
    for author in record["authors"]:
        add("creator", author)
    add("date", record["published"])
    add("language", record["language"])
    add("type", "Text")
    add("format", record["mime"])
    add("identifier", record["archive_url"])
    add("identifier", record["isbn"] and f"urn:isbn:{record['isbn']}")
    add("identifier", record["issn"] and f"urn:issn:{record['issn']}")
    add("identifier", record["doi"] and f"doi:{record['doi']}")
    add("source", record["url"])
    add("relation", record["landing_archive_url"])
    return dc


def records(
    engine: Engine | None = None,
    settings: Settings | None = None,
    *,
    record_id: int | None = None,
) -> list[dict[str, Any]]:
    settings = settings or get_settings()
    engine = engine or get_engine(settings.harvest_db_url)
    base = replay_site(settings)
    with engine.connect() as conn:
        docs = store.list_documents(conn, record_id=record_id, states=EXPORTED)
    return [as_record(d, base) for d in docs]


def write_jsonl(path: Path, items: Iterable[dict[str, Any]]) -> int:
    count = 0
    with atomic_open(path, "w") as fh:
        for item in items:
            fh.write(json.dumps(item, ensure_ascii=False) + "\n")
            count += 1
    return count


def write_dublin_core(path: Path, items: Iterable[dict[str, Any]]) -> int:
    root = etree.Element(f"{{{LIST_NS}}}documents", nsmap={None: LIST_NS})
    count = 0
    for item in items:
        root.append(dublin_core(item))
        count += 1
    data = etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True)
    schema = export_schema()
    if not schema.validate(etree.fromstring(data)):
        err = schema.error_log.last_error
        raise ExportError(
            f"{path}: not written, line {err.line} does not validate against the Dublin Core"
            f" schema (oai_dc.xsd): {err.message}"
        )
    with atomic_open(path, "wb") as fh:
        fh.write(data)
    return count
