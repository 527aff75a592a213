"""Selection records: CSV and UKWA feed import, validation, online URL check, transfer."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from harvest import pipeline as p
from harvest.selection.importer import import_file
from harvest.selection.transfer import transfer_selection_records
from harvest.selection.urlcheck import check_url
from tests.support.selection_site import feed, resolver


def test_url_check_verdicts(site):
    base = f"http://good.test:{site}"
    assert check_url(f"{base}/ok", resolver=resolver).verdict == "ok"
    assert check_url(f"{base}/nohead", resolver=resolver).verdict == "ok"  # GET after 405
    moved = check_url(f"{base}/moved", resolver=resolver)
    assert (moved.verdict, moved.status, moved.target) == ("redirect", 301, f"{base}/ok")
    gone = check_url(f"{base}/gone", resolver=resolver)
    assert gone.verdict == "invalid" and "404" in gone.reason
    assert check_url(f"{base}/boom", resolver=resolver).verdict == "invalid"  # 500
    nodns = check_url(f"http://nowhere.test:{site}/", resolver=resolver)
    assert nodns.verdict == "invalid" and "no DNS" in nodns.reason


HEADER = (
    "id,collection,title,seed_url,supplementary_urls,budget,frequency,depth,active,theme,"
    "keywords,content_notes,technical_notes,creator,curator\n"
)


def csv_rows(port: int) -> list[str]:
    b = f"http://good.test:{port}"
    return [
        f",News,Good,{b}/ok,{b}/sitemap.xml,small,daily,page,yes,politics,a;b,,,ann,bob",
        f",News,Big daily,{b}/a,,large,daily,domain,yes,politics,,,,ann,bob",
        f",News,No theme,http://other.test:{port}/,,small,weekly,domain,yes,,,,,ann,bob",
        f",News,Gone,http://other.test:{port}/gone,,small,weekly,domain,yes,sport,,,,ann,bob",
        f",News,No DNS,http://nowhere.test:{port}/,,small,weekly,domain,yes,sport,,,,ann,bob",
        f",News,Moved,http://other.test:{port}/moved,,small,weekly,domain,yes,sport,,,,ann,bob",
        f",News,Same host,{b}/b,,medium,monthly,host,yes,sport,,,,ann,bob",
        f",Elections 2027,Same URL,{b}/ok,,small,weekly,page,yes,politics,,,,ann,bob",
        f",News,Inactive,http://news.good.test:{port}/,,small,daily,page,no,sport,,,,ann,bob",
    ]


@pytest.mark.services
def test_csv_import_validates_reports_and_reimport_updates(hdb, site, tmp_path):
    path = tmp_path / "records.csv"
    path.write_text(HEADER + "\n".join(csv_rows(site)) + "\n")
    report = import_file(path, resolver=resolver, engine=hdb, user="ann")
    refused = {w.split()[-1]: r for w, r in report.errors}
    assert set(refused) == {"3", "4", "5", "6"}  # CSV lines (header is line 1)
    assert "large budget cannot be harvested daily" in refused["3"]
    assert "theme is missing" in refused["4"]
    assert "404" in refused["5"]
    assert "no DNS" in refused["6"]
    warned = {w.split()[-1]: r for w, r in report.warnings}
    assert "redirects (301) to" in warned["7"] and warned["7"].endswith("/ok")
    assert "host good.test" in warned["8"]
    assert "same URL already in collection(s) News" in warned["9"]
    # another host of a registrable domain already present (inactive records are kept too)
    assert warned["10"] == f"domain good.test already present (http://good.test:{site}/b)"
    assert set(warned) == {"7", "8", "9", "10"}  # line 2, the first of its domain: no flag
    assert (report.rows, report.inserted, report.updated, report.unchanged) == (9, 5, 0, 0)

    again = import_file(path, resolver=resolver, engine=hdb, user="ann")
    assert (again.inserted, again.updated, again.unchanged) == (0, 0, 5)
    rows = csv_rows(site)
    rows[0] = rows[0].replace(",small,daily,page,", ",medium,weekly,page,")
    path.write_text(HEADER + "\n".join(rows) + "\n")
    changed = import_file(path, resolver=resolver, engine=hdb, user="cid")
    assert (changed.inserted, changed.updated, changed.unchanged) == (0, 1, 4)
    with hdb.connect() as c:
        assert c.execute(sa.text("SELECT count(*) FROM selection_records")).scalar() == 5
        rec = c.execute(sa.text("SELECT * FROM selection_records WHERE title = 'Good'")).first()
    assert (rec.budget, rec.frequency, rec.modified_by, rec.created_by) == (
        "medium",
        "weekly",
        "cid",
        "ann",
    )
    assert rec.supplementary_urls == [f"http://good.test:{site}/sitemap.xml"]
    assert rec.keywords == ["a", "b"]


@pytest.mark.services
def test_ukwa_feed_import_transfer_and_schedule(hdb, site, tmp_path):
    path = tmp_path / "feed.json"
    path.write_text(json.dumps(feed(site)))
    report = import_file(path, resolver=resolver, engine=hdb, theme="web")
    assert [r for _, r in report.errors] == ["DOMAINCRAWL targets are harvested by the broad crawl"]
    assert report.inserted == 2
    assert import_file(path, resolver=resolver, engine=hdb, theme="web").unchanged == 2

    result = transfer_selection_records(engine=hdb)
    assert result["records"] == 2 and not result["errors"]
    names = sorted(result["definitions"])
    assert names == ["ukwa-daily", "ukwa-monthly-202601050900"]
    monthly = result["definitions"]["ukwa-monthly-202601050900"]
    # the target's own schedule starts 2026-01-05 09:00: the monthly run of 2026-01-01
    # (window December-January 1st) has nothing to do, the one of 2026-02-01 harvests it
    assert monthly not in p.due_definitions("monthly", datetime(2026, 1, 1, tzinfo=UTC), engine=hdb)
    assert monthly in p.due_definitions("monthly", datetime(2026, 2, 1, tzinfo=UTC), engine=hdb)
    assert monthly in p.due_definitions("monthly", datetime(2026, 12, 6, tzinfo=UTC), engine=hdb)
    jobs = p.generate_jobs(monthly, datetime(2026, 12, 6, tzinfo=UTC), engine=hdb)
    spec = json.loads(Path(p.prepare_job(jobs[0], tmp_path, engine=hdb)).read_text())
    assert spec["seeds"] == [f"http://feed.test:{site}/"]
    assert spec["template"]["obey_robots"] is False  # ignoreRobotsTxt
    assert spec["template"]["name"] == "default_selective"  # scope subdomains = domain
    assert spec["domains"][0]["max_bytes"] == 1_000_000_000  # CAPPED = medium budget


@pytest.mark.services
def test_inactive_records_are_not_transferred_and_leave_their_definition(hdb, site, tmp_path):
    b = f"http://good.test:{site}"
    path = tmp_path / "r.csv"
    rows = [
        f",News,A,{b}/a,,small,daily,page,yes,politics,,,,ann,bob",
        f",News,B,http://other.test:{site}/ok,,small,daily,page,no,politics,,,,ann,bob",
    ]
    path.write_text(HEADER + "\n".join(rows) + "\n")
    import_file(path, resolver=resolver, engine=hdb)
    result = transfer_selection_records("daily", engine=hdb)
    hid = result["definitions"]["news-daily"]
    with hdb.connect() as c:
        domains = (
            c.execute(
                sa.text(
                    "SELECT d.name FROM harvest_configs hc JOIN configurations c USING (config_id)"
                    " JOIN domains d USING (domain_id) WHERE hc.harvest_id = :h"
                ),
                {"h": hid},
            )
            .scalars()
            .all()
        )
    assert domains == ["good.test"]
    with hdb.begin() as c:  # an operator adds traps to the definition: a transfer keeps them
        c.execute(
            sa.text("UPDATE harvestdefinitions SET crawlertraps = '{/cal/}' WHERE harvest_id = :h"),
            {"h": hid},
        )
    assert transfer_selection_records("daily", engine=hdb)["definitions"]["news-daily"] == hid
    with hdb.connect() as c:
        traps = c.execute(
            sa.text("SELECT crawlertraps FROM harvestdefinitions WHERE harvest_id = :h"), {"h": hid}
        ).scalar()
    assert traps == ["/cal/"]
    rows[0] = rows[0].replace(",yes,", ",no,")
    path.write_text(HEADER + "\n".join(rows) + "\n")
    import_file(path, resolver=resolver, engine=hdb)
    result = transfer_selection_records("daily", engine=hdb)
    assert result["emptied"] == ["news-daily"]
    with hdb.connect() as c:
        left = c.execute(
            sa.text("SELECT count(*) FROM harvest_configs WHERE harvest_id = :h"), {"h": hid}
        ).scalar()
    assert left == 0


@pytest.mark.services
def test_reimported_target_with_a_new_seed_is_not_flagged_against_itself(hdb, site, tmp_path):
    path = tmp_path / "feed.json"
    items = [feed(site)[0]]
    path.write_text(json.dumps(items))
    first = import_file(path, resolver=resolver, engine=hdb, theme="web")
    assert (first.inserted, first.warnings) == (1, [])
    items[0]["seeds"] = [f"http://feed.test:{site}/a"]  # the curator moved the seed
    path.write_text(json.dumps(items))
    again = import_file(path, resolver=resolver, engine=hdb, theme="web")
    assert (again.inserted, again.updated, again.errors, again.warnings) == (0, 1, [], [])
    # another target on the same host is still flagged
    items.append({**feed(site)[0], "id": 7, "seeds": [f"http://feed.test:{site}/b"]})
    path.write_text(json.dumps(items))
    third = import_file(path, resolver=resolver, engine=hdb, theme="web")
    assert third.inserted == 1
    assert [r for _, r in third.warnings] == [
        f"host feed.test already present (http://feed.test:{site}/a)"
    ]
    with hdb.connect() as c:
        rows = c.execute(
            sa.text(
                "SELECT external_id, seed_url, validation_status FROM selection_records ORDER BY 1"
            )
        ).all()
    assert [tuple(r) for r in rows] == [
        ("ukwa:1", f"http://feed.test:{site}/a", "valid"),
        ("ukwa:7", f"http://feed.test:{site}/b", "warning"),
    ]


@pytest.mark.services
def test_a_target_with_several_schedules_is_harvested_by_each(hdb, site, tmp_path):
    def sched(freq, start, end=None):
        return {"frequency": freq, "startDate": start, "endDate": end}

    event = {
        "id": 9,
        "title": "Election month, then weekly",
        "seeds": [f"http://feed.test:{site}/"],
        "schedules": [
            sched("DAILY", "2026-03-01 06:00:00", "2026-03-31 23:00:00"),
            sched("WEEKLY", "2026-04-01 06:00:00"),
            sched("DOMAINCRAWL", None),  # the broad crawl's business
        ],
        "scope": "plus1",
        "depth": "CAPPED",
    }
    large = {
        **event,
        "id": 10,
        "seeds": [f"http://other.test:{site}/ok"],
        "depth": "CAPPED_LARGE",
        "schedules": [sched("MONTHLY", "2026-01-05 09:00:00"), sched("DAILY", None)],
    }
    path = tmp_path / "feed.json"
    path.write_text(json.dumps([event, large]))
    report = import_file(path, resolver=resolver, engine=hdb, theme="web")
    assert report.inserted == 1
    assert report.errors == [
        (
            "feed.json item 2 (id 10)",
            "schedule 2 (daily): a large budget cannot be harvested daily"
            " (it would not finish within the day)",
        )
    ]
    result = transfer_selection_records(engine=hdb)
    daily_name = "ukwa-daily-202603010600-until202603312300"
    assert sorted(result["definitions"]) == [daily_name, "ukwa-weekly-202604010600"]
    daily = result["definitions"][daily_name]
    weekly = result["definitions"]["ukwa-weekly-202604010600"]

    def due(frequency, y, m, d):
        return p.due_definitions(frequency, datetime(y, m, d, tzinfo=UTC), engine=hdb)

    assert daily in due("daily", 2026, 3, 2) and daily not in due("daily", 2026, 4, 2)
    assert weekly not in due("weekly", 2026, 3, 29) and weekly in due("weekly", 2026, 4, 5)
    with hdb.connect() as c:
        configs = dict(
            c.execute(
                sa.text(
                    "SELECT hc.harvest_id, c.name FROM harvest_configs hc"
                    " JOIN configurations c USING (config_id)"
                )
            ).all()
        )
    assert configs == {daily: "sel-medium-daily-one_click", weekly: "sel-medium-weekly-one_click"}
    # a weekly run's transfer concerns the record through its weekly schedule only
    weekly_only = transfer_selection_records("weekly", engine=hdb)
    assert weekly_only["records"] == 1 and list(weekly_only["definitions"]) == [
        "ukwa-weekly-202604010600"
    ]
    assert transfer_selection_records("monthly", engine=hdb)["records"] == 0
    # a record stored with its DOMAINCRAWL schedule (an older import) transfers the same way
    with hdb.begin() as c:
        c.execute(
            sa.text(
                "UPDATE selection_records SET schedules = schedules"
                ' || CAST(\'[{"frequency": "DOMAINCRAWL"}]\' AS jsonb)'
            )
        )
    again = transfer_selection_records(engine=hdb)
    assert not again["errors"] and sorted(again["definitions"]) == sorted(result["definitions"])
