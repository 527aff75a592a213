"""bench/scale/sim_probe: where a host lease's round trip spends its time in the simulation —
redis-server's own counters, a one-thread probe process making the real lease calls, the sleep
lateness of a process's threads, and the breakdown written to the results file; and the
simulation itself with a crawler process per crawl slot."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from bench.scale import sim_probe
from crawler.broker_leases import BrokerHostLeases
from crawler.lease_tables import POLL_S, WAITER_GRACE_S
from harvestflow.services.redis import EmbeddedRedis

REPO = Path(__file__).resolve().parents[2]
RULES = {"poll_s": POLL_S, "grace_s": WAITER_GRACE_S}


@pytest.fixture
def client(broker: EmbeddedRedis) -> redis.Redis:
    c = redis.Redis.from_url(broker.url)
    c.flushdb()
    return c


def test_server_figures_count_the_lease_scripts_and_name_a_slow_command(client) -> None:
    leases = BrokerHostLeases(client, "slot-1", hold_s=30, **RULES)
    leases.try_take("www.warm.test")  # both scripts loaded in the server before the count
    leases.give_back("www.warm.test", 0.0)
    sim_probe.server_reset(client)
    for n in range(5):
        assert leases.try_take(f"www.d{n}.test") == 0.0
        leases.give_back(f"www.d{n}.test", 0.0)
    # a script that keeps the server busy ~20 ms: the slow log and the latency monitor see it
    client.eval("local t = redis.call('TIME') local s = t[1] * 1e6 + t[2] "
                "repeat t = redis.call('TIME') until t[1] * 1e6 + t[2] - s > 20000 return 1", 0)  # fmt: skip
    figures = sim_probe.server_figures(client)
    assert figures["commands"]["evalsha"]["calls"] == 10
    assert figures["commands"]["evalsha"]["usec_per_call"] > 0
    assert figures["slow_over_1ms"] >= 1  # the busy script (a loaded machine may add some)
    assert 15 <= figures["slow_max_ms"] < 1000
    assert figures["latency_events"]["command"]["max_ms"] >= 15
    sim_probe.server_reset(client)
    assert sim_probe.server_figures(client)["slow_over_1ms"] == 0


def test_the_probe_process_makes_real_lease_calls_on_hosts_of_its_own(
    broker: EmbeddedRedis, client, tmp_path: Path
) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    sim_probe.server_reset(client)
    proc = sim_probe.spawn_probe(broker.url, tmp_path, env)
    try:
        deadline = time.monotonic() + 60
        while not client.keys("hf:hostlease:{probe-*") and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)
    finally:
        proc.terminate()
        assert proc.wait(30) == 0  # SIGTERM: its last samples written, then a clean exit
    calls = sim_probe.read_samples(tmp_path, "probe.jsonl", "lease_ms")
    late = sim_probe.read_samples(tmp_path, "probe.jsonl", "sleep_late_ms")
    scripts = sim_probe.server_figures(client)["commands"]["evalsha"]["calls"]
    assert len(calls) >= 10 and abs(scripts - len(calls)) <= 2  # a take and a give-back each
    assert all(x > 0 for x in calls) and len(late) >= len(calls) // 2 - 1
    # given back each time: a probe never holds a crawl slot's host, nor its own for long
    assert all(k.startswith(b"hf:hostlease:{probe-") for k in client.keys("hf:hostlease:*"))


def test_a_process_sleep_probe_starts_once_and_notes_how_late_it_woke(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sim_probe, "FLUSH_S", 0.05)
    monkeypatch.setattr(sim_probe, "_started", set())
    sim_probe.start_sleep_probe(tmp_path)
    sim_probe.start_sleep_probe(tmp_path)  # a second task in the same process: no second thread
    time.sleep(0.5)
    assert [p.name for p in tmp_path.iterdir()] == [f"late-{os.getpid()}.jsonl"]
    late = sim_probe.read_samples(tmp_path, "late-*.jsonl", "sleep_late_ms")
    assert len(late) >= 10 and min(late) >= 0.0


def test_the_breakdown_separates_a_calls_waiting_from_its_own_cpu(tmp_path: Path) -> None:
    rows = [
        {"lease_ms": [1.0, 20.0, 2.0], "lease_cpu_ms": [0.1, 0.2, 0.1]},
        {"lease_ms": [1.5], "lease_cpu_ms": [0.1]},
    ]
    (tmp_path / "late-1.jsonl").write_text(json.dumps({"sleep_late_ms": [0.1, 9.0]}) + "\n")
    (tmp_path / "probe.jsonl").write_text(
        json.dumps({"lease_ms": [0.3, 0.4]}) + "\n" + json.dumps({"sleep_late_ms": [0.05]}) + "\n"
    )
    cli = [{"min_ms": 0.0, "max_ms": 4.0, "avg_ms": 0.2, "count": 10.0},
           {"min_ms": 0.0, "max_ms": 7.0, "avg_ms": 0.4, "count": 10.0}]  # fmt: skip
    tail = sim_probe.tail_figures(tmp_path, rows, {"commands": {}}, cli)
    assert tail["slots_call_p50_p95_p99"] == [1.5, 2.0, 2.0]  # nearest rank below
    assert tail["slots_call_waiting_p95"] == 1.9
    assert tail["slots_call_cpu_p50_p95"] == [0.1, 0.1]
    assert tail["slots_sleep_late_p50_p95_p99"] == [0.1, 0.1, 0.1]
    assert tail["probe_call_p50_p95_p99"][0] == 0.3 and tail["probe_calls"] == 2
    assert tail["probe_sleep_late_p50_p95_p99"] == [0.05, 0.05, 0.05]
    assert (tail["redis_cli_ping_avg_ms"], tail["redis_cli_ping_max_ms"]) == (0.3, 7.0)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_simulation_runs_each_slots_fetch_loop_in_a_crawler_process(tmp_path: Path) -> None:
    """A small simulate.py run (--crawler process): every job done, every lease call timed in
    the slots' crawler processes, and the breakdown in the results file."""
    results = tmp_path / "simulate-broker.json"
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / "scale" / "simulate.py"), "--leases", "broker",
         "--configs", "400", "--per-job", "100", "--workers", "4", "--processes", "2",
         "--fetches", "20", "--fetch-s", "0.01", "--delay-s", "0.05", "--crawler", "process",
         "--keep", str(tmp_path / "data"), "--results", str(results)],
        cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True, text=True,
        timeout=550,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "a crawler process each" in proc.stdout
    data = json.loads(results.read_text())
    assert (data["jobs"], data["tasks_failed"], data["lease_round_trips"]) == (4, 0, 160)
    rows = [
        json.loads(line)
        for f in (tmp_path / "data" / "metrics").glob("metrics-*.jsonl")
        for line in f.read_text().splitlines()
    ]
    assert sum(len(r["lease_ms"]) for r in rows) == 160
    assert all(len(r["lease_cpu_ms"]) == len(r["lease_ms"]) for r in rows)
    tail = data["tail_ms"]
    assert tail["probe_calls"] > 0 and tail["redis_cli_windows"] >= 1
    assert tail["server"]["commands"]["evalsha"]["calls"] >= 160
