"""The figures of bench/scale/simulate.py: what a run printed and wrote to its results file.

Apart from the run itself so that simulate.py stays the run (platform, workers, tasks) and this
the reading of what the tasks recorded; the tasks use :func:`pct` for their own latencies.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def pct(values: list[float], q: float) -> float:
    """The q-quantile of ``values`` (nearest rank below; NaN when there are none)."""
    return sorted(values)[int(q * (len(values) - 1))] if values else float("nan")


def tree_cpu(pid: int | None) -> float:
    """CPU seconds (user + system) of a server process and its children (PostgreSQL's backends)."""
    import psutil

    if pid is None:
        return 0.0
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0.0
    total = 0.0
    for proc in procs:
        try:
            t = proc.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass  # a backend that ended between the listing and the reading
    return total


def _commit() -> str:
    proc = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short=9", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.stdout.strip()


def _write_results(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n")
    print(f"results: {path}")


def report(
    args: argparse.Namespace,
    rows: list[dict[str, Any]],
    jobs: int,
    begin: float,
    peak: int,
    cpu: dict[str, float],
    pg: Any,
    tail: dict[str, Any] | None = None,
) -> bool:
    """Print the run's figures (and write ``--results``); True when a task failed.

    ``rows`` are the tasks' metrics rows, ``jobs`` the jobs enqueued, ``begin`` the time of the
    first enqueue, ``peak`` PostgreSQL's peak connections, ``cpu`` the lease stores' CPU seconds
    and ``pg`` the ``[postgres]`` settings (its max_connections); ``tail`` bench/scale/sim_probe's
    breakdown of a lease call's time (written as it is)."""
    errors = [r for r in rows if r["status"] != "DONE"]
    rows = [r for r in rows if r["status"] == "DONE"]
    print(
        f"PostgreSQL: peak {peak} connections (max_connections"
        f" {pg.get('max_connections', 200)}); {len(errors)} task(s) failed"
        + (f", e.g. {errors[0]['status']}" if errors else "")
    )
    if not rows:
        raise SystemExit("benchmark FAILED: no job ended")
    makespan = max(r["ended"] for r in rows) - begin
    busy = sum(r["ended"] - r["started"] for r in rows)
    standin = args.fetches * args.fetch_s
    ideal = jobs * standin / args.workers
    lease_ms = [x for r in rows for x in r["lease_ms"]]
    lease_ops = sum(r["lease_ops"] for r in rows)
    # enqueue → start, for the tasks enqueued while a slot was free (the first wave)
    first = sorted(rows, key=lambda r: r["started"])[: args.workers]
    dispatch = [r["started"] - r["enqueued"] for r in first]
    failed = bool(errors)
    shape = f"{args.processes} processes x {args.workers // args.processes} threads" + (
        ", the fetch loops in them" if args.crawler == "thread" else ", a crawler process each"
    )
    print(f"jobs: {len(rows)} done by {args.workers} slots ({shape})")
    print(
        f"makespan {makespan:.1f} s against {ideal:.1f} s ideal (stand-in {standin:.1f} s per"
        f" job); slots busy {busy / (makespan * args.workers):.0%} of the makespan"
    )
    print(
        f"RATIO makespan / ideal: {makespan / ideal:.2f}   (1.00 = the platform's own steps"
        " cost nothing)"
    )
    # the fetching phase: from the first lease asked for to the last given back
    window = max(r["lease_end"] for r in rows) - min(r["lease_start"] for r in rows)
    print(
        f"host leases ({args.leases}): {lease_ops:,} round trips, {lease_ops / makespan:.0f}/s"
        f" over the makespan, {lease_ops / window:.0f}/s over the fetching phase,"
        f" p50 {statistics.median(lease_ms):.1f} ms, p95 {pct(lease_ms, 0.95):.1f} ms,"
        f" {sum(r['lease_waits'] for r in rows)} waits for a held host"
    )
    if tail:
        srv = tail["server"]
        script = srv["commands"].get("evalsha", {})
        print(
            "where a lease call's time goes (ms, p50/p95/p99):"
            f" slots' calls {tail['slots_call_p50_p95_p99']} (own CPU p95"
            f" {tail['slots_call_cpu_p50_p95'][1]}, waiting p95 {tail['slots_call_waiting_p95']});"
            f" slots' processes' 5 ms sleep woke late by {tail['slots_sleep_late_p50_p95_p99']};"
            f" a one-thread probe process's calls {tail['probe_call_p50_p95_p99']}, its sleep"
            f" late by {tail['probe_sleep_late_p50_p95_p99']}; redis-cli --latency avg"
            f" {tail['redis_cli_ping_avg_ms']} max {tail['redis_cli_ping_max_ms']};"
            f" redis-server {script.get('usec_per_call', 0):.0f} µs per script call,"
            f" {srv['slow_over_1ms']} commands over 1 ms, events {srv['latency_events']}"
        )
    print(
        f"server CPU during the run: redis-server {cpu['redis']:.1f} s, PostgreSQL"
        f" {cpu['postgres']:.1f} s (all statements), for {lease_ops:,} lease round trips"
    )
    print(
        f"broker: enqueue -> start p50 {1000 * statistics.median(dispatch):.0f} ms,"
        f" p95 {1000 * pct(dispatch, 0.95):.0f} ms (first {len(first)} tasks)"
    )
    prep = [r["prepare_s"] for r in rows]
    rec = [r["record_s"] for r in rows]
    print(
        f"prepare_job p50 {1000 * statistics.median(prep):.0f} ms p95"
        f" {1000 * pct(prep, 0.95):.0f} ms; record_job_results p50"
        f" {1000 * statistics.median(rec):.0f} ms p95 {1000 * pct(rec, 0.95):.0f} ms"
        f" ({args.per_job} history rows each)"
    )
    if failed:
        print(f"benchmark FAILED: {len(errors)} of {jobs} tasks failed")
    if args.results:
        _write_results(
            args.results,
            {
                "benchmark": f"simulate-{args.leases}",
                "when": datetime.now(UTC).isoformat(timespec="seconds"),
                "commit": _commit(),
                "load_1min": os.getloadavg()[0],
                "args": {k: str(v) for k, v in vars(args).items() if k != "results"},
                "leases": args.leases,
                "jobs": jobs,
                "tasks_failed": len(errors),
                "peak_pg_connections": peak,
                "makespan_s": round(makespan, 2),
                "ideal_s": round(ideal, 2),
                "lease_round_trips": lease_ops,
                "lease_per_s_makespan": round(lease_ops / makespan, 1),
                "lease_per_s_fetching": round(lease_ops / window, 1),
                "lease_p50_ms": round(statistics.median(lease_ms), 2),
                "lease_p95_ms": round(pct(lease_ms, 0.95), 2),
                "dispatch_p50_ms": round(1000 * statistics.median(dispatch), 1),
                "redis_cpu_s": round(cpu["redis"], 2),
                "postgres_cpu_s": round(cpu["postgres"], 2),
                "postgres_max_connections": pg.get("max_connections", 200),
                "errors_sample": [e["status"] for e in errors[:3]],
                "tail_ms": tail,
                "passed": not failed,
            },
        )
    return failed
