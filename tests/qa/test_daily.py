"""The day's figures from golden crawl logs, checked against hand-computed values, and the
report files (text per family, CSV, HTML + charts) being byte-identical on a re-run."""

from __future__ import annotations

import csv
from datetime import date
from pathlib import Path
from xml.etree import ElementTree

import pandas as pd
import pytest

from qa.daily import compute_day, stats_rows, summary_lines, summary_of
from qa.inputs import JobInfo
from qa.report import write_report
from tests.support.imports import modules_loaded_by

from .conftest import DATA

DAY = date(2026, 11, 22)


@pytest.fixture
def comp(golden_jobs: list[JobInfo], golden_history: pd.DataFrame):  # type: ignore[no-untyped-def]
    return compute_day(DAY, golden_jobs, DATA, history=golden_history,
                       origins={"site.fr": "registry"})  # fmt: skip


def _table(comp, name: str, key: str) -> dict:  # type: ignore[no-untyped-def]
    t = comp.scopes["day"].tables[name]
    return {row[key]: row for row in t.to_dict("records")}


def test_general_figures_match_the_hand_count(comp) -> None:  # type: ignore[no-untyped-def]
    g = dict(comp.scopes["day"].tables["general"].itertuples(index=False, name=None))
    # job 1: 14 lines, 9 captured (8 x 200 + 1 x 404), 29,100 bytes; job 2: 5 valid lines,
    # all captured, 56,100 bytes; job 3: no log
    assert g["jobs"] == 3
    assert g["lines"] == 19
    assert g["urls"] == 14
    assert g["bytes"] == 85_200
    assert (g["duplicate_urls"], g["duplicate_bytes"]) == (2, 4_500)
    assert (g["new_urls"], g["new_bytes"]) == (12, 80_700)
    assert g["domains"] == 4  # example-a.test, example-b.test, site.fr, example.com
    assert g["hosts"] == 6
    assert g["seeds"] == 5
    assert g["failed_lines"] == 4  # -5003, -6, -4000, -9998
    assert g["duration_s"] == 5_400  # 30 min + 60 min; job 3 has no dates
    assert g["urls_per_s"] == round(14 / 5400, 3)


def test_mime_families_status_and_tld_shares(comp) -> None:  # type: ignore[no-untyped-def]
    mf = _table(comp, "mime_family", "family")
    assert (mf["text"]["urls"], mf["text"]["bytes"]) == (8, 9_600)
    assert (mf["image"]["urls"], mf["image"]["bytes"]) == (3, 8_600)
    assert (mf["application"]["urls"], mf["audio"]["urls"], mf["video"]["urls"]) == (1, 1, 1)
    assert mf["text"]["share"] == round(8 / 14, 6)
    assert mf["video"]["byte_share"] == round(50_000 / 85_200, 6)
    st = _table(comp, "status", "status")
    assert {k: v["lines"] for k, v in st.items()} == {
        200: 12, 404: 1, 301: 1, 1: 1, -5003: 1, -6: 1, -4000: 1, -9998: 1}  # fmt: skip
    assert st[-5003]["label"] == "blocked by quota (budget)"
    tld = _table(comp, "tld", "tld")
    assert {k: (v["urls"], v["domains"]) for k, v in tld.items()} == {
        "test": (9, 2), "fr": (3, 1), "com": (2, 1)}  # fmt: skip
    assert tld["test"]["share"] == round(9 / 14, 6)


def test_domains_sizes_origins_and_stop_reasons(comp) -> None:  # type: ignore[no-untyped-def]
    dom = _table(comp, "domains", "domain")
    assert (dom["example-a.test"]["urls"], dom["example-a.test"]["bytes"]) == (6, 10_100)
    assert dom["example-b.test"]["hosts"] == 2  # example-b.test and WWW.Example-B.test:8099
    assert dom["example-b.test"]["budget"] == 1
    assert dom["invalid-c.test"]["dns_fail"] == 1 and dom["invalid-c.test"]["urls"] == 0
    assert dom["example-a.test"]["trap"] == 1 and dom["example-a.test"]["robots"] == 1
    top_bytes = comp.scopes["day"].tables["top_domains_bytes"]["domain"].tolist()
    assert top_bytes == ["site.fr", "example-b.test", "example-a.test", "example.com"]
    sizes = _table(comp, "domain_sizes", "bucket")
    assert sizes["<10"]["domains"] == 4 and sizes[">10000"]["domains"] == 0
    assert sizes["<10"]["complete"] == 2  # example-a.test and site.fr stopped with reason 0
    og = _table(comp, "origins", "origin")
    # job 1 is selective: its domains are curators' choices; site.fr came from a registry
    assert (og["curator"]["domains"], og["curator"]["urls"], og["curator"]["seeds"]) == (2, 9, 2)
    assert (og["registry"]["domains"], og["registry"]["urls"]) == (1, 3)
    assert (og["unknown"]["domains"], og["unknown"]["urls"]) == (1, 2)
    assert og["curator"]["url_share"] == round(9 / 14, 6)
    stops = _table(comp, "stop_reasons", "stopreason")
    assert {k: v["domains"] for k, v in stops.items() if v["domains"]} == {0: 2, 1: 1, 4: 1}
    hits = dict(comp.scopes["day"].tables["hits"].itertuples(index=False, name=None))
    assert hits["budget_hit_domains"] == hits["dns_failure_domains"] == hits["trap_domains"] == 1


def test_per_job_and_per_harvest_scopes(comp) -> None:  # type: ignore[no-untyped-def]
    assert set(comp.scopes) == {"day", "harvest:1", "harvest:2", "kind:partial", "kind:full",
                                "job:1", "job:2", "job:3"}  # fmt: skip
    job1 = dict(comp.scopes["job:1"].tables["general"].itertuples(index=False, name=None))
    assert (job1["urls"], job1["bytes"]) == (9, 29_100)
    h2 = dict(comp.scopes["harvest:2"].tables["general"].itertuples(index=False, name=None))
    assert (h2["jobs"], h2["urls"], h2["bytes"]) == (2, 5, 56_100)
    jobs = comp.jobs_table.set_index("job_id")
    assert jobs.loc[2, "log"] == "corrupt" and jobs.loc[2, "bad_lines"] == 2
    assert jobs.loc[3, "log"] == "missing"
    rows = {(s, f, k): v for s, f, k, v in stats_rows(comp)}
    assert rows[("kind:full", "general", "urls")] == 5
    assert rows[("day", "logs", "job:3|missing")] == 1


def test_missing_and_corrupt_logs_are_named_and_the_rest_computed(comp) -> None:  # type: ignore[no-untyped-def]
    assert len(comp.problems) == 2
    assert "job 2" in comp.problems[0] and "2 of 7 lines" in comp.problems[0]
    assert "line 6" in comp.problems[0]
    assert "job 3" in comp.problems[1] and "missing" in comp.problems[1]
    lines = summary_lines(summary_of(comp, Path("/x/2026-11-22")))
    text = "\n".join(lines)
    assert "3 jobs, 14 URLs" in text and "2 crawl log problem(s)" in text
    assert "crawl log missing" in text


def test_report_files_are_complete_and_identical_on_rerun(comp, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "qa" / "2026-11-22"
    written = write_report(comp, out)
    names = {p.relative_to(out).as_posix() for p in written}
    for expected in ("general.txt", "mime.txt", "status.txt", "tld.txt", "domains.txt",
                     "domain_sizes.txt", "origins.txt", "stops.txt", "jobs.txt",
                     "problems.txt", "stats.csv", "domains.csv", "jobs.csv", "index.html",
                     "summary.json", "charts/mime_families.svg", "charts/tld.svg"):  # fmt: skip
        assert expected in names
    html = (out / "index.html").read_text()
    assert 'src="charts/mime_families.svg"' in html and "crawl log missing" in html
    assert "job 2: " in (out / "problems.txt").read_text()
    first = {n: (out / n).read_bytes() for n in names}
    # recompute from scratch (same inputs) and rewrite: same bytes, nothing left over
    jobs = [o.job for o in comp.outcomes]
    hist = pd.DataFrame(
        [(1, "example-a.test", 0, 6, 10100), (1, "example-b.test", 1, 3, 19000),
         (2, "site.fr", 0, 3, 54600), (2, "example.com", 4, 2, 1500)],
        columns=["job_id", "domain", "stopreason", "objects", "bytes"],
    )  # fmt: skip
    again = compute_day(DAY, jobs, DATA, history=hist, origins={"site.fr": "registry"})
    write_report(again, out)
    assert {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()} == names
    assert {n: (out / n).read_bytes() for n in names} == first
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]


def _bars(svg: Path) -> list[tuple[str, float, float]]:
    """(label, figure, bar width) of each bar of an SVG chart, read by an XML parser."""
    root = ElementTree.parse(svg).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    return [
        (r.get("data-label", ""), float(r.get("data-value", "nan")), float(r.get("width", "nan")))
        for r in root.iter("{http://www.w3.org/2000/svg}rect")
        if r.get("class") == "bar"
    ]


def test_report_charts_are_svg_files_whose_bars_are_the_days_figures(comp, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "report"
    write_report(comp, out)
    t = comp.scopes["day"].tables
    charts = sorted(p.name for p in (out / "charts").iterdir())
    assert charts == ["domain_sizes.svg", "mime_families.svg", "origins.svg", "status.svg",
                      "tld.svg", "top_domains.svg"]  # fmt: skip
    status = _bars(out / "charts" / "status.svg")
    want = [(f"{s} {lab}", float(n)) for s, lab, n in t["status"][["status", "label", "lines"]]
            .head(15).itertuples(index=False)]  # fmt: skip
    assert [(label, value) for label, value, _ in status] == want
    mime = _bars(out / "charts" / "mime_families.svg")
    assert [(lab, v) for lab, v, _ in mime] == [
        (f, 100 * s) for f, s in zip(t["mime_family"]["family"],
                                                    t["mime_family"]["share"], strict=True)
    ]  # fmt: skip
    top = _bars(out / "charts" / "top_domains.svg")
    assert [(lab, v) for lab, v, _ in top] == [
        (d, float(n)) for d, n in zip(t["top_domains_urls"]["domain"].head(15),
                                      t["top_domains_urls"]["urls"].head(15), strict=True)
    ]  # fmt: skip
    for bars in (status, mime, top):  # lengths in proportion to the figures
        widest = max(bars, key=lambda b: b[1])
        for _, value, width in bars:
            assert width == pytest.approx(widest[2] * value / widest[1], abs=0.02)
    assert status[0][2] > 0 and (out / "charts" / "status.svg").stat().st_size < 20_000


def test_the_daily_computation_and_report_import_no_db_layer_nor_plotting_library() -> None:
    # they run on files (the benchmark, golden-file tests): SQLAlchemy (~0.3 CPU-s) and
    # matplotlib (~0.6 CPU-s with its drawing) are for the DB and the curator pages only
    code = "import qa.daily, qa.report, qa.inputs"
    assert modules_loaded_by(code, ("sqlalchemy", "matplotlib")) == []


def test_a_log_the_parser_chokes_on_is_named_and_the_rest_computed(  # type: ignore[no-untyped-def]
    golden_jobs, golden_history, monkeypatch
) -> None:
    import qa.daily

    real = qa.daily.aggregate_crawl_log

    def choke(path, **kwargs):  # type: ignore[no-untyped-def]
        if "/jobs/1/" in str(path):
            raise ValueError("unexpected parser failure\nsecond line of the message")
        return real(path, **kwargs)

    monkeypatch.setattr(qa.daily, "aggregate_crawl_log", choke)
    comp = compute_day(DAY, golden_jobs, DATA, history=golden_history)
    jobs = comp.jobs_table.set_index("job_id")
    assert jobs.loc[1, "log"] == "unreadable"
    assert comp.problems[0].startswith("job 1 (demo-daily): ")
    assert "ValueError: unexpected parser failure)" in comp.problems[0]
    g = dict(comp.scopes["day"].tables["general"].itertuples(index=False, name=None))
    assert (g["urls"], g["bytes"]) == (5, 56_100)  # job 2's valid lines, hand-counted above


def test_every_scope_has_sizes_origins_stops_and_hits(comp) -> None:  # type: ignore[no-untyped-def]
    # hand-counted: job 1 (selective) crawled example-a.test (6 URLs, stop 0) and
    # example-b.test (3 URLs, stop 1), one budget, one DNS and one trap hit; the broad jobs
    # (2; 3 has no log) crawled site.fr (3 URLs, stop 0, registry) and example.com (2, stop 4)
    rows = {(s, f, k): v for s, f, k, v in stats_rows(comp)}
    assert rows[("job:1", "domain_sizes", "<10|domains")] == 2
    assert rows[("job:1", "domain_sizes", "<10|complete")] == 1
    assert rows[("job:1", "stop_reasons", "1|object limit")] == 1
    assert rows[("job:1", "origins", "curator|urls")] == 9
    assert rows[("job:1", "hits", "budget_hit_domains")] == 1
    assert rows[("job:1", "hits", "dns_failure_domains")] == 1
    assert rows[("kind:full", "domain_sizes", "<10|domains")] == 2
    assert rows[("kind:full", "stop_reasons", "4|unfinished")] == 1
    assert rows[("kind:full", "origins", "registry|urls")] == 3
    assert rows[("kind:full", "origins", "unknown|urls")] == 2
    assert rows[("kind:partial", "origins", "curator|domains")] == 2
    # the per-domain lists stay in the day and harvest scopes only
    assert not [k for k in rows if k[0].startswith(("job:", "kind:")) and k[1].startswith("top_")]


def test_stop_reasons_fall_back_to_the_crawlers_summary(tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # a job without historyinfo rows yet: its stop reasons come from its summary.json
    import json
    import shutil

    job_dir = tmp_path / "job2"
    shutil.copytree(DATA / "jobs" / "2", job_dir)
    (job_dir / "summary.json").write_text(json.dumps({"domains": {
        "site.fr": {"stop_reason": 1, "objects": 3, "bytes": 54600},
        "example.com": {"stop_reason": 0, "objects": 2, "bytes": 1500},
        "broken.fr": {"stop_reason": "x"},
    }}))  # fmt: skip
    job = JobInfo(2, 2, "broad-2026", "full", 1, 3, None, None, str(job_dir))
    comp = compute_day(DAY, [job], DATA)
    stops = _table(comp, "stop_reasons", "stopreason")
    assert {k: v["domains"] for k, v in stops.items() if v["domains"]} == {0: 1, 1: 1}
    assert _table(comp, "domain_sizes", "bucket")["<10"]["complete"] == 1  # example.com
    # historyinfo rows, when there are some, win over the summary
    hist = pd.DataFrame([(2, "site.fr", 0, 3, 54600)],
                        columns=["job_id", "domain", "stopreason", "objects", "bytes"])  # fmt: skip
    comp = compute_day(DAY, [job], DATA, history=hist)
    stops = _table(comp, "stop_reasons", "stopreason")
    assert {k: v["domains"] for k, v in stops.items() if v["domains"]} == {0: 1}


def test_top_domains_by_urls_ties_broken_by_name(comp) -> None:  # type: ignore[no-untyped-def]
    top = comp.scopes["day"].tables["top_domains_urls"]
    # 6, 3, 3, 2 captured URLs; example-b.test and site.fr tie at 3
    assert list(zip(top["domain"], top["urls"], strict=True)) == [
        ("example-a.test", 6), ("example-b.test", 3), ("site.fr", 3), ("example.com", 2)]  # fmt: skip


def test_report_compares_selective_with_broad_jobs_of_the_day(comp, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "2026-11-22"
    write_report(comp, out)
    text = (out / "comparisons.txt").read_text()
    rows = {tuple(ln.split()[:2]): ln.split()[2:] for ln in text.splitlines() if "  " in ln}
    # hand-counted: selective job 1 has 9 URLs / 29,100 bytes; broad jobs 2+3: 5 / 56,100
    assert rows[("general", "urls")] == ["9", "5", "-4", "-44.44%"]
    assert rows[("general", "bytes")] == ["29,100", "56,100", "27,000", "+92.78%"]
    assert rows[("origins", "curator|urls")][:2] == ["9", "0"]
    assert rows[("stop_reasons", "1|object")][:3] == ["limit", "1", "0"]  # example-b.test
    assert "(not computed: no harvest DB)" in text
    csv_text = (out / "comparisons.csv").read_text()
    assert "selective_vs_broad,general,urls,9,5,-4,-44.44\n" in csv_text
    assert "comparisons.txt" in (out / "index.html").read_text()


def test_domains_csv_says_which_domains_were_collected_completely(comp, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "2026-11-22"
    write_report(comp, out)
    rows = {r["domain"]: r for r in csv.DictReader((out / "domains.csv").open())}
    # stop reasons from the golden history; invalid-c.test captured nothing (DNS failure)
    assert {d: (r["urls"], r["size_bucket"], r["stop"]) for d, r in rows.items()} == {
        "example-a.test": ("6", "<10", "complete"), "example-b.test": ("3", "<10", "object limit"),
        "site.fr": ("3", "<10", "complete"), "example.com": ("2", "<10", "unfinished"),
        "invalid-c.test": ("0", "", ""),
    }  # fmt: skip


def test_storage_saved_by_dedup_is_shown_per_job_and_per_definition(  # type: ignore[no-untyped-def]
    comp, tmp_path: Path
) -> None:
    # the golden logs' duplicate:digest lines: 3,000 bytes in job 1, 1,500 in job 2 (a snapshot
    # step is a definition of its own, so its figure is the per-definition row)
    jobs = comp.jobs_table.set_index("job_id")
    assert [int(jobs.loc[j, "duplicate_bytes"]) for j in (1, 2, 3)] == [3_000, 1_500, 0]
    out = tmp_path / "qa"
    write_report(comp, out)
    text = (out / "jobs.txt").read_text()
    header = next(ln for ln in text.splitlines() if ln.lstrip().startswith("job_id"))
    assert "duplicate_bytes" in header.split()
    per_def = text.split("Per harvest definition", 1)[1]
    assert "storage saved by deduplication" in per_def
    rows = {ln.split()[0]: ln.split() for ln in per_def.splitlines()[2:] if ln.strip()}
    assert (rows["1"][5], rows["2"][5]) == ("3,000", "1,500")  # duplicate_bytes
    lines = summary_lines(summary_of(comp, out))
    assert "  storage saved by deduplication: 4.5 KB (4,500 bytes written as revisits)" in lines
