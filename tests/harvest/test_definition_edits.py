"""Definitions made and changed by people (harvest.office.definition_edits) on a real harvest
database: an hourly event crawl is due in the next hourly run and its jobs hold its seeds; a
deactivated definition is left out and comes back when reactivated; edits are versioned with
who and when; bad forms are refused naming the field, before anything is written."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import sqlalchemy as sa

from harvest.definitions import advance_schedule, deactivate, due_definitions
from harvest.office.definition_edits import (
    definition_history,
    read_definition,
    save_definition,
    set_active,
)
from harvest.office.definition_form import OfficeError, parse_definition_form
from harvest.planning import generate_jobs


def dt(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def event_crawl(**changes: str) -> dict[str, str]:
    form = {
        "name": "Election night",
        "comments": "results pages",
        "seeds": "https://www.example.fr/results\nhttps://live.example.org/\n\nhttps://www.example.fr/map",
        "template": "default_selective",
        "max_objects": "5000",
        "max_bytes": "",
        "schedule": "every",
        "every": "1",
        "unit": "hour",
    }
    return {**form, **changes}


def test_an_hourly_event_crawl_is_due_in_the_next_hourly_run_and_harvests_its_seeds(hdb):
    made = dt(2026, 11, 22, 10, 20)
    hid = save_definition(event_crawl(), "carol", engine=hdb, now=made)
    assert hid not in due_definitions("hourly", dt(2026, 11, 22, 10), hdb)
    assert hid in due_definitions("hourly", dt(2026, 11, 22, 11), hdb)
    assert hid not in due_definitions("daily", dt(2026, 11, 23), hdb)  # no other DAG takes it

    jobs = generate_jobs(hid, dt(2026, 11, 22, 11), hdb)
    with hdb.connect() as conn:
        rows = conn.execute(
            sa.text("SELECT seedlist, template_name FROM jobs WHERE job_id = ANY(:j)"), {"j": jobs}
        ).all()
        found = read_definition(conn, hid)
    seeds = {s for r in rows for s in r.seedlist.splitlines()}
    assert seeds == {
        "https://www.example.fr/results",
        "https://www.example.fr/map",
        "https://live.example.org/",
    }
    assert {r.template_name for r in rows} == {"default_selective"}
    assert found is not None and found["domains"] == ["example.fr", "example.org"]
    assert found["nextdate"] == dt(2026, 11, 22, 10, 20)
    result = advance_schedule(hid, dt(2026, 11, 22, 11), hdb)
    assert result["next_date"] == dt(2026, 11, 22, 11, 20)
    assert hid in due_definitions("hourly", dt(2026, 11, 22, 12), hdb)


def test_a_deactivated_definition_is_left_out_until_it_is_reactivated(hdb):
    hid = save_definition(event_crawl(), "carol", engine=hdb, now=dt(2026, 11, 22, 10, 20))
    set_active(hid, False, "carol", "paused for the weekend", engine=hdb)
    assert hid not in due_definitions("hourly", dt(2026, 11, 22, 11), hdb)
    with hdb.connect() as conn:
        reason = read_definition(conn, hid)["inactive_reason"]  # type: ignore[index]
    assert reason == "deactivated by carol: paused for the weekend"
    with pytest.raises(OfficeError, match="already inactive"):
        set_active(hid, False, "carol", engine=hdb)

    set_active(hid, True, "dave", engine=hdb, now=dt(2026, 11, 22, 11, 30))
    assert hid in due_definitions("hourly", dt(2026, 11, 22, 12), hdb)
    with hdb.connect() as conn:
        found = read_definition(conn, hid)
        history = definition_history(conn, hid)
    assert found is not None and found["isactive"] and found["nextdate"] == dt(2026, 11, 22, 12, 20)
    assert [(h["action"], h["changed_by"], h["edition"]) for h in history] == [
        ("reactivate", "dave", 3),
        ("deactivate", "carol", 2),
        ("create", "carol", 1),
    ]
    assert history[1]["definition"]["isactive"] is False


def test_a_definition_off_by_a_scheduling_error_or_a_finished_schedule_comes_back_after_a_fix(
    hdb,
):
    form = event_crawl(repeats="2")
    hid = save_definition(form, "carol", engine=hdb, now=dt(2026, 11, 22, 10))
    with hdb.begin() as conn:
        deactivate(conn, hid, "scheduling failed: job generation: OperationalError: lost")
    # two events (10:00 and 11:00): at 12:00 nothing is left, reactivating is refused
    with pytest.raises(OfficeError, match="no harvest left after now"):
        set_active(hid, True, "carol", engine=hdb, now=dt(2026, 11, 22, 12))
    with hdb.connect() as conn:
        edition = read_definition(conn, hid)["edition"]  # type: ignore[index]
    save_definition(
        {**form, "repeats": "", "edition": str(edition)},
        "carol",
        hid,
        engine=hdb,
        now=dt(2026, 11, 22, 12),
    )
    set_active(hid, True, "carol", engine=hdb, now=dt(2026, 11, 22, 12))
    assert hid in due_definitions("hourly", dt(2026, 11, 22, 13), hdb)


def test_an_edit_changes_name_seeds_and_schedule_and_a_stale_form_is_refused(hdb):
    hid = save_definition(event_crawl(), "carol", engine=hdb, now=dt(2026, 11, 22, 10, 20))
    edited = event_crawl(
        name="Election week",
        seeds="https://www.example.fr/results",
        unit="day",
        at_hour="6",
        at_minute="30",
        edition="1",
    )
    assert save_definition(edited, "dave", hid, engine=hdb, now=dt(2026, 11, 22, 12)) == hid
    with hdb.connect() as conn:
        found = read_definition(conn, hid)
        configs = conn.execute(
            sa.text("SELECT count(*) FROM harvest_configs WHERE harvest_id = :h"), {"h": hid}
        ).scalar_one()
    assert found is not None
    assert (found["name"], found["seeds"], found["domains"], configs) == (
        "Election week",
        ["https://www.example.fr/results"],
        ["example.fr"],
        1,
    )
    assert found["schedule_text"] == "every 1 day(s) at 06:30, from 2026-11-22 12:00"
    assert found["nextdate"] == dt(2026, 11, 23, 6, 30)
    assert hid not in due_definitions("hourly", dt(2026, 11, 23, 6), hdb)
    assert hid in due_definitions("hourly", dt(2026, 11, 23, 7), hdb)
    with pytest.raises(OfficeError, match="changed meanwhile \\(edition 2, the form had 1\\)"):
        save_definition(edited, "erin", hid, engine=hdb)


def test_a_cron_schedule_is_harvested_at_its_times(hdb):
    form = event_crawl(schedule="cron", cron="0 6,18 * * *", start="2026-11-22")
    hid = save_definition(form, "ian", engine=hdb, now=dt(2026, 11, 22, 10))
    due = [h for h in range(24) if hid in due_definitions("hourly", dt(2026, 11, 22, h), hdb)]
    assert due == [6, 18]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"seeds": "https://ok.example.fr/\nftp://files.example.fr/"}, "seeds line 2: "),
        ({"seeds": ""}, "seeds: at least one seed URL"),
        ({"max_objects": "0"}, "max_objects: -1 \\(unlimited\\) or a positive number, not 0"),
        ({"unit": "fortnight"}, "unit: 'fortnight' is not one of hour, day, week, month"),
        ({"weekday": "friday"}, "ondayofweek: not a field of a schedule in hours"),
        ({"schedule": "cron", "cron": "*/10 * * * *"}, "10 minutes apart"),
        ({"schedule": "cron", "cron": "every day"}, "cron 'every day': not a cron expression"),
        ({"end": "2026-11-01"}, "ends \\(2026-11-01 00:00\\) before it starts"),
        ({"start": "next monday"}, "start: 'next monday' is not a date"),
        ({"name": ""}, "name: a definition needs a name"),
        ({"name": "a\x00b"}, "name: contains a NUL byte"),
        ({"colour": "red"}, "unknown field\\(s\\): colour"),
    ],
)
def test_a_bad_form_is_refused_naming_the_field(changes, message):
    with pytest.raises(OfficeError, match=message):
        parse_definition_form(event_crawl(**changes), dt(2026, 11, 22, 10))


def test_a_refused_form_writes_nothing(hdb):
    with pytest.raises(OfficeError, match="template: unknown template 'no_such'"):
        save_definition(event_crawl(template="no_such"), "carol", engine=hdb)
    with pytest.raises(OfficeError, match="every: 'x' is not an integer"):
        save_definition(event_crawl(every="x"), "carol", engine=hdb)
    with hdb.connect() as conn:
        for table in ("definition_history", "harvestdefinitions", "audit_log"):
            assert conn.execute(sa.text(f"SELECT count(*) FROM {table}")).scalar_one() == 0


def test_a_taken_name_and_a_selection_definition_are_refused(hdb):
    from harvest.definitions import ensure_selective_definition

    save_definition(event_crawl(), "carol", engine=hdb, now=dt(2026, 11, 22, 10))
    with pytest.raises(
        OfficeError, match=r"name: definition \d+ is already named 'Election night'"
    ):
        save_definition(event_crawl(), "carol", engine=hdb)
    with hdb.begin() as conn:
        sel = ensure_selective_definition(
            conn, "news-weekly", frequency="weekly", audience="selection"
        )
    with pytest.raises(OfficeError, match="made from selection records by the transfer"):
        save_definition(event_crawl(name="x"), "carol", sel, engine=hdb)
    set_active(sel, False, "carol", engine=hdb)  # any definition can be switched off and on
    set_active(sel, True, "carol", engine=hdb)
