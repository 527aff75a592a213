"""Where a host lease's round trip spends its time, in bench/scale/simulate.py.

Why: the crawl slots' p95 (client-side, the latency a crawler sees) mixes four waits: the
interpreter lock (GIL) in a process whose other threads run Python, the system's run queue (two
cores shared by every process of the run), the loopback socket, and redis-server's own work. A
single figure cannot say which one to fix, so the run measures each one apart, at the same time:

- **in the slots' processes**: each call's wall time against its thread's CPU time, and a probe
  thread (:func:`start_sleep_probe`) that sleeps 5 ms and notes how late it woke up: the run
  queue plus the wait for the interpreter lock held by the process's other threads;
- **a probe process** (``python sim_probe.py``, one thread: no lock to wait for): the same lease
  calls through the same client (:class:`crawler.broker_leases.BrokerHostLeases`) every 20 ms
  on hosts of its own, and its own sleep lateness (the run queue alone);
- **redis-cli --latency** (a peer's figure: PING round trips, every 5 s window's min/avg/max);
- **redis-server itself** (:func:`server_reset`, :func:`server_figures`): the Lua scripts' CPU
  per call (``INFO commandstats``), the commands slower than 1 ms (``SLOWLOG``), the latency
  monitor's events (AOF writes and fsyncs included: the broker keeps an append-only file).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

SLEEP_S = 0.005  # the probe thread's sleep: shorter than the 5 ms switch interval is pointless
FLUSH_S = 2.0  # samples are appended to their file this often (a worker is killed, not closed)

_started: set[int] = set()
_guard = threading.Lock()


def _append(path: Path, key: str, values: list[float]) -> None:
    with path.open("a") as fh:
        fh.write(json.dumps({key: [round(v, 3) for v in values]}) + "\n")


def _sleep_lateness(path: Path) -> None:
    samples: list[float] = []
    flushed = time.monotonic()
    while True:
        t = time.perf_counter()
        time.sleep(SLEEP_S)
        samples.append(1000 * (time.perf_counter() - t - SLEEP_S))
        if time.monotonic() - flushed > FLUSH_S:
            _append(path, "sleep_late_ms", samples)
            samples, flushed = [], time.monotonic()


def start_sleep_probe(out: Path) -> None:
    """Once per process: a daemon thread noting how late a 5 ms sleep wakes up (the run queue and
    the wait for the interpreter lock), in ``out/late-<pid>.jsonl``."""
    pid = os.getpid()
    with _guard:
        if pid in _started:
            return
        _started.add(pid)
    path = out / f"late-{pid}.jsonl"
    threading.Thread(target=_sleep_lateness, args=(path,), daemon=True).start()


def read_samples(out: Path, pattern: str, key: str) -> list[float]:
    """Every sample under ``key`` in the files ``out/pattern``."""
    return [
        x
        for f in sorted(out.glob(pattern))
        for line in f.read_text().splitlines()
        if line.strip()
        for x in json.loads(line).get(key, [])
    ]


def server_reset(client: Any) -> None:
    """Zero redis-server's counters and switch on its slow log (> 1 ms) and latency monitor."""
    client.config_set("slowlog-log-slower-than", 1000)
    client.config_set("slowlog-max-len", 100000)
    client.config_set("latency-monitor-threshold", 1)
    client.slowlog_reset()
    client.execute_command("LATENCY", "RESET")
    client.config_resetstat()


def server_figures(client: Any) -> dict[str, Any]:
    """redis-server's side since :func:`server_reset`: per-command calls and µs per call, the
    slow commands, the latency monitor's events (name → latest and max ms) and delayed fsyncs."""
    stats = client.info("commandstats")
    commands = {
        k.removeprefix("cmdstat_"): {"calls": v["calls"], "usec_per_call": v["usec_per_call"]}
        for k, v in stats.items()
        if k.removeprefix("cmdstat_") in ("evalsha", "eval", "brpop", "lpush", "ping")
    }
    slow = client.slowlog_get(100000)
    events = {
        str(e[0], "utf-8") if isinstance(e[0], bytes) else str(e[0]): {
            "latest_ms": e[2],
            "max_ms": e[3],
        }
        for e in client.execute_command("LATENCY", "LATEST")
    }
    return {
        "commands": commands,
        "slow_over_1ms": len(slow),
        "slow_max_ms": max((s["duration"] for s in slow), default=0) / 1000,
        "latency_events": events,
        "aof_delayed_fsync": client.info("persistence").get("aof_delayed_fsync", 0),
    }


def _q(values: list[float], q: float) -> float:
    return round(sorted(values)[int(q * (len(values) - 1))], 2) if values else float("nan")


def tail_figures(
    out: Path, rows: list[dict[str, Any]], server: dict[str, Any], cli: list[dict[str, float]]
) -> dict[str, Any]:
    """The run's breakdown (ms): the slots' calls (wall, own CPU, the rest: waiting), the slots'
    processes' sleep lateness, the probe process's calls and sleep lateness, redis-cli's PING
    windows and redis-server's own figures."""
    wall = [x for r in rows for x in r["lease_ms"]]
    cpu = [x for r in rows for x in r.get("lease_cpu_ms", [])]
    waiting = [
        w - c
        for r in rows
        if "lease_cpu_ms" in r
        for w, c in zip(r["lease_ms"], r["lease_cpu_ms"], strict=True)
    ]
    late = read_samples(out, "late-*.jsonl", "sleep_late_ms")
    probe = read_samples(out, "probe.jsonl", "lease_ms")
    probe_late = read_samples(out, "probe.jsonl", "sleep_late_ms")
    return {
        "slots_call_p50_p95_p99": [_q(wall, q) for q in (0.5, 0.95, 0.99)],
        "slots_call_cpu_p50_p95": [_q(cpu, q) for q in (0.5, 0.95)],
        "slots_call_waiting_p95": _q(waiting, 0.95),
        "slots_sleep_late_p50_p95_p99": [_q(late, q) for q in (0.5, 0.95, 0.99)],
        "slots_sleep_samples": len(late),
        "probe_call_p50_p95_p99": [_q(probe, q) for q in (0.5, 0.95, 0.99)],
        "probe_calls": len(probe),
        "probe_sleep_late_p50_p95_p99": [_q(probe_late, q) for q in (0.5, 0.95, 0.99)],
        "redis_cli_ping_avg_ms": (
            round(sum(w["avg_ms"] for w in cli) / len(cli), 2) if cli else float("nan")
        ),
        "redis_cli_ping_max_ms": max((w["max_ms"] for w in cli), default=float("nan")),
        "redis_cli_windows": len(cli),
        "server": server,
    }


class RedisCliLatency:
    """``redis-cli --latency`` in 5-second windows, in a thread, until :meth:`stop`."""

    def __init__(self, host: str, port: int) -> None:
        self.cmd = ["redis-cli", "-h", host, "-p", str(port), "--latency", "--raw", "-i", "5"]
        self.windows: list[dict[str, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            proc = subprocess.run(self.cmd, capture_output=True, text=True, timeout=30, check=False)
            parts = proc.stdout.split()
            if proc.returncode == 0 and len(parts) == 4:
                lo, hi, avg, n = (float(p) for p in parts)
                self.windows.append({"min_ms": lo, "max_ms": hi, "avg_ms": avg, "count": n})

    def stop(self) -> list[dict[str, float]]:
        self._stop.set()
        self._thread.join(40)
        return self.windows


def spawn_probe(broker_url: str, out: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """The probe process (this file run as a program), writing ``out/probe.jsonl``."""
    cmd = [sys.executable, str(Path(__file__).resolve()), broker_url, str(out / "probe.jsonl")]
    return subprocess.Popen(cmd, env=env)


def _probe_main() -> int:
    ap = argparse.ArgumentParser(description="one-thread lease probe against the broker")
    ap.add_argument("broker")
    ap.add_argument("out", type=Path)
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from crawler.broker_leases import BrokerHostLeases
    from crawler.lease_tables import POLL_S, WAITER_GRACE_S

    leases = BrokerHostLeases.from_url(
        args.broker, f"probe-{os.getpid()}", 30.0, poll_s=POLL_S, grace_s=WAITER_GRACE_S
    )
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    calls: list[float] = []
    late: list[float] = []
    flushed = time.monotonic()
    i = 0
    try:
        while True:
            host = f"probe-{i % 50}.invalid"
            i += 1
            t = time.perf_counter()
            leases.try_take(host)
            calls.append(1000 * (time.perf_counter() - t))
            t = time.perf_counter()
            leases.give_back(host, 0.0)
            calls.append(1000 * (time.perf_counter() - t))
            t = time.perf_counter()
            time.sleep(0.02)
            late.append(1000 * (time.perf_counter() - t - 0.02))
            if time.monotonic() - flushed > FLUSH_S:
                _append(args.out, "lease_ms", calls)
                _append(args.out, "sleep_late_ms", late)
                calls, late, flushed = [], [], time.monotonic()
    finally:
        _append(args.out, "lease_ms", calls)
        _append(args.out, "sleep_late_ms", late)
        leases.close()


if __name__ == "__main__":
    sys.exit(_probe_main())
