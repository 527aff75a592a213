"""run_daily against a real harvest DB: backfill of three days, idempotent re-runs, qa tables,
the CLI, and the comparisons (years, selective vs broad, two runs of a definition)."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest
import sqlalchemy as sa

from harvestflow import settings as settings_mod
from qa.compare import compare_runs, selective_vs_broad, year_over_year
from qa.daily import run_daily, summary_lines

from .conftest import DAYS, seed_qa_db, tree_files

pytestmark = pytest.mark.services

# each day's summary headline and the problem it names
SUMMARIES = [
    ("QA 2026-11-20: 1 jobs, 9 URLs", "all crawl logs read without errors"),
    ("QA 2026-11-21: 1 jobs, 5 URLs", "2 of 7 lines unreadable, skipped; first at line 6"),
    ("QA 2026-11-22: 2 jobs, 9 URLs", "crawl log missing"),
]


@pytest.fixture
def qa_settings(services, db_engine, tmp_path: Path, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("HARVESTFLOW_DATA_DIR", str(tmp_path / "data"))
    settings_mod.reset()
    settings = settings_mod.get_settings()
    seed_qa_db(db_engine, tmp_path)
    yield settings
    settings_mod.reset()


def test_backfill_three_days_then_rerun_is_identical(qa_settings, db_engine) -> None:  # type: ignore[no-untyped-def]
    results = [run_daily(d, qa_settings, engine=db_engine) for d in DAYS]
    dirs = [qa_settings.path("qa", d.isoformat()) for d in DAYS]
    assert all((d / "index.html").is_file() for d in dirs)
    assert [r["jobs"] for r in results] == [1, 1, 2]
    assert results[0]["general"]["urls"] == 9
    assert results[1]["logs"] == {"corrupt": 1}
    assert results[2]["logs"] == {"missing": 1, "ok": 1}
    assert any("crawl log missing" in p for p in results[2]["problems"])
    # the curator's summary of each day, headline first (the DAG's task log ends with it: the
    # DAG run of the third day is in test_daily_dag.py)
    for result, (head, problem) in zip(results, SUMMARIES, strict=True):
        lines = summary_lines(result)
        assert lines[0].startswith(head) and problem in "\n".join(lines), lines
        assert any(ln.strip().startswith("MIME families: text") for ln in lines), lines
        assert any(ln.strip().startswith("top TLDs: .") for ln in lines), lines
    # DNS checks of that day and origins from the preload sources' kinds
    assert "gone.fr" not in (dirs[1] / "stops.txt").read_text()
    assert "failed        1" in (dirs[1] / "stops.txt").read_text()
    origins = (dirs[1] / "origins.txt").read_text()
    assert "registry        1" in origins and "curator         1" in origins

    with db_engine.connect() as conn:
        before = conn.execute(sa.text("SELECT day, count(*) FROM qa_stats GROUP BY day"
                                      " ORDER BY day")).all()  # fmt: skip
        stored = conn.execute(sa.text("SELECT summary FROM qa_reports WHERE day = :d"),
                              {"d": DAYS[0]}).scalar()  # fmt: skip
    assert [r[0] for r in before] == DAYS
    assert stored["general"]["urls"] == 9
    assert "text/html" in stored["texts"]["mime.txt"]
    assert set(stored["charts_svg"]) >= {"mime_families.svg", "tld.svg"}
    assert stored["charts_svg"]["tld.svg"] == (dirs[0] / "charts" / "tld.svg").read_text()

    first = [tree_files(d) for d in dirs]
    again = run_daily(DAYS[1], qa_settings, engine=db_engine)
    assert again == results[1]
    assert tree_files(dirs[1]) == first[1]
    with db_engine.connect() as conn:
        after = conn.execute(sa.text("SELECT day, count(*) FROM qa_stats GROUP BY day"
                                     " ORDER BY day")).all()  # fmt: skip
        reports = conn.execute(sa.text("SELECT count(*) FROM qa_reports")).scalar()
    assert after == before and reports == 3
    assert json.loads((dirs[2] / "summary.json").read_text())["jobs"] == 2


def test_cli_backfill_and_compare(qa_settings, db_engine, capsys) -> None:  # type: ignore[no-untyped-def]
    from app.cli.main import main

    assert main(["qa", "daily", "--date", "2026-11-20", "--until", "2026-11-22"]) == 0
    out = capsys.readouterr().out
    assert out.count("report: ") == 3
    assert main(["qa", "daily", "--date", "2025-11-20"]) == 0
    capsys.readouterr()
    table = year_over_year(db_engine, 2026).set_index(["family", "key"])
    assert table.loc[("general", "urls"), "a"] == 9  # one selective run in 2025
    assert table.loc[("general", "urls"), "b"] == 9 + 5 + 9
    assert table.loc[("general", "jobs"), "b"] == 4
    kinds = selective_vs_broad(db_engine, DAYS[0], DAYS[-1]).set_index(["family", "key"])
    assert kinds.loc[("general", "urls"), "a"] == 18 and kinds.loc[("general", "urls"), "b"] == 5
    assert kinds.loc[("mime_family", "video|urls"), "b"] == 1
    assert main(["qa", "compare", "runs", "--harvest", "1"]) == 0
    out = capsys.readouterr().out
    assert "grew: 1 (example-a.test)" in out and "hit_limits: 1 (example-b.test)" in out


def test_compare_runs_defaults_to_the_last_two_runs(qa_settings, db_engine) -> None:  # type: ignore[no-untyped-def]
    result = compare_runs(db_engine, 1)
    assert (result.run_a, result.run_b) == (1, 2)
    assert result.counts() == {"grew": 1, "shrank": 0, "newly_failed": 0, "hit_limits": 1,
                               "new": 0, "gone": 0}  # fmt: skip
    with pytest.raises(ValueError, match="no run before"):
        compare_runs(db_engine, 2, run_b=1)


def test_each_report_carries_its_comparisons(qa_settings, db_engine) -> None:  # type: ignore[no-untyped-def]
    run_daily(date(2025, 11, 20), qa_settings, engine=db_engine)  # last year's selective run
    for day in DAYS:
        run_daily(day, qa_settings, engine=db_engine)
    first = qa_settings.path("qa", DAYS[0].isoformat())
    text = (first / "comparisons.txt").read_text()
    # 2026-11-20 against 2025-11-20: the same golden log (job 1) on both days
    assert "This day (b) vs the same day a year before, 2025-11-20 (a)" in text
    assert [ln.split() for ln in text.splitlines() if ln.startswith("general       urls ")] == [
        ["general", "urls", "9", "9", "0", "+0.00%"]
    ]
    assert "run 1: harvest 1: no run before run 1 to compare with" in text
    last = qa_settings.path("qa", DAYS[2].isoformat())
    text = (last / "comparisons.txt").read_text()
    # day 3: selective run 2 (job 4, golden job 1: 9 URLs) vs the broad job whose log is missing
    assert "Selective (a) vs broad (b) jobs that ended this day" in text
    urls_row = next(ln.split() for ln in text.splitlines() if ln.startswith("general       urls"))
    assert urls_row[:4] == ["general", "urls", "9", "0"]
    assert "(no figures stored for 2025-11-22)" in text
    # the selective definition: run 2 vs run 1 from historyinfo (12 vs 6 objects; object limit)
    assert "demo-daily (harvest 1), run 2 vs run 1:" in text
    assert "grew: 1 (example-a.test)" in text and "hit_limits: 1 (example-b.test)" in text
    assert "broad-2026 (harvest 2), run 2: run 2 has no harvest history yet" in text
    lines = summary_lines(run_daily(DAYS[2], qa_settings, engine=db_engine))
    assert "  demo-daily run 2 vs run 1: grew 1, shrank 0, newly failed 0, hit limits 1" in lines
    runs = (last / "runs.csv").read_text().splitlines()
    assert runs[0].startswith("harvest_id,run_a,run_b,domain,groups,objects_a,objects_b")
    assert sorted(runs[1:]) == [
        "1,1,2,example-a.test,grew,6,12,100,600,1200,complete,complete",
        "1,1,2,example-b.test,hit_limits,3,3,0,300,300,complete,object limit",
    ]
    assert "selective_vs_broad,general,urls,9,0,-9," in (last / "comparisons.csv").read_text()
    with db_engine.connect() as conn:
        stored = conn.execute(
            sa.text("SELECT summary FROM qa_reports WHERE day = :d"), {"d": DAYS[2]}
        ).scalar()
    assert "grew: 1 (example-a.test)" in stored["texts"]["comparisons.txt"]
    before = tree_files(last)
    run_daily(DAYS[2], qa_settings, engine=db_engine)
    assert tree_files(last) == before


def test_overlapping_runs_of_one_day_are_serialised(qa_settings, db_engine, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # e.g. a manual run with the day param while a backfill computes the same day: the second
    # run waits for the first one's report swap and row replacement; other days do not wait
    import threading

    from qa import report, store

    real_lock, real_write = store.day_lock, report.write_report
    at_lock, written = threading.Event(), []

    def lock(engine, day):  # type: ignore[no-untyped-def]
        if day == DAYS[2]:
            at_lock.set()
        return real_lock(engine, day)

    def write(comp, folder):  # type: ignore[no-untyped-def]
        written.append(comp.day)
        return real_write(comp, folder)

    monkeypatch.setattr(store, "day_lock", lock)
    monkeypatch.setattr(report, "write_report", write)
    worker = threading.Thread(
        target=run_daily, args=(DAYS[2], qa_settings), kwargs={"engine": db_engine}
    )
    with real_lock(db_engine, DAYS[2]):  # stands for a first run in the middle of its writes
        worker.start()
        assert at_lock.wait(120)
        run_daily(DAYS[0], qa_settings, engine=db_engine)  # another day: not blocked
        worker.join(3)
        assert written == [DAYS[0]], "a run of the same day did not wait for the lock"
    worker.join(120)
    assert written == [DAYS[0], DAYS[2]]
    assert (qa_settings.path("qa", DAYS[2].isoformat()) / "index.html").is_file()
