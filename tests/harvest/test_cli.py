"""``harvestflow domain show`` and ``harvestflow jobs list`` through the real CLI entry point."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import sqlalchemy as sa

from app.cli.main import main
from app.demo.definition import create_demo_definition
from harvest import pipeline as p
from tests.support.summaries import write_summary

pytestmark = pytest.mark.services


def test_domain_show_and_jobs_list(hdb, tmp_path, capsys):
    hid = create_demo_definition(8099, engine=hdb)
    job = p.generate_jobs(hid, datetime(2026, 11, 22, 3, tzinfo=UTC), engine=hdb)[0]
    path = p.prepare_job(job, tmp_path, engine=hdb)
    write_summary(path, {"example-a.test": (40, 12345, 1), "example-b.test": (7, 700, 0)})
    p.record_job_results(job, engine=hdb)

    with hdb.begin() as c:  # example-b.test is an alias of example-a.test
        c.execute(
            sa.text(
                "UPDATE domains SET alias = (SELECT domain_id FROM domains"
                " WHERE name = 'example-a.test'), lastaliasupdate = now()"
                " WHERE name = 'example-b.test'"
            )
        )
    assert main(["domain", "show", "example-b.test"]) == 0
    assert "  alias of example-a.test (since " in capsys.readouterr().out
    assert main(["domain", "show", "example-a.test"]) == 0
    out = capsys.readouterr().out
    assert "domain example-a.test" in out
    assert "demo (default): template demo_loopback" in out
    assert "http://www.example-a.test:8099/" in out
    assert "demo-daily job" in out and "40 objects" in out and "OBJECT_LIMIT" in out
    assert "  aliases: example-b.test" in out

    assert main(["jobs", "list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:4] == ["job", "harvest", "run", "status"]
    fields = out[1].split()
    assert fields[:6] == [str(job), "demo-daily", "1", "DONE", "CIBLEE", "2"]
    assert fields[6] == "47"  # objects of the job's history rows

    assert main(["domain", "show", "unknown.test"]) == 1
    capsys.readouterr()

    with hdb.begin() as c:
        c.execute(
            sa.text(
                "UPDATE harvestdefinitions SET isactive = false,"
                " inactive_reason = 'scheduling failed: test'"
            )
        )
    assert main(["definitions", "list"]) == 0
    out = capsys.readouterr().out
    assert "demo-daily" in out and "INACTIVE: scheduling failed: test" in out


def test_selection_import_cli_reports_refused_rows(hdb, tmp_path, capsys):
    path = tmp_path / "r.csv"
    path.write_text(
        "collection,seed_url,budget,frequency,depth,theme\n"
        "News,http://a.test/,small,daily,page,politics\n"
        "News,http://b.test/,large,daily,domain,politics\n"
    )
    assert main(["selection", "import", "--no-url-check", "--user", "ann", str(path)]) == 1
    out = capsys.readouterr().out
    assert "2 rows, 1 new" in out
    assert "REFUSED r.csv line 3: large budget / daily / domain depth" in out


def test_jobs_list_shows_a_one_offs_whole_name(hdb, capsys):
    """A one-off's name ends in its run's date and time: cut to 24 characters, two one-offs of
    one day read the same."""
    from harvest.oneoff import create_seedlist_harvest, start_oneoff

    run = "manual__2026-11-28T18:04:05.123456+00:00"
    hid = create_seedlist_harvest(
        ["http://www.example-a.test:8099/"], "demo_loopback", run, engine=hdb
    )
    when = datetime(2026, 11, 28, 18, 4, 5, tzinfo=UTC)
    start_oneoff(hid, when, engine=hdb)
    (job,) = p.generate_jobs(hid, when, engine=hdb)
    assert main(["jobs", "list"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[1:]]
    name = "oneoff-manual-2026-11-28t18-04-05-123456-00-00"
    assert [str(job), name, "1"] in [r[:3] for r in rows], rows
