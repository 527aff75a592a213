"""The documents offered for cataloguing (#35 item 4): only available and catalogued ones, as
JSON lines and as Dublin Core (oai_dc) records with their archive URLs."""

from __future__ import annotations

import json

import pytest
from lxml import etree

from harvestflow import settings as settings_mod
from harvestflow.package_data import data_path
from indexing.documents import export, store
from tests.support.docfixtures import add

pytestmark = pytest.mark.services

OAI_DC = "http://www.openarchives.org/OAI/2.0/oai_dc/"
DC = "http://purl.org/dc/elements/1.1/"
XSI = "http://www.w3.org/2001/XMLSchema-instance"
SCHEMAS = data_path("indexing.documents", "schemas")
# the 15 elements of the Dublin Core Metadata Element Set: the only children oai_dc allows
DCMES = {"title", "creator", "subject", "description", "publisher", "contributor", "date",
         "type", "format", "identifier", "source", "language", "relation", "coverage", "rights"}  # fmt: skip


def test_export_holds_only_offered_documents_with_archive_urls(db_engine, tmp_path, monkeypatch):
    monkeypatch.setenv("HARVESTFLOW_ACCESS__SITE_URL", "http://replay.test:8090/")
    settings_mod.reset()
    try:
        offered = add(db_engine, 1)
        add(db_engine, 2, available=False)  # not replayed yet: not offered
        catalogued = add(db_engine, 3)
        with db_engine.begin() as conn:
            store.decide(conn, catalogued, "carol", "catalogue")
        items = export.records(db_engine)
    finally:
        settings_mod.reset()
    assert [i["id"] for i in items] == [offered, catalogued]
    first = items[0]
    assert first["archive_url"] == (
        "http://replay.test:8090/all/20260304050607/http://pubs.test/publications/files/report-1.pdf"
    )
    assert first["landing_archive_url"] == (
        "http://replay.test:8090/all/20260304050601/http://pubs.test/publications/report-1"
    )

    lines = tmp_path / "docs.jsonl"
    assert export.write_jsonl(lines, items) == 2
    assert [json.loads(line)["state"] for line in lines.read_text().splitlines()] == [
        "available",
        "catalogued",
    ]

    xml = tmp_path / "docs.xml"
    assert export.write_dublin_core(xml, items) == 2
    root = etree.parse(str(xml)).getroot()
    records = list(root)
    assert len(records) == 2
    for record, item in zip(records, items, strict=True):
        assert record.tag == f"{{{OAI_DC}}}dc"
        assert record.get(f"{{{XSI}}}schemaLocation") == (
            f"{OAI_DC} http://www.openarchives.org/OAI/2.0/oai_dc.xsd"
        )
        names = [etree.QName(child) for child in record]
        assert {n.namespace for n in names} == {DC}
        assert {n.localname for n in names} <= DCMES
        values = {(n.localname, child.text) for n, child in zip(names, record, strict=True)}
        assert ("title", item["title"]) in values
        assert ("creator", "Jane Smith") in values
        assert ("identifier", item["archive_url"]) in values
        assert ("identifier", "urn:isbn:9781528612345") in values
        assert ("identifier", f"doi:{item['doi']}") in values
        assert ("relation", item["landing_archive_url"]) in values
        assert ("date", "2025-07-14") in values and ("language", "en") in values
    # each record validates against the OAI's oai_dc schema (importing the DCMI's Simple Dublin
    # Core schema), the file against its wrapper's: libxml2's validator, the schemas shipped
    oai_dc = etree.XMLSchema(etree.parse(str(SCHEMAS / "oai_dc.xsd")))
    for record in records:
        assert oai_dc.validate(etree.fromstring(etree.tostring(record))), oai_dc.error_log
    whole = etree.XMLSchema(etree.parse(str(SCHEMAS / "documents.xsd")))
    assert whole.validate(etree.parse(str(xml))), whole.error_log


def test_an_export_that_is_not_dublin_core_is_refused_naming_the_line(tmp_path, monkeypatch):
    record = {"title": "Report", "authors": ["Jane Smith"], "published": "2025-07-14",
              "language": "en", "mime": "application/pdf", "archive_url": "http://r.test/all/1/x",
              "isbn": "9781528612345", "issn": None, "doi": None, "url": "http://pubs.test/x.pdf",
              "landing_archive_url": None}  # fmt: skip
    plain = export.dublin_core

    def with_isbn(item):  # type: ignore[no-untyped-def]
        dc = plain(item)  # an ISBN element: no element of the Dublin Core element set
        etree.SubElement(dc, f"{{{DC}}}isbn").text = item["isbn"]
        return dc

    monkeypatch.setattr(export, "dublin_core", with_isbn)
    out = tmp_path / "docs.xml"
    with pytest.raises(export.ExportError, match=r"line \d+ .*oai_dc.xsd.*isbn"):
        export.write_dublin_core(out, [record])
    assert not out.exists()
