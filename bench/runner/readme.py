"""The figures tables of bench/README.md, generated from ``bench/results/*.json``.

Why generated: a figure typed by hand can say more than the run showed. Every table between a
pair of markers is rewritten from the results files on each ``bench/run`` (and by
``bench/run --readme``); tests/bench/test_runner.py regenerates them and diffs, so a table that
does not match its results file fails the tests.

Markers (HTML comments, invisible when rendered)::

    <!-- bench/run: summary -->         ... <!-- /bench/run: summary -->
    <!-- bench/run: sides -->           ... <!-- /bench/run: sides -->
    <!-- bench/run: rounds NAME -->     ... <!-- /bench/run: rounds NAME -->
    <!-- bench/run: rates PREFIX -->     ... <!-- /bench/run: rates PREFIX -->
    <!-- bench/run: scale leases -->     ... <!-- /bench/run: scale leases -->
    <!-- bench/run: scale day -->        ... <!-- /bench/run: scale day -->
    <!-- bench/run: scale cost -->       ... <!-- /bench/run: scale cost -->

A ``rates`` table holds every results file whose name starts with PREFIX (a benchmark run at
several settings, e.g. render at 1, 2 and 4 tabs): units per minute and CPU-seconds per unit of
each side, and what each side was observed with (``Benchmark.observe``).

The ``scale`` tables come from ``bench/results/scale/*.json``, written by bench/scale's
programs (not runner benchmarks: no peer side): ``leases`` from simulate.py's
``simulate-<store>.json``, ``day`` and ``cost`` from day.py's ``scale-<N>.json``
(bench/runner/scale_tables.py).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from bench.runner import rules

BEGIN = re.compile(r"<!-- bench/run: (summary|sides|(?:rounds|rates|scale) [a-z0-9_-]+) -->\n")
SCALE_RESULTS = Path(__file__).resolve().parents[1] / "results" / "scale"


class ReadmeError(ValueError):
    """A marker without its end, or a table naming a benchmark that has no results file."""


def load_results(results_dir: Path) -> dict[str, dict[str, Any]]:
    out = {}
    for path in sorted(results_dir.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        out[data["benchmark"]] = data
    return out


def table_cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def _load(values: list[float]) -> str:
    return f"{values[0]:.2f}"


def _x(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f} ×"


def _side_cell(res: dict[str, Any], role: str) -> tuple[str, dict[str, Any]]:
    for name, side in res["sides"].items():
        if side["role"] == role:
            return name, side
    raise ReadmeError(f"{res['benchmark']}: no {role} side")


def _targets(res: dict[str, Any]) -> str:
    if not res["output_check"]["passed"]:
        return "not evaluated (output check failed)"
    cells = []
    loaded = rules.load_too_high(res)
    incomplete = rules.cpu_count_incomplete(res)
    for t in res.get("targets", []):
        if incomplete and t["value"] is not None:
            verdict = f"not judged, {incomplete}: {t['value']:.4g}"
        elif loaded and t["value"] is not None:
            verdict = f"not judged, machine loaded ({loaded}): {t['value']:.4g}"
        elif t["met"] is None:
            verdict = "not evaluated (no wall ratio at unequal parallelism)"
        elif t["metric"] == "cpu_ms_per_unit":
            verdict = f"**{'met' if t['met'] else 'missed'}** ({t['value']:.2f} ms)"
        elif t["metric"].startswith("observed:"):
            verdict = f"**{'met' if t['met'] else 'missed'}** ({t['value']:.1f})"
        else:
            verdict = f"**{'met' if t['met'] else 'missed'}** ({_x(t['value'])})"
        cells.append(f"{t['text']}: {verdict}")
    return "; ".join(cells) or "—"


def summary_table(results: dict[str, dict[str, Any]]) -> str:
    head = (
        "| benchmark | run (UTC), commit, rounds | load 1 min before → after | ours, as run |"
        " peer, as run | medians ours / peer: CPU-s, wall s, peak RSS MB | output check |"
        " **× peer per CPU-second** | × peer wall (same parallelism only) | targets |\n"
        "|---|---|---|---|---|---|---|---|---|---|\n"
    )
    rows = []
    for name, res in sorted(results.items()):
        on, ours = _side_cell(res, "ours")
        pn, peer = _side_cell(res, "peer")
        run = f"{res['date'][:16].replace('T', ' ')}, {res['commit'][:9]}"
        if res["tree_dirty"]:
            n = len(res.get("uncommitted_files", [])) or "some"
            run += f" ({n} files of the tree uncommitted, listed in the results file)"
        run += f", {res['rounds']}" + (" (quick)" if res["quick"] else "")
        load = f"{_load(res['machine']['load_before'])} → {_load(res['machine']['load_after'])}"
        check = res["output_check"]
        if check["passed"]:
            med = res["medians"]
            meds = " / ".join(
                f"{med[n]['cpu_s']:.2f}, {med[n]['wall_s']:.2f}, {med[n]['peak_rss_mb']:.0f}"
                for n in (on, pn)
            )
            cpu = f"**{_x(res['ratios']['cpu']['median'])}**"
            if rules.cpu_count_incomplete(res):
                cpu += " (without the sandboxed Chromium renderers' CPU: not whole)"
            wall_r = res["ratios"]["wall"]
            wall = _x(wall_r["median"]) if wall_r["shown"] else "not shown: " + wall_r["reason"]
            check_cell = f"passed: {res['output_check']['compares']}"
        else:
            meds = "—"
            cpu = wall = "no ratio"
            check_cell = "**FAILED**: " + table_cell("; ".join(check["failures"])[:300])
        label = name
        if res.get("kind") == "regression":
            label += (
                f" (regression check: {on} = the tree of the run, {pn} = commit"
                f" {res['against'][:9]}, in the peer columns)"
            )
        rows.append(
            f"| {label} | {run} | {load} | `{table_cell(ours['shown'])}` ({ours['parallelism']} at"
            f" once) | `{table_cell(peer['shown'])}` ({peer['parallelism']} at once) | {meds} |"
            f" {check_cell} |"
            f" {cpu} | {wall} | {_targets(res)} |"
        )
    return head + "\n".join(rows) + "\n"


def sides_table(results: dict[str, dict[str, Any]]) -> str:
    """Each side's command as run and its tuning, as the results files recorded them."""
    head = "| benchmark | side | as run | at once | tuning |\n|---|---|---|---|---|\n"
    rows = []
    for name, res in sorted(results.items()):
        for side_name, side in res["sides"].items():
            rows.append(
                f"| {name} | {side_name} | `{table_cell(side['shown'])}` | {side['parallelism']} |"
                f" {table_cell(side['tuning'])} |"
            )
    return head + "\n".join(rows) + "\n"


def rounds_table(res: dict[str, Any]) -> str:
    on, _ = _side_cell(res, "ours")
    pn, _ = _side_cell(res, "peer")
    head = (
        f"| round | first | load 1 min | {on} wall s | {on} CPU-s | {on} peak RSS MB |"
        f" {pn} wall s | {pn} CPU-s | {pn} peak RSS MB | × per CPU-s | × wall |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    rows = []
    cpu_r = res.get("ratios", {}).get("cpu", {}).get("rounds", [])
    wall = res.get("ratios", {}).get("wall", {})
    wall_r = wall.get("rounds", []) if wall.get("shown") else []
    for i, r in enumerate(res["per_round"]):
        a, b = r[on], r[pn]
        cells = [
            str(r["round"]),
            r["order"][0],
            _load(r["load_before"]),
            f"{a['wall_s']:.2f}",
            f"{a['cpu_s']:.2f}",
            f"{a['peak_rss_mb']:.0f}",
            f"{b['wall_s']:.2f}",
            f"{b['cpu_s']:.2f}",
            f"{b['peak_rss_mb']:.0f}",
            _x(cpu_r[i]) if i < len(cpu_r) else "—",
            _x(wall_r[i]) if i < len(wall_r) else "—",
        ]
        rows.append("| " + " | ".join(cells) + " |")
    if res["output_check"]["passed"]:
        med = res["medians"]
        rows.append(
            f"| **median** | | | {med[on]['wall_s']:.2f} | {med[on]['cpu_s']:.2f} |"
            f" {med[on]['peak_rss_mb']:.0f} | {med[pn]['wall_s']:.2f} | {med[pn]['cpu_s']:.2f} |"
            f" {med[pn]['peak_rss_mb']:.0f} | **{_x(res['ratios']['cpu']['median'])}** |"
            f" {_x(wall['median']) if wall.get('shown') else 'not shown'} |"
        )
    return head + "\n".join(rows) + "\n"


def _number(value: float) -> str:
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.2f}"


def rates_table(results: dict[str, dict[str, Any]], prefix: str) -> str:
    """Units per minute and CPU-seconds per unit, per side, of every results file named
    ``prefix``…; medians of the rounds (wall and CPU), observed figures' medians."""
    head = (
        "| benchmark | side | at once | units | per minute (wall) | CPU-s per unit |"
        " observed (medians) | × peer per CPU-second |\n|---|---|---|---|---|---|---|---|\n"
    )
    rows = []
    for name, res in sorted(results.items()):
        if not name.startswith(prefix):
            continue
        if not res["output_check"]["passed"]:
            rows.append(f"| {name} | — | — | — | — | — | — | no ratio: output check failed |")
            continue
        units = res.get("units") or {}
        count = units.get("count")
        unit = units.get("unit", "")
        for role in ("ours", "peer"):
            side_name, side = _side_cell(res, role)
            med = res["medians"][side_name]
            per_min = f"{count / med['wall_s'] * 60:.1f}" if count and med["wall_s"] else "—"
            # small units (a crawled URL: milliseconds) keep three significant digits
            per_unit = "—"
            if count:
                value = med["cpu_s"] / count
                per_unit = f"{value:.3f}" if value >= 0.1 else f"{value:.5f}"
            seen = res.get("observed", {}).get(side_name, {})
            seen_cell = ", ".join(f"{k} {_number(v)}" for k, v in seen.items()) or "—"
            ratio = f"**{_x(res['ratios']['cpu']['median'])}**" if role == "ours" else ""
            rows.append(
                f"| {name} | {side_name} | {side['parallelism']} | {count or '—'} {unit} |"
                f" {per_min} | {per_unit} | {table_cell(seen_cell)} | {ratio} |"
            )
    if not rows:
        raise ReadmeError(f"bench/README.md: table 'rates {prefix}' but no results/{prefix}*.json")
    return head + "\n".join(rows) + "\n"


def render(text: str, results: dict[str, dict[str, Any]], scale_dir: Path = SCALE_RESULTS) -> str:
    """``text`` with every marked table regenerated from ``results`` (and ``scale_dir``)."""
    from bench.runner.scale_tables import scale_cost_table, scale_day_table, scale_leases_table

    out, pos = [], 0
    for m in BEGIN.finditer(text):
        if m.start() < pos:
            continue
        key = m.group(1)
        end = f"<!-- /bench/run: {key} -->"
        stop = text.find(end, m.end())
        if stop < 0:
            raise ReadmeError(f"bench/README.md: marker {key!r} has no end {end!r}")
        if key == "summary":
            table = summary_table(results)
        elif key == "sides":
            table = sides_table(results)
        elif key.startswith("rates "):
            table = rates_table(results, key.split(" ", 1)[1])
        elif key == "scale leases":
            table = scale_leases_table(scale_dir)
        elif key == "scale day":
            table = scale_day_table(scale_dir)
        elif key == "scale cost":
            table = scale_cost_table(scale_dir)
        else:
            name = key.split(" ", 1)[1]
            if name not in results:
                raise ReadmeError(f"bench/README.md: table {key!r} but no results/{name}.json")
            table = rounds_table(results[name])
        out += [text[pos : m.end()], table]
        pos = stop
    return "".join(out) + text[pos:]


def update(readme: Path, results_dir: Path) -> bool:
    """Rewrite ``readme``'s tables from ``results_dir``; True when it changed."""
    text = readme.read_text(encoding="utf-8")
    new = render(text, load_results(results_dir))
    if new != text:
        readme.write_text(new, encoding="utf-8")
    return new != text
