"""The benchmark runner's rules (bench/runner): what makes its figures trustworthy by construction.

Why: a review found headline figures that said more than their runs showed (the best round,
a peer always run second, CPU of killed processes missing, a run that failed its own check
quoted anyway, README figures typed by hand). Each rule the runner enforces is proved here with
small commands (a few seconds in all).
"""

from __future__ import annotations

import json
import statistics
import subprocess
from pathlib import Path
from typing import Any

import pytest

from bench.runner import cli, readme, rules
from bench.runner.core import REPO as RUNNER_REPO
from bench.runner.core import (
    RESULTS,
    against_sides,
    compile_bytecode,
    run_benchmark,
    uncommitted,
)
from bench.runner.spec import Benchmark, Side, Target
from tests.support.bench_round import one_round

REPO = Path(__file__).resolve().parents[2]


class Toy(Benchmark):
    """Two shell commands; the figures are what each printed."""

    name = "toy"
    title = "toy"
    output_check = "the printed text"
    unit = "lines"
    targets = (Target("at least as cheap", "cpu", 1.0),)

    def __init__(self, ours: list[str], peer: list[str], parallelism: tuple[int, int] = (1, 1)):
        self.commands = (ours, peer)
        self.parallelism = parallelism

    def prepare(self, work: Path, quick: bool) -> dict[str, Any]:
        return {"toy": True}

    def sides(self) -> tuple[Side, Side]:
        (o, p), (po, pp) = self.commands, self.parallelism
        return Side("ours", o, po, "toy"), Side("peer", p, pp, "toy")

    def figures(self, side: Side, out: Path) -> Any:
        return (out / "stdout").read_text()

    def units(self, figures: Any) -> int | None:
        return figures.count("\n")


def _sh(script: str) -> list[str]:
    return ["sh", "-c", script]


def _quiet(res: dict[str, Any]) -> dict[str, Any]:
    """``res`` as if the machine had been quiet (the tests share it with others' work, and a
    loaded run's targets are not judged)."""
    res["machine"]["load_before"] = [0.0, 0.0, 0.0]
    for rnd in res["per_round"]:
        rnd["load_before"] = [0.0, 0.0, 0.0]
    return res


def _run(tmp_path: Path, bench: Benchmark, rounds: int = 3) -> tuple[int, dict[str, Any]]:
    code, path = run_benchmark(bench, rounds, results_dir=tmp_path / "res", work_root=tmp_path)
    return code, json.loads(path.read_text())


def test_a_side_whose_output_differs_fails_the_run_and_no_ratio_is_written(tmp_path: Path) -> None:
    code, res = _run(tmp_path, Toy(_sh("echo a"), _sh("echo b")))
    assert code == 1
    assert res["output_check"]["passed"] is False
    assert "outputs differ" in res["output_check"]["failures"][0]
    assert not {"ratios", "headline", "medians", "targets"} & set(res)
    assert len(res["per_round"]) == 1  # stopped at the first round whose check failed


def test_equal_outputs_give_medians_and_ratios(tmp_path: Path) -> None:
    code, res = _run(tmp_path, Toy(_sh("echo a; echo b"), _sh("echo a; echo b")))
    assert code == 0 and res["output_check"]["passed"] is True
    assert res["medians"]["ours"]["cpu_s"] == statistics.median(
        r["ours"]["cpu_s"] for r in res["per_round"]
    )
    assert res["units"] == {"unit": "lines", "count": 2}
    assert res["headline"]["metric"] == "cpu" and res["ratios"]["wall"]["shown"] is True


def test_a_side_that_exits_non_zero_fails_the_run(tmp_path: Path) -> None:
    code, res = _run(tmp_path, Toy(_sh("echo a; exit 3"), _sh("echo a")))
    assert code == 1 and "ours exited 3" in " ".join(res["output_check"]["failures"])
    assert "ratios" not in res


def test_no_wall_clock_ratio_when_the_sides_run_a_different_number_of_processes(
    tmp_path: Path,
) -> None:
    code, res = _run(tmp_path, Toy(_sh("echo a"), _sh("echo a"), parallelism=(2, 1)))
    assert code == 0
    assert res["ratios"]["wall"] == {
        "shown": False,
        "reason": "ours runs 2 at once, peer 1: only the per-CPU-second ratio compares them",
    }
    assert res["headline"]["metric"] == "cpu" and "wall" not in res["headline"]["text"]


def test_the_first_side_alternates_between_rounds() -> None:
    orders = rules.round_orders(("ours", "peer"), 5)
    assert [o[0] for o in orders] == ["peer", "ours", "peer", "ours", "peer"]
    rules.check_order(orders, ("ours", "peer"))


def test_an_order_that_does_not_alternate_is_refused(tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    bench = Toy(_sh(f"touch {ran}; echo a"), _sh(f"touch {ran}; echo a"))
    bench.order = [["ours", "peer"], ["ours", "peer"], ["peer", "ours"]]  # ours first twice
    with pytest.raises(rules.RuleError, match="must alternate"):
        run_benchmark(bench, 3, results_dir=tmp_path / "res", work_root=tmp_path)
    assert not ran.exists() and not (tmp_path / "res").exists()
    with pytest.raises(rules.RuleError, match="each side once"):
        rules.check_order([["ours", "ours"], ["peer", "ours"]], ("ours", "peer"))


def test_a_regression_check_runs_the_same_command_with_the_old_commits_code(
    tmp_path: Path,
) -> None:
    ours = Side("ours", ["python", "-m", "app.cli.index", "{out}"], 2, "as run", {"X": "1"})
    new, old = against_sides(ours, tmp_path, "a" * 40)
    assert (new.name, old.name) == ("new", "old")
    assert new.command == old.command == ours.command  # only the library code differs
    assert new.parallelism == old.parallelism == 2
    assert (new.cwd, new.env) == (str(RUNNER_REPO), {"X": "1", "PYTHONPATH": str(RUNNER_REPO)})
    assert (old.cwd, old.env) == (str(tmp_path), {"X": "1", "PYTHONPATH": str(tmp_path)})


def test_fewer_than_three_rounds_are_refused(tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    bench = Toy(_sh(f"touch {ran}; echo a"), _sh("echo a"))
    with pytest.raises(rules.RuleError, match="at least 3 rounds"):
        run_benchmark(bench, 2, results_dir=tmp_path / "res", work_root=tmp_path)
    assert not ran.exists()
    assert cli.main(["index", "--rounds", "2", "--results", str(tmp_path / "res")]) == 2


def test_the_median_not_the_best_round_is_reported() -> None:
    def side(cpu: float) -> dict[str, float]:
        return {"cpu_s": cpu, "wall_s": cpu, "peak_rss_mb": 10.0}

    per_round = [
        {"ours": side(1.0), "peer": side(2.0)},  # ours' best round: ratio 2.0
        {"ours": side(3.0), "peer": side(2.0)},
        {"ours": side(2.0), "peer": side(2.0)},
    ]
    summary = rules.summarize(per_round, ("ours", "peer"))
    assert summary["medians"]["ours"]["cpu_s"] == 2.0
    assert summary["ratios"]["cpu"]["median"] == 1.0
    assert summary["ratios"]["cpu"]["rounds"] == [2.0, 2 / 3, 1.0]


README = """# Benchmarks

<!-- bench/run: summary -->
stale
<!-- /bench/run: summary -->

text between

<!-- bench/run: rounds toy -->
<!-- /bench/run: rounds toy -->
"""


def test_readme_tables_are_regenerated_from_the_results_files(tmp_path: Path) -> None:
    _code, res = _run(tmp_path, Toy(_sh("echo a"), _sh("echo a")))
    text = readme.render(README, readme.load_results(tmp_path / "res"))
    assert "stale" not in text and "text between" in text
    assert f"**{res['ratios']['cpu']['median']:.2f} ×**" in text
    first = res["per_round"][0]
    assert f"| 1 | peer | {first['load_before'][0]:.2f} | {first['ours']['wall_s']:.2f} |" in text
    assert readme.render(text, readme.load_results(tmp_path / "res")) == text  # stable
    res["ratios"]["cpu"]["median"] = 123.0
    (tmp_path / "res" / "toy.json").write_text(json.dumps(res))
    assert "**123.00 ×**" in readme.render(text, readme.load_results(tmp_path / "res"))


def test_bench_readme_tables_match_the_committed_results_files() -> None:
    path = REPO / "bench" / "README.md"
    text = path.read_text(encoding="utf-8")
    assert "<!-- bench/run: summary -->" in text
    assert readme.render(text, readme.load_results(RESULTS)) == text, (
        "bench/README.md's tables differ from bench/results/*.json: run `bench/run --readme`"
    )


def test_index_cdxj_indexer_per_warc_in_parallel_prints_our_lines(tmp_path: Path) -> None:
    bench = cli.load("index")
    figures, _ = one_round(bench, tmp_path)
    assert figures["ours"] == figures["peer"] and figures["ours"]["lines"] > 100
    assert len(bench.warcs) == 2  # type: ignore[attr-defined]  # xargs -P2 gets two files


def test_qa_awk_over_a_split_log_counts_qas_figures_and_the_truth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bench.qa import spec

    monkeypatch.setattr(spec, "qa_threads", lambda log: 2)  # two parts, summed by the peer
    bench = spec.QaBenchmark()
    figures, _ = one_round(bench, tmp_path)
    assert len(bench.parts) == 2
    assert figures["ours"] == figures["peer"]
    assert bench.problems(figures["peer"]) == []
    assert figures["peer"]["bad"] > 0  # the quick log has odd lines to reject


class Observed(Toy):
    """A toy whose sides capture different shares of a site: observed, never compared."""

    def observe(self, side: Side, out: Path) -> dict[str, float]:
        return {"captured %": 100.0 if side.name == "ours" else 60.0}


def test_observed_figures_that_differ_are_recorded_not_compared_and_tabled(
    tmp_path: Path,
) -> None:
    code, res = _run(tmp_path, Observed(_sh("echo a; echo b"), _sh("echo a; echo b")))
    assert code == 0 and res["output_check"]["passed"]
    assert [r["ours"]["observed"] for r in res["per_round"]] == [{"captured %": 100.0}] * 3
    assert res["observed"] == {"ours": {"captured %": 100.0}, "peer": {"captured %": 60.0}}
    table = readme.rates_table(readme.load_results(tmp_path / "res"), "to")
    ours_row = next(line for line in table.splitlines() if line.startswith("| toy | ours |"))
    cpu_per_line = res["medians"]["ours"]["cpu_s"] / 2
    assert f"| 2 lines | {2 / res['medians']['ours']['wall_s'] * 60:.1f} |" in ours_row
    # three decimals, or three significant digits below 0.1 CPU-s per unit (a crawled URL)
    shown = f"{cpu_per_line:.3f}" if cpu_per_line >= 0.1 else f"{cpu_per_line:.5f}"
    assert f"| {shown} | captured % 100 |" in ours_row
    assert "captured % 60" in table
    text = readme.render(
        "<!-- bench/run: rates toy -->\n<!-- /bench/run: rates toy -->\n", {"toy": res}
    )
    assert ours_row in text
    with pytest.raises(readme.ReadmeError, match="rates nothing"):
        readme.rates_table(readme.load_results(tmp_path / "res"), "nothing")


def test_a_spec_with_several_benchmarks_runs_each(tmp_path: Path) -> None:
    benches = cli.load_all("render")
    assert [b.name for b in benches] == ["render-1tab", "render-2tabs", "render-4tabs"]
    assert [b.tabs for b in benches] == [1, 2, 4]  # type: ignore[attr-defined]
    assert [b.name for b in cli.load_all("render-2tabs")] == ["render-2tabs"]
    with pytest.raises(SystemExit, match="unknown benchmark 'render-3tabs'"):
        cli.load_all("render-3tabs")


class Timed(Toy):
    """Our side observed with a time it writes (a page's answer time), under a limit."""

    targets = (Target("answer ≤ 300 ms", "observed:ms", 0.0, maximum=300.0),)

    def observe(self, side: Side, out: Path) -> dict[str, float]:
        return {"ms": float((out / "stdout").read_text().split()[0])} if side.name == "ours" else {}

    def figures(self, side: Side, out: Path) -> Any:
        return "same"


@pytest.mark.parametrize(("ms", "met"), [("120", True), ("450", False)])
def test_a_time_limit_is_judged_on_the_median_our_side_was_observed_with(
    tmp_path: Path, ms: str, met: bool
) -> None:
    code, res = _run(tmp_path, Timed(_sh(f"echo {ms}"), _sh("echo 1")))
    assert code == 0
    (target,) = res["targets"]
    assert (target["value"], target["maximum"], target["met"]) == (float(ms), 300.0, met)
    assert res["observed"] == {"ours": {"ms": float(ms)}}
    verdict = readme._targets(_quiet(res))
    assert ("**met**" if met else "**missed**") in verdict and f"({float(ms):.1f})" in verdict


class Captured(Toy):
    """A toy whose sides achieve different amounts for the same work (changes captured)."""

    targets = (Target("captures more than the peer", "observed_ratio:captured", 1.0),)

    def observe(self, side: Side, out: Path) -> dict[str, float]:
        return {"captured": float((out / "stdout").read_text().split()[0])}

    def figures(self, side: Side, out: Path) -> Any:
        return "same fetches"


@pytest.mark.parametrize(("ours", "met"), [("150", True), ("80", False)])
def test_a_target_on_what_both_sides_achieved_is_judged_on_the_ratio_of_their_medians(
    tmp_path: Path, ours: str, met: bool
) -> None:
    code, res = _run(tmp_path, Captured(_sh(f"echo {ours}"), _sh("echo 100")))
    assert code == 0
    (target,) = res["targets"]
    assert (target["value"], target["met"]) == (float(ours) / 100, met)
    verdict = readme._targets(_quiet(res))
    assert ("**met**" if met else "**missed**") in verdict
    assert f"({float(ours) / 100:.2f} ×)" in verdict


def test_the_scale_tables_are_written_from_the_scale_results_files(tmp_path: Path) -> None:
    """bench/scale's figures (no peer side) reach bench/README.md and docs/scaling.md only from
    bench/results/scale/*.json; a marker without its results file is an error."""
    scale = tmp_path / "scale"
    scale.mkdir()
    run = {"when": "2026-11-29T01:00:00", "commit": "abc", "load_1min": 3.0, "jobs": 10,
           "args": {"workers": "4", "fetches": "5"}, "tasks_failed": 0, "lease_round_trips": 100,
           "lease_p50_ms": 1.0, "redis_cpu_s": 0.5, "postgres_cpu_s": 2.0}  # fmt: skip
    for store, rate, p95 in (("broker", 2500.0, 4.0), ("postgres", 400.0, 60.0)):
        data = {**run, "leases": store, "lease_per_s_fetching": rate, "lease_p95_ms": p95}
        (scale / f"simulate-{store}.json").write_text(json.dumps(data))
    text = "a\n<!-- bench/run: scale leases -->\nold\n<!-- /bench/run: scale leases -->\nb\n"
    out = readme.render(text, {}, scale_dir=scale)
    rows = [line for line in out.splitlines() if line.startswith(("| broker", "| postgres"))]
    assert "**2,500**" in rows[0] and rows[0].endswith("| met |")
    assert "**400**" in rows[1] and rows[1].endswith("| **missed** |")
    assert readme.render(out, {}, scale_dir=scale) == out  # stable
    with pytest.raises(readme.ReadmeError, match="scale-"):
        readme.render(text.replace("leases", "day"), {}, scale_dir=scale)


def test_a_days_cpu_by_component_reaches_the_scale_day_table(tmp_path: Path) -> None:
    """Where a day's CPU went (bench/scale/daymeter's components) is in its whole-day row."""
    scale = tmp_path / "scale"
    scale.mkdir()
    day = {"when": "2026-11-29T07:00:00", "urls_asked": 600, "domains": 40, "passed": True,
           "stages": {"broad_crawl": {"runs": 1, "wall_s": 60.0, "task_instances": 24}},
           "reconciliation": {"urls_fetched": 1000},
           "platform": {"pg_harvest_mb": 1.0, "pg_airflow_mb": 2.0, "data_dir_mb": 3.0,
                        "cpu_s_total": 90.0, "peak_rss_mb": 300,
                        "cpu_s_by_component": {"airflow scheduler": 40.0, "crawlers": 9.5}}}  # fmt: skip
    (scale / "scale-600.json").write_text(json.dumps(day))
    text = "<!-- bench/run: scale day -->\n<!-- /bench/run: scale day -->\n"
    whole = [r for r in readme.render(text, {}, scale_dir=scale).splitlines() if "whole day" in r]
    assert "CPU-s by component: airflow scheduler 40.0, crawlers 9.5 |" in whole[0]


def test_the_cost_curve_judges_a_larger_day_only_against_a_smaller_one_of_the_same_machine(
    tmp_path: Path,
) -> None:
    """CPU per URL fetched, per component: a component whose cost per URL grows more than 25 %
    from one size to the next is worse than linear; days of different machines (another boot:
    the project's VMs differ by up to 2.4 x in CPU) are shown but not judged."""
    scale = tmp_path / "scale"
    scale.mkdir()

    def day(urls: int, fetched: int, boot: str, crawlers: float, scheduler: float) -> None:
        machine = {"boot_id": boot} if boot else {}
        (scale / f"scale-{urls}.json").write_text(json.dumps({
            "when": "2026-11-29T07:00:00", "urls_asked": urls, "domains": 9, "passed": True,
            "machine": machine, "stages": {}, "reconciliation": {"urls_fetched": fetched},
            "platform": {"cpu_s_total": crawlers + scheduler,
                         "cpu_s_by_component": {"crawlers": crawlers,
                                                "airflow scheduler": scheduler}},
        }))  # fmt: skip

    day(1000, 2000, "", 10.0, 40.0)  # an older day: its machine not recorded
    day(5000, 10000, "bbbb2222", 50.0, 40.0)  # another machine
    day(10000, 20000, "aaaa1111", 100.0, 40.0)
    day(100000, 200000, "aaaa1111", 1300.0, 100.0)  # crawlers 6.5 ms/URL against 5.0: +30 %
    text = "<!-- bench/run: scale cost -->\n<!-- /bench/run: scale cost -->\n"
    out = readme.render(text, {}, scale_dir=scale)
    rows = {r.split(" | ")[0].strip("| *"): r for r in out.splitlines() if r.startswith("| ")}
    crawlers = rows["crawlers"].split(" | ")
    assert crawlers[1:5] == ["5.00", "5.00", "5.00", "6.50"]
    assert crawlers[5] == "1.00 (not judged: machine not recorded)"
    assert crawlers[6] == "1.00 (not judged: other machine)"
    assert crawlers[7].startswith("1.30 (**worse than linear**)")
    assert rows["airflow scheduler"].split(" | ")[7].startswith("0.25 (cheaper per URL")
    assert rows["whole platform"].split(" | ")[7].startswith("1.00 (within ±25 %)")
    assert "boot aaaa1111" in out and "machine not recorded" in out
    assert readme.render(out, {}, scale_dir=scale) == out  # stable


def test_docs_scaling_tables_match_the_committed_scale_results() -> None:
    path = REPO / "docs" / "scaling.md"
    text = path.read_text(encoding="utf-8")
    assert "<!-- bench/run: scale leases -->" in text
    assert readme.render(text, readme.load_results(RESULTS)) == text, (
        "docs/scaling.md's tables differ from bench/results/scale/*.json: run `bench/run --readme`"
    )


def test_the_uncommitted_files_a_results_file_names_are_whole_paths(tmp_path: Path) -> None:

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    names = ("crawler.py", "bench.py", "bench/results/index.json", "bench/README.md")
    (tmp_path / "bench" / "results").mkdir(parents=True)
    for name in names:
        (tmp_path / name).write_text("one\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    for name in names:  # modified, not staged: " M name"
        (tmp_path / name).write_text("two\n")
    # the runner's own outputs (an earlier benchmark of the same call rewrote them) are no code
    assert sorted(uncommitted(tmp_path)) == ["bench.py", "crawler.py"]


class PerUnit(Toy):
    """Ours prints 4 lines after burning some CPU; the target is on its CPU per line."""

    targets = (Target("≤ 1000 ms CPU per line", "cpu_ms_per_unit", 0.0, maximum=1000.0),)


def test_a_cpu_per_unit_target_is_judged_on_our_median_cpu_over_the_units(tmp_path: Path) -> None:
    busy = "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; printf 'a\\nb\\nc\\nd\\n'"
    code, res = _run(tmp_path, PerUnit(_sh(busy), _sh(busy)))
    assert code == 0
    (target,) = res["targets"]
    cpu = res["medians"]["ours"]["cpu_s"]
    assert cpu > 0 and target["value"] == pytest.approx(cpu * 1000 / 4)
    assert target["met"] is (target["value"] <= 1000.0)
    verdict = readme._targets(_quiet(res))
    assert f"({target['value']:.2f} ms)" in verdict


def test_our_packages_are_compiled_to_bytecode_even_where_writing_it_is_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "mod.py").write_text("X = 1\n")
    (tmp_path / "notapkg").mkdir()
    (tmp_path / "notapkg" / "script.py").write_text("Y = 2\n")
    assert compile_bytecode(tmp_path) == ["pkg"]
    assert {p.name.split(".")[0] for p in (tmp_path / "pkg" / "__pycache__").iterdir()} == {
        "__init__",
        "mod",
    }
    assert not (tmp_path / "notapkg" / "__pycache__").exists()


def test_a_run_on_a_loaded_machine_is_not_judged_against_its_targets(tmp_path: Path) -> None:
    _code, res = _run(tmp_path, Toy(_sh("echo a"), _sh("echo a")))
    res["targets"] = [
        {"text": "ours ≥ 1 ×", "metric": "cpu", "minimum": 1.0, "maximum": None, "value": 1.5,
         "met": True}
    ]  # fmt: skip
    cores = res["machine"]["cores_usable"]
    assert "ours ≥ 1 ×: **met**" in readme.summary_table({"toy": _quiet(res)})
    res["per_round"][1]["load_before"] = [cores * 1.5 + 0.1, 1.0, 1.0]
    table = readme.summary_table({"toy": res})
    assert "**met**" not in table and "not judged, machine loaded" in table


def test_a_sandboxed_chromium_benchmark_counted_without_a_cgroup_is_not_judged(
    tmp_path: Path,
) -> None:
    """A render benchmark's CPU counted by rusage misses its sandboxed renderers' (they die with
    their PID namespace, reaped by no parent): its targets are not judged and its ratio says so;
    counted by a cgroup (bench/runner/measure.py) it is judged."""
    _code, res = _run(tmp_path, Toy(_sh("echo a"), _sh("echo a")))
    res["targets"] = [
        {"text": "ours ≥ 1 ×", "metric": "cpu", "minimum": 1.0, "maximum": None, "value": 1.5,
         "met": True}
    ]  # fmt: skip
    res = _quiet(res)
    assert all(
        side["cpu_counted_by"] == "cgroup"
        for entry in res["per_round"]
        for side in entry.values()
        if isinstance(side, dict) and "cpu_s" in side
    )  # the runner's own measurement, as root on Linux
    res["benchmark"] = "render-2tabs"
    assert "ours ≥ 1 ×: **met**" in readme.summary_table({"render-2tabs": res})
    res["per_round"][2]["ours"]["cpu_counted_by"] = "rusage"
    table = readme.summary_table({"render-2tabs": res})
    assert "**met**" not in table and "misses the sandboxed Chromium renderers'" in table
    assert "renderers' CPU: not whole" in table
    res["benchmark"] = "index"  # no sandboxed process: rusage and the subreaper count it all
    assert "ours ≥ 1 ×: **met**" in readme.summary_table({"index": res})
