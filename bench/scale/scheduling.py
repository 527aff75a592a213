"""Scheduling overhead per task instance: the CeleryExecutor against the LocalExecutor, same run.

For each executor, ``harvestflow up`` starts the whole platform in its own data directory (with
``celery``: the embedded redis-server broker and ``--workers 2`` local workers, all queues), then
the real ``oneoff_harvest`` DAG is triggered ``--runs`` times, one after the other, each a small
crawl of the bundled sample site. For every task instance the API reports when the scheduler
scheduled it (``scheduled_when``) and when it started on a worker (``start_date``): the
difference is what the executor adds (queueing, the broker, the worker picking it up, the task
process starting). Printed: the medians per executor, over all task instances and over the crawl
tasks, and the ratio celery / local. Target: ≤ 1 s per crawl task under celery.

The run fails (exit 1 and a message) when ``up`` exits, or a DAG run does not succeed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
HARVESTFLOW = str(Path(sys.executable).parent / "harvestflow")
sys.path.insert(0, str(REPO))

# the test suite's isolated platform environment: own data dir, free ports for every service
from tests.support.platform_cli import isolated_env  # noqa: E402


class BenchFailed(SystemExit):
    """A run that did not do the whole job: its figures mean nothing."""


class Lines:
    """A child's output lines, collected in the background."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)

    def wait_for(self, pattern: str, timeout: float) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if m := re.search(pattern, line):
                    return m
            if self.proc.poll() is not None:
                break
            time.sleep(0.5)
        tail = "".join(self.lines)[-3000:]
        raise BenchFailed(f"benchmark FAILED: `harvestflow up` never printed {pattern!r}:\n{tail}")


def _t(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None


def measure(executor: str, runs: int, seeds: int) -> list[dict[str, Any]]:
    """Task instances of ``runs`` one-off harvests: (task, overhead s) for each."""
    data = Path(tempfile.mkdtemp(prefix=f"hf-bench-sched-{executor}-"))
    env = isolated_env(data / "var")
    env["HARVESTFLOW_AIRFLOW__EXECUTOR"] = executor
    cmd = [HARVESTFLOW, "up"] + (["--workers", "2"] if executor == "celery" else [])
    up = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    out = Lines(up)
    rows: list[dict[str, Any]] = []
    try:
        login = out.wait_for(r"Airflow UI: (http://\S+)\s+login: (\S+) / (\S+)", 600)
        site = out.wait_for(r"sample site: (http://\S+)", 60).group(1).rstrip("/")
        port = site.rsplit(":", 1)[1]
        base = login.group(1).rstrip("/")
        token = httpx.post(
            f"{base}/auth/token",
            json={"username": login.group(2), "password": login.group(3)},
            timeout=30,
        ).json()["access_token"]
        with httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=60
        ) as client:
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                dags = client.get("/api/v2/dags", params={"limit": 100}).json()["dags"]
                if "oneoff_harvest" in {d["dag_id"] for d in dags}:
                    break
                time.sleep(2)
            for r in range(runs):
                conf = {
                    "seeds": [
                        f"http://www.example-a.test:{port}/slow?ms=10&r={r}&n={i}"
                        for i in range(seeds)
                    ],
                    "template": "demo_loopback",
                    "resolve": {"www.example-a.test": "127.0.0.1"},
                }
                made = client.post(
                    "/api/v2/dags/oneoff_harvest/dagRuns",
                    json={"logical_date": None, "conf": conf},
                )
                if made.status_code != 200:
                    raise BenchFailed(f"benchmark FAILED: trigger: {made.text}")
                run_id = made.json()["dag_run_id"]
                state = "?"
                deadline = time.monotonic() + 900
                while time.monotonic() < deadline:
                    state = client.get(f"/api/v2/dags/oneoff_harvest/dagRuns/{run_id}").json()[
                        "state"
                    ]
                    if state in ("success", "failed"):
                        break
                    time.sleep(1)
                if state != "success":
                    raise BenchFailed(f"benchmark FAILED: {executor} run {run_id} ended {state}")
                tis = client.get(
                    f"/api/v2/dags/oneoff_harvest/dagRuns/{run_id}/taskInstances",
                    params={"limit": 200},
                ).json()["task_instances"]
                for ti in tis:
                    scheduled, started = _t(ti.get("scheduled_when")), _t(ti.get("start_date"))
                    if ti["state"] != "success" or not scheduled or not started:
                        continue  # skipped tasks never ran on a worker
                    rows.append(
                        {
                            "task": ti["task_id"],
                            "overhead_s": (started - scheduled).total_seconds(),
                            "duration_s": ti.get("duration") or 0.0,
                        }
                    )
                print(
                    f"{executor}: run {r + 1}/{runs} done ({len(tis)} task instances)", flush=True
                )
    finally:
        if up.poll() is None:
            up.send_signal(signal.SIGINT)
            try:
                up.wait(240)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(up.pid, signal.SIGKILL)
                up.wait()
    if up.returncode not in (0, None):
        raise BenchFailed(f"benchmark FAILED: `harvestflow up` ({executor}) exited {up.returncode}")
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="one-off DAG runs per executor")
    ap.add_argument("--seeds", type=int, default=5, help="seeds per run")
    args = ap.parse_args()
    results = {ex: measure(ex, args.runs, args.seeds) for ex in ("local", "celery")}
    med: dict[str, dict[str, float]] = {}
    for ex, rows in results.items():
        every = [r["overhead_s"] for r in rows]
        crawls = [r["overhead_s"] for r in rows if r["task"].endswith(".crawl")]
        med[ex] = {
            "all": statistics.median(every),
            "crawl": statistics.median(crawls),
            "n": len(every),
            "n_crawl": len(crawls),
        }
        print(
            f"{ex:>7}: scheduled → running, median {med[ex]['all']:.2f} s over {len(every)} task"
            f" instances; crawl tasks {med[ex]['crawl']:.2f} s over {len(crawls)}"
            f" (p95 all {sorted(every)[int(0.95 * (len(every) - 1))]:.2f} s)"
        )
    for key in ("all", "crawl"):
        ratio = med["celery"][key] / med["local"][key] if med["local"][key] else float("inf")
        print(f"RATIO scheduling overhead celery / local ({key} tasks): median {ratio:.2f}")
    ok = med["celery"]["crawl"] <= 1.0
    print(f"target ≤ 1 s per crawl task under celery: {'met' if ok else 'NOT met'}"
          f" ({med['celery']['crawl']:.2f} s)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
