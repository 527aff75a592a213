"""Selection records edited as the curator pages do (harvest.selection.editing), on the real
harvest database, with the URL check against a loopback server: the import's validation and
warnings on a form, history and audit of every change, bulk edit and move, an export that
imports back to the same records, and the transfer the DAGs run seeing the edits."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
import sqlalchemy as sa

from harvest.selection import editing as ed
from harvest.selection import record_search as rs
from harvest.selection.importer import import_file
from harvest.selection.transfer import transfer_selection_records
from tests.support.selection_site import resolver

pytestmark = pytest.mark.services


def form(port: int, **changes: str) -> dict[str, str]:
    values = {
        "collection": "News",
        "title": "Good news",
        "seed_url": f"http://good.test:{port}/ok",
        "budget": "small",
        "frequency": "Weekly",
        "depth": "page",
        "active": "yes",
        "theme": "politics",
        "curator": "ann",
    }
    values.update(changes)
    return values


def save(hdb: sa.Engine, fields: dict[str, str], record_id: int | None = None, user: str = "ann"):
    return ed.save_record(fields, user, record_id, resolver=resolver, engine=hdb)


def test_a_form_is_checked_as_the_import_checks_a_row(hdb, site) -> None:
    impossible = save(hdb, form(site, budget="large", frequency="daily"))
    assert impossible.record_id is None
    assert impossible.refused and "large budget cannot be harvested daily" in impossible.refused
    gone = save(hdb, form(site, seed_url=f"http://other.test:{site}/gone"))
    assert gone.refused == f"http://other.test:{site}/gone: the server answered 404"
    nodns = save(hdb, form(site, seed_url=f"http://nowhere.test:{site}/"))
    assert nodns.refused and "no DNS for nowhere.test" in nodns.refused
    assert save(hdb, form(site, seed_url="javascript:alert(1)")).refused

    created = save(hdb, form(site))
    assert created.refused is None and created.record_id
    assert [c.verdict for c in created.checks] == ["ok"]
    moved = save(hdb, form(site, title="Moved", seed_url=f"http://good.test:{site}/moved"))
    assert moved.record_id and moved.refused is None
    assert moved.warnings == [
        f"http://good.test:{site}/moved redirects (301) to http://good.test:{site}/ok",
        f"host good.test already present (http://good.test:{site}/ok)",
    ]
    elsewhere = save(hdb, form(site, collection="Elections 2027"))
    assert elsewhere.warnings == ["same URL already in collection(s) News"]
    twice = save(hdb, form(site))
    assert twice.refused and "conflicts with another record" in twice.refused
    with hdb.connect() as conn:
        count = conn.execute(sa.text("SELECT count(*) FROM selection_records")).scalar_one()
        row = rs.get_record(conn, created.record_id)
    assert count == 3
    assert row is not None and (row["frequency"], row["created_by"], row["creator"]) == (
        "weekly",
        "ann",
        "ann",
    )


def test_edits_have_history_and_audit_and_reach_the_transfer(hdb, site) -> None:
    first = save(hdb, form(site)).record_id
    second = save(hdb, form(site, seed_url=f"http://other.test:{site}/", title="Other")).record_id
    third = save(hdb, form(site, seed_url=f"http://news.good.test:{site}/", title="N")).record_id
    assert first and second and third
    before = transfer_selection_records(engine=hdb)
    assert set(before["definitions"]) == {"news-weekly"}

    # an edit keeps the URL (no new check) and changes the title and depth
    edited = save(hdb, form(site, title="Better title", depth="host"), first, user="bob")
    assert edited.refused is None and edited.checks == []
    assert sorted(c[0] for c in edited.changes) == ["depth", "title"]
    # the edit is refused as the import refuses it: nothing changes
    refused = save(hdb, form(site, budget="large", frequency="weekly"), first, user="bob")
    assert refused.refused and "large budget cannot be harvested weekly" in refused.refused

    bulk = ed.bulk_edit(
        [first, second, third], ed.BulkChange(frequency="monthly"), "bob", engine=hdb
    )
    assert (sorted(bulk.changed), bulk.refused) == (sorted([first, second, third]), [])
    ends = ed.bulk_edit([second], ed.BulkChange(end_date=date(2031, 1, 1)), "bob", engine=hdb)
    assert ends.changed == [second]
    off = ed.bulk_edit([third], ed.BulkChange(deactivate=True), "bob", engine=hdb)
    assert off.changed == [third]
    moved = ed.move_records([first], "Elections 2027", "bob", engine=hdb)
    assert moved.changed == [first]
    with pytest.raises(ed.EditError):
        ed.bulk_edit([first], ed.BulkChange(), "bob", engine=hdb)

    with hdb.connect() as conn:
        history = rs.record_history(conn, first)
        audit = conn.execute(
            sa.text("SELECT username, action, target, detail FROM audit_log ORDER BY audit_id")
        ).all()
        second_row = rs.get_record(conn, second)
    assert [(h["field"], h["old_value"], h["new_value"], h["changed_by"]) for h in history[:4]] == [
        ("collection", "News", "Elections 2027", "bob"),
        ("frequency", "weekly", "monthly", "bob"),
        ("depth", "page", "host", "bob"),
        ("title", "Good news", "Better title", "bob"),
    ]
    assert [a.action for a in audit] == [
        *["record.create"] * 3,
        "record.edit",
        *["record.bulk_edit"] * 5,
        "record.move",
    ]
    assert audit[-1].target == f"record {first}" and audit[-1].username == "bob"
    assert audit[-1].detail == {
        "before": {"collection": "News"},
        "after": {"collection": "Elections 2027"},
    }
    assert second_row is not None
    assert second_row["schedules"][0]["endDate"] == "2031-01-01"

    # the transfer the selective DAGs run sees the edits: monthly, moved, one inactive
    after = transfer_selection_records(engine=hdb)
    assert after["records"] == 2
    names = set(after["definitions"])
    assert "elections-2027-monthly" in names
    assert any(n.startswith("news-monthly-") and n.endswith("-until203101010000") for n in names)
    assert "news-weekly" in after["emptied"]
    with hdb.connect() as conn:
        seeds = conn.execute(
            sa.text("SELECT seeds FROM seedlists WHERE name = 'sel-small-monthly-host'")
        ).scalar_one()
    assert f"http://good.test:{site}/ok" in seeds


def test_an_export_imports_back_to_the_same_records(hdb, site, tmp_path: Path) -> None:
    save(hdb, form(site, supplementary_urls=f"http://good.test:{site}/a", keywords="a; b"))
    save(hdb, form(site, seed_url=f"http://other.test:{site}/", title='x, "quoted"\nline'))
    rid = save(
        hdb, form(site, seed_url=f"http://news.good.test:{site}/", collection="Arts")
    ).record_id
    assert rid
    ed.bulk_edit([rid], ed.BulkChange(end_date=date(2030, 6, 1), deactivate=True), "x", engine=hdb)
    with hdb.connect() as conn:
        text = rs.export_csv(conn, rs.RecordFilter(collection="News"))
        everything = rs.export_csv(conn, rs.RecordFilter())
        stored = conn.execute(sa.text("SELECT * FROM selection_records ORDER BY record_id")).all()
    assert len(text.splitlines()) == 1 + 3  # header, two records, one title on two lines
    path = tmp_path / "export.csv"
    path.write_text(everything, encoding="utf-8")
    report = import_file(path, resolver=resolver, engine=hdb, user="y", rejects_path=tmp_path / "r")
    assert (report.errors, report.inserted, report.updated, report.unchanged) == ([], 0, 0, 3)
    with hdb.connect() as conn:
        again = conn.execute(sa.text("SELECT * FROM selection_records ORDER BY record_id")).all()
    assert [tuple(r) for r in again] == [tuple(r) for r in stored]


def test_a_bulk_edit_refuses_the_records_the_import_would_and_changes_the_others(
    hdb,
    site,
) -> None:
    large = save(hdb, form(site, budget="large", frequency="monthly", depth="domain")).record_id
    small = save(hdb, form(site, seed_url=f"http://other.test:{site}/", title="Small")).record_id
    taken = save(hdb, form(site, seed_url=f"http://other.test:{site}/", collection="Arts"))
    assert large and small and taken.record_id, (large, small, taken)
    daily = ed.bulk_edit([large, small], ed.BulkChange(frequency="daily"), "bob", engine=hdb)
    assert daily.changed == [small]
    assert daily.refused == [
        (
            large,
            "large budget / daily / domain depth: a large budget cannot be harvested daily (it"
            " would not finish within the day)",
        )
    ]
    # Arts already holds small's URL: moving it there is refused, as a second import row is
    moved = ed.move_records([small, 999999], "Arts", "bob", engine=hdb)
    assert moved.changed == [] and [r for r, _ in moved.refused] == [small, 999999]
    assert "conflicts with another record" in moved.refused[0][1]
    with hdb.connect() as conn:
        assert rs.get_record(conn, large)["frequency"] == "monthly"  # type: ignore[index]
        assert rs.get_record(conn, small)["collection"] == "News"  # type: ignore[index]
        history = rs.record_history(conn, large)
    assert history and {h["old_value"] for h in history} == {""}  # its creation only
