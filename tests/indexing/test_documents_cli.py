"""``harvestflow documents list|show|export`` (#35 item 4)."""

from __future__ import annotations

import json

import pytest
from lxml import etree

from app.cli.main import main
from tests.support.docfixtures import add

pytestmark = pytest.mark.services


def test_documents_list_show_and_export(db_engine, tmp_path, capsys):
    offered = add(db_engine, 1)
    waiting = add(db_engine, 2, available=False)
    assert main(["documents", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[:3] for line in lines] == [
        [str(offered), "available", "pdf"],
        [str(waiting), "new", "pdf"],
    ]
    assert main(["documents", "list", "--state", "new"]) == 0
    assert capsys.readouterr().out.split("\t")[0] == str(waiting)

    assert main(["documents", "show", str(offered)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["landing_url"] == "http://pubs.test/publications/report-1"
    assert [h["action"] for h in shown["history"]] == ["available"]
    assert main(["documents", "show", "999"]) == 1
    assert "no document 999" in capsys.readouterr().err

    out = tmp_path / "docs.xml"
    assert main(["documents", "export", str(out), "--format", "dc"]) == 0
    assert "1 document(s) written" in capsys.readouterr().out
    (record,) = etree.parse(str(out)).getroot()
    assert record.tag == "{http://www.openarchives.org/OAI/2.0/oai_dc/}dc"
    jsonl = tmp_path / "docs.jsonl"
    assert main(["documents", "export", str(jsonl)]) == 0
    assert [json.loads(x)["id"] for x in jsonl.read_text().splitlines()] == [offered]
