"""The ``scale`` tables of bench/README.md and docs/scaling.md, from ``bench/results/scale/``.

Why apart from readme.py: these come from bench/scale's programs (simulate.py, day.py), which
have no peer side and no rounds; a day is one run of hours. ``cost`` is the issue's cost curve:
each component's CPU per URL fetched at each day's size, and how it moved from the smaller day
to the larger (a stage worse than linear shows as a ratio above 1).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.runner.readme import ReadmeError, table_cell

COST_TOLERANCE = 0.25  # the "within ±25 % from 10k to 1M"


def _scale_files(prefix: str, scale_dir: Path) -> list[dict[str, Any]]:
    files = sorted(scale_dir.glob(f"{prefix}-*.json"))
    if not files:
        raise ReadmeError(f"bench/README.md: a scale table but no {scale_dir}/{prefix}-*.json")
    return [json.loads(f.read_text(encoding="utf-8")) for f in files]


def scale_leases_table(scale_dir: Path) -> str:
    """Host-lease round trips of bench/scale/simulate.py, one row per store."""
    head = (
        "| store | run (UTC), commit, load 1 min | jobs, crawl slots, fetches per job |"
        " tasks failed | lease round trips | **per s, fetching phase** | p50 / p95 ms |"
        " store's CPU-s (redis-server / PostgreSQL, all statements) | target ≥ 2,200/s,"
        " p95 ≤ 10 ms |\n|---|---|---|---|---|---|---|---|---|\n"
    )
    rows = []
    for r in _scale_files("simulate", scale_dir):
        a = r["args"]
        met = r["lease_per_s_fetching"] >= 2200 and r["lease_p95_ms"] <= 10
        rows.append(
            f"| {r['leases']} | {r['when'][:16].replace('T', ' ')}, {r['commit']},"
            f" {r['load_1min']:.1f} | {r['jobs']:,}, {a['workers']}, {a['fetches']} |"
            f" {r['tasks_failed']} | {r['lease_round_trips']:,} |"
            f" **{r['lease_per_s_fetching']:,.0f}** | {r['lease_p50_ms']:.1f} /"
            f" {r['lease_p95_ms']:.1f} | {r['redis_cpu_s']:.1f} / {r['postgres_cpu_s']:.1f} |"
            f" {'met' if met else '**missed**'} |"
        )
    return head + "\n".join(rows) + "\n"


def scale_day_table(scale_dir: Path) -> str:
    """bench/scale/day.py's days: one row per stage of each day."""
    head = (
        "| day (URLs asked, domains), run (UTC) | stage | runs | wall s | CPU-s (platform) |"
        " peak RSS MB | task instances | queued → running p50 / p95 s | broker depth max |\n"
        "|---|---|---|---|---|---|---|---|---|\n"
    )
    rows = []
    for r in sorted(_scale_files("scale", scale_dir), key=lambda r: -r["urls_asked"]):
        day = f"{r['urls_asked']:,} ({r['domains']:,}), {r['when'][:16].replace('T', ' ')}"
        if not r.get("passed"):
            rows.append(f"| {day} | **FAILED**: {table_cell(str(r.get('failure', ''))[:200])} |"
                        " | | | | | | |")  # fmt: skip
            continue
        for stage, st in r["stages"].items():
            if "runs" not in st:
                continue
            delay = (
                f"{st['sched_delay_p50_s']:.2f} / {st['sched_delay_p95_s']:.2f}"
                if "sched_delay_p50_s" in st
                else "—"
            )
            rows.append(
                f"| {day} | {stage} | {st['runs']} | {st['wall_s']:.0f} | {st.get('cpu_s', '—')} |"
                f" {st.get('peak_rss_mb', '—')} | {st['task_instances']} | {delay} |"
                f" {st.get('broker_depth_max', '—')} |"
            )
        pf, rc = r["platform"], r["reconciliation"]
        parts = pf.get("cpu_s_by_component") or {}
        where = (
            "; CPU-s by component: " + ", ".join(f"{k} {v}" for k, v in list(parts.items())[:6])
            if parts
            else ""
        )
        rows.append(
            f"| {day} | **whole day**: {rc['urls_fetched']:,} URLs fetched, reconciled;"
            f" PostgreSQL harvest {pf['pg_harvest_mb']} MB, Airflow {pf['pg_airflow_mb']} MB;"
            f" disk {pf['data_dir_mb'] * 1024 / max(1, rc['urls_fetched']):.1f} KB per URL"
            f"{where} | | | {pf['cpu_s_total']} | {pf['peak_rss_mb']} | | | |"
        )
    return head + "\n".join(rows) + "\n"


def _boot(r: dict[str, Any]) -> str:
    """The boot id the day recorded ("" for days run before results named their machine)."""
    return str((r.get("machine") or {}).get("boot_id", ""))


def _machine(r: dict[str, Any]) -> str:
    boot = _boot(r)
    return f"boot {boot[:8]}" if boot else "machine not recorded"


def scale_cost_table(scale_dir: Path) -> str:
    """CPU milliseconds per URL fetched, per component, at each passed day's size; the ratio of
    each size to the next smaller one, judged against ±25 % only where both days ran on the
    same machine (the same boot), since the project's VMs differ by up to 2.4 x in CPU."""
    days = sorted(
        (r for r in _scale_files("scale", scale_dir) if r.get("passed")),
        key=lambda r: r["urls_asked"],
    )
    if not days:
        raise ReadmeError(f"bench/README.md: a scale cost table but no passed day in {scale_dir}")
    per_url = [
        {
            k: v * 1000 / max(1, r["reconciliation"]["urls_fetched"])
            for k, v in {
                **(r["platform"].get("cpu_s_by_component") or {}),
                "whole platform": r["platform"]["cpu_s_total"],
            }.items()
        }
        for r in days
    ]
    cols = [
        f"{r['urls_asked']:,} ({r['reconciliation']['urls_fetched']:,} fetched),"
        f" {r['when'][:16].replace('T', ' ')}, {_machine(r)}"
        for r in days
    ]
    steps = [(i - 1, i) for i in range(1, len(days))]
    head = (
        "| component | "
        + " | ".join(f"ms CPU per URL: {c}" for c in cols)
        + "".join(f" | {days[b]['urls_asked']:,} ÷ {days[a]['urls_asked']:,}" for a, b in steps)
        + " |\n|"
        + "---|" * (1 + len(cols) + len(steps))
        + "\n"
    )
    names = sorted(
        {k for d in per_url for k in d},
        key=lambda k: (k == "whole platform", -per_url[-1].get(k, 0)),
    )
    rows = []
    for name in names:
        cells = [f"{d[name]:.2f}" if name in d else "—" for d in per_url]
        for a, b in steps:
            if name not in per_url[a] or name not in per_url[b] or not per_url[a][name]:
                cells.append("—")
                continue
            ratio = per_url[b][name] / per_url[a][name]
            machines = {_boot(days[a]), _boot(days[b])}
            if "" in machines:
                verdict = "not judged: machine not recorded"
            elif len(machines) > 1:
                verdict = "not judged: other machine"
            elif ratio > 1 + COST_TOLERANCE:
                verdict = "**worse than linear**"
            elif ratio < 1 - COST_TOLERANCE:
                verdict = "cheaper per URL: fixed costs spread"
            else:
                verdict = "within ±25 %"
            cells.append(f"{ratio:.2f} ({verdict})")
        label = f"**{name}**" if name == "whole platform" else name
        rows.append(f"| {label} | " + " | ".join(cells) + " |")
    return head + "\n".join(rows) + "\n"
