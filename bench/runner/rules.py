"""The runner's rules as functions: rounds, order, medians, ratios.

Why functions of their own: each rule is tested on its own (tests/bench/test_runner.py), and a
benchmark has no way around them since the runner, not the benchmark, calls them.
"""

from __future__ import annotations

import statistics
from typing import Any

MIN_ROUNDS = 3
# a run is judged against its targets only if the 1-minute load average before it and before
# every round stayed at or under this many times the machine's cores: under load the peers'
# CPU per unit grew more than ours (index, QA, 2026-11-29), so a loaded run flatters us
QUIET_LOAD_PER_CORE = 1.5
# before each round the runner waits at most this long for the 1-minute load to fall to that
# threshold: the average trails the work (a minute's time constant), so a round started right
# after one whose own sides ran several processes (4 tabs and their browsers, two crawlers and
# PostgreSQL) read as loaded although nothing ran any more; a machine loaded by others' work
# stays loaded past the wait, and the run is then not judged
SETTLE_MAX_S = 300.0


def quiet_load(cores: int) -> float:
    """The 1-minute load at or under which a machine of ``cores`` cores counts as quiet."""
    return QUIET_LOAD_PER_CORE * cores


class RuleError(ValueError):
    """A benchmark or a command line asked for something the rules refuse."""


def load_too_high(result: dict[str, Any]) -> str | None:
    """Why a results file's targets are not judged (its machine was loaded), else None."""
    machine = result.get("machine", {})
    cores = machine.get("cores_usable") or machine.get("cores") or 1
    loads = [machine.get("load_before", [0.0])[0]]
    loads += [r.get("load_before", [0.0])[0] for r in result.get("per_round", [])]
    worst = max(loads)
    if worst > quiet_load(cores):
        return f"1-min load {worst:.1f} on {cores} cores"
    return None


# benchmarks whose sides run Chromium with its sandbox: its renderers live in PID namespaces of
# their own and die with them, so no parent's rusage gets their CPU; only a cgroup counts it
# (bench/runner/measure.py). Named by the part of the benchmark's name before any "-".
SANDBOXED_CHROMIUM = ("render", "render_qa")


def cpu_count_incomplete(result: dict[str, Any]) -> str | None:
    """Why a results file's CPU figures are not whole (a sandboxed Chromium's CPU counted by
    rusage, which misses its renderers'), else None."""
    if result.get("benchmark", "").split("-")[0] not in SANDBOXED_CHROMIUM:
        return None
    for entry in result.get("per_round", []):
        for side in entry.values():
            measured = isinstance(side, dict) and "cpu_s" in side
            if measured and side.get("cpu_counted_by") != "cgroup":
                return "CPU counted by rusage, which misses the sandboxed Chromium renderers'"
    return None


def check_rounds(rounds: int) -> None:
    if rounds < MIN_ROUNDS:
        raise RuleError(
            f"{rounds} round(s) refused: at least {MIN_ROUNDS} rounds, so a median means something"
        )


def round_orders(names: tuple[str, str], rounds: int) -> list[list[str]]:
    """The order of the two sides in each round: the first side alternates (peer first)."""
    first, second = names[1], names[0]
    return [[first, second] if r % 2 == 0 else [second, first] for r in range(rounds)]


def check_order(orders: list[list[str]], names: tuple[str, str]) -> None:
    """Refuse an order in which a round misses a side or the first side does not alternate."""
    for r, order in enumerate(orders):
        if sorted(order) != sorted(names):
            raise RuleError(f"round {r + 1} runs {order}: every round runs each side once")
        if r and order[0] == orders[r - 1][0]:
            raise RuleError(
                f"round {r + 1} starts with {order[0]!r} as round {r} did: the first side"
                " must alternate between rounds (the runner decides the order)"
            )


def median_ratio(peer: list[float], ours: list[float]) -> tuple[float, list[float]]:
    """Median over rounds of ``peer / ours`` taken within each round (same load), and the list."""
    ratios = [p / o if o > 0 else float("inf") for p, o in zip(peer, ours, strict=True)]
    return statistics.median(ratios), ratios


def summarize(per_round: list[dict[str, Any]], names: tuple[str, str]) -> dict[str, Any]:
    """Medians of each side's wall, CPU and peak RSS (never the best round), and the ratios."""
    ours, peer = names
    out: dict[str, Any] = {"medians": {}, "ratios": {}}
    for side in names:
        rows = [r[side] for r in per_round]
        out["medians"][side] = {
            key: statistics.median(row[key] for row in rows)
            for key in ("wall_s", "cpu_s", "peak_rss_mb")
        }
    for metric, key in (("cpu", "cpu_s"), ("wall", "wall_s")):
        med, ratios = median_ratio(
            [r[peer][key] for r in per_round], [r[ours][key] for r in per_round]
        )
        out["ratios"][metric] = {"median": med, "rounds": ratios}
    return out


def observed_medians(per_round: list[dict[str, Any]], names: tuple[str, str]) -> dict[str, Any]:
    """Each side's median of every figure it was observed with (``Benchmark.observe``)."""
    out: dict[str, Any] = {}
    for side in names:
        rows = [r[side].get("observed") or {} for r in per_round]
        keys = sorted({k for row in rows for k in row})
        meds = {k: statistics.median(row[k] for row in rows if k in row) for k in keys}
        if meds:
            out[side] = meds
    return out
