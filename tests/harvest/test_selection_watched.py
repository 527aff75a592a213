"""Watched targets: the crawl feed's ``watched`` and ``documentUrlScheme`` kept from the
import to the export, editable as a record's fields, and carried to the jobs that harvest them."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from harvest import pipeline as p
from harvest.selection.editing import save_record
from harvest.selection.feed_export import export_feed
from harvest.selection.importer import import_file
from harvest.selection.record_search import as_row, get_record
from harvest.selection.transfer import transfer_selection_records
from harvest.selection.watched import ATTRIBUTE, watched_jobs, watched_targets
from tests.support.selection_site import resolver

pytestmark = pytest.mark.services


def targets(port: int) -> list[dict]:
    base = f"http://feed.test:{port}"
    return [
        {
            "id": 11,
            "title": "Ministry of Publications",
            "seeds": [f"{base}/"],
            "schedules": [{"frequency": "MONTHLY", "startDate": "2026-01-05 09:00:00"}],
            "scope": "subdomains",
            "depth": "CAPPED",
            "watched": True,
            "documentUrlScheme": f"{base}/publications/",
        },
        {
            "id": 12,
            "title": "News",
            "seeds": [f"http://other.test:{port}/ok"],
            "schedules": [{"frequency": "MONTHLY", "startDate": "2026-01-05 09:00:00"}],
            "scope": "subdomains",
            "depth": "CAPPED",
        },
    ]


def test_feed_watched_and_scheme_are_stored_exported_and_read_back(hdb, site, tmp_path):
    path = tmp_path / "feed.json"
    path.write_text(json.dumps(targets(site)))
    report = import_file(path, resolver=resolver, engine=hdb, theme="gov")
    assert report.inserted == 2 and not report.errors
    with hdb.connect() as conn:
        (watched,) = watched_targets(conn)
    assert watched.title == "Ministry of Publications"
    assert watched.url_scheme == f"http://feed.test:{site}/publications/"

    out = tmp_path / "export.json"
    export_feed(out, engine=hdb)
    items = {item["id"]: item for item in json.loads(out.read_text())}
    assert items["11"]["watched"] is True
    assert items["11"]["documentUrlScheme"] == f"http://feed.test:{site}/publications/"
    assert items["12"]["watched"] is False and items["12"]["documentUrlScheme"] is None
    # the export read back changes nothing
    assert import_file(out, resolver=resolver, engine=hdb, theme="gov").unchanged == 2

    # a feed that no longer watches the target is followed
    changed = targets(site)
    changed[0]["watched"] = False
    changed[0]["documentUrlScheme"] = None
    path.write_text(json.dumps(changed))
    assert import_file(path, resolver=resolver, engine=hdb, theme="gov").updated == 1
    with hdb.connect() as conn:
        assert watched_targets(conn) == []


def test_bad_watched_or_scheme_refuses_the_target_naming_the_field(hdb, site, tmp_path):
    items = targets(site)
    items[0]["watched"] = "sometimes"
    items[1]["documentUrlScheme"] = "ftp://feed.test/docs/"
    path = tmp_path / "feed.json"
    path.write_text(json.dumps(items))
    report = import_file(path, resolver=resolver, engine=hdb, theme="gov")
    reasons = sorted(r for _, r in report.errors)
    assert reasons == [
        "documentUrlScheme: 'ftp://feed.test/docs/' is not an http(s) URL prefix",
        "watched must be true or false",
    ]
    assert report.inserted == 0


def test_csv_columns_and_the_record_form_edit_watched(hdb, site, tmp_path):
    b = f"http://good.test:{site}"
    path = tmp_path / "r.csv"
    path.write_text(
        "collection,title,seed_url,budget,frequency,depth,theme,watched,document_url_scheme\n"
        f"Gov,Reports,{b}/ok,small,monthly,domain,gov,yes,{b}/files/\n"
    )
    report = import_file(path, resolver=resolver, engine=hdb)
    assert report.inserted == 1 and not report.errors
    with hdb.connect() as conn:
        (target,) = watched_targets(conn)
        values = as_row(get_record(conn, target.record_id))
    assert (values["watched"], values["document_url_scheme"]) == ("yes", f"{b}/files/")

    values.update(watched="no", document_url_scheme="")
    result = save_record(values, "ann", target.record_id, resolver=resolver, engine=hdb)
    assert result.refused is None
    assert ("watched", "yes", "no") in result.changes
    assert ("document_url_scheme", f"{b}/files/", "") in result.changes
    with hdb.connect() as conn:
        assert watched_targets(conn) == []
        assert as_row(get_record(conn, target.record_id))["watched"] == "no"

    values["document_url_scheme"] = "not a url"
    refused = save_record(values, "ann", target.record_id, resolver=resolver, engine=hdb)
    assert refused.refused == "document_url_scheme: 'not a url' is not an http(s) URL prefix"


def test_jobs_of_a_watched_target_carry_the_mark_the_document_step_reads(hdb, site, tmp_path):
    path = tmp_path / "feed.json"
    path.write_text(json.dumps(targets(site)))
    import_file(path, resolver=resolver, engine=hdb, theme="gov")
    result = transfer_selection_records(engine=hdb)
    monthly = result["definitions"]["ukwa-monthly-202601050900"]
    jobs = p.generate_jobs(monthly, datetime(2026, 12, 6, tzinfo=UTC), engine=hdb)
    assert len(jobs) == 2  # the watched configuration is not merged with the other one
    specs = {}
    for job in jobs:
        spec = json.loads(Path(p.prepare_job(job, tmp_path / str(job), engine=hdb)).read_text())
        specs[spec["seeds"][0]] = (job, spec)
    job_w, spec_w = specs[f"http://feed.test:{site}/"]
    job_o, spec_o = specs[f"http://other.test:{site}/ok"]
    with hdb.connect() as conn:
        (target,) = watched_targets(conn)
        found = watched_jobs(conn, [job_w, job_o])
    assert spec_w["template"][ATTRIBUTE] == {
        "records": [target.record_id],
        "url_schemes": [f"http://feed.test:{site}/publications/"],
    }
    assert ATTRIBUTE not in spec_o["template"]
    assert list(found) == [job_w]
    assert found[job_w].record_ids == (target.record_id,)
