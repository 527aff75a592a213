"""The day's figures: per stage wall, CPU (in all and per component), peak RSS, task instances,
scheduler delay, broker depth; at the end PostgreSQL sizes (harvest and Airflow metadata) and disk
per URL.

Why sampled from outside: the platform is many processes (Airflow's components, two Celery
workers, their task processes, the crawlers, PostgreSQL, SeaweedFS, Redis) that come and go; a
sampler over ``harvestflow up``'s process tree every second sees all of them, and their CPU is
summed from /proc (a process that ended between two samples loses at most its last second:
the figures are lower bounds, said so in the results). The tree is ``up``'s descendants and
the processes naming the data directory (PostgreSQL detaches from ``up``); an environment
match alone missed every process that sets its title (the api-server, the task supervisors
and task processes, where the preload, indexing and preservation run), which overwrites what
/proc shows of its environment.
"""

from __future__ import annotations

import statistics
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import psutil

SAMPLE_S = 1.0
QUEUES = ("default", "crawl_low", "crawl_high", "crawl_continuous")


def _ts(text: str | None) -> float | None:
    return datetime.fromisoformat(text).timestamp() if text else None


COMPONENTS = (  # (what the command line holds, the component), first match wins
    ("postgres", "postgresql"),
    ("weed", "seaweedfs"),
    ("redis-server", "redis"),
    ("-m crawler", "crawlers"),
    ("airflow worker --", "task processes"),
    ("supervisor", "task supervisors"),
    ("celery", "celery workers"),
    ("scheduler", "airflow scheduler"),
    ("dag-processor", "airflow dag-processor"),
    ("api_server", "airflow api-server"),
    ("triggerer", "airflow triggerer"),
    ("pywb", "access (pywb)"),
    ("harvestflow up", "harvestflow up"),
)


def component(cmdline: list[str]) -> str:
    """The platform component a process belongs to, from its command line (or title)."""
    text = " ".join(cmdline)
    return next((name for needle, name in COMPONENTS if needle in text), "other")


class Meter:
    """Samples the whole platform's process tree and the broker's queues."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.cpu: dict[int, float] = {}  # pid -> last CPU seconds seen
        self.samples: list[tuple[float, float, int, int]] = []  # time, CPU total, peak RSS, depth
        self.parts: list[dict[str, float]] = []  # per sample: component -> CPU seconds so far
        self.kind: dict[int, str] = {}  # pid -> component
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _roots(self) -> list[psutil.Process]:
        data = self.env["HARVESTFLOW_DATA_DIR"]
        found: dict[int, psutil.Process] = {}
        for p in psutil.process_iter(["environ", "cmdline"]):
            try:
                mine = (p.info["environ"] or {}).get("HARVESTFLOW_DATA_DIR") == data or any(
                    data in arg for arg in p.info["cmdline"] or []
                )
                if mine and p.pid not in found:
                    found[p.pid] = p
                    found.update((c.pid, c) for c in p.children(recursive=True))
            except psutil.Error:
                continue
        return list(found.values())

    def _sample(self) -> None:
        import redis

        broker = redis.Redis(port=int(self.env["HARVESTFLOW_BROKER__PORT"]), socket_timeout=2)
        while not self._stop.is_set():
            rss = 0
            for p in self._roots():
                try:
                    t = p.cpu_times()
                    if p.pid not in self.kind:
                        self.kind[p.pid] = component(p.cmdline())
                    # own only: reaped children are counted by pid
                    self.cpu[p.pid] = t.user + t.system
                    rss = max(rss, p.memory_info().rss)
                except psutil.Error:
                    continue
            try:
                depth = sum(int(broker.llen(q)) for q in QUEUES)
            except redis.RedisError:
                depth = -1
            parts: dict[str, float] = {}
            for pid, cpu in self.cpu.items():
                parts[self.kind[pid]] = parts.get(self.kind[pid], 0.0) + cpu
            self.samples.append((time.time(), sum(self.cpu.values()), rss, depth))
            self.parts.append(parts)
            self._stop.wait(SAMPLE_S)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def _window(self, start: float, end: float) -> dict[str, Any]:
        inside = [s for s in self.samples if start <= s[0] <= end]
        before = [s for s in self.samples if s[0] <= start]
        if not inside:
            return {}
        cpu0 = before[-1][1] if before else inside[0][1]
        depths = [s[3] for s in inside if s[3] >= 0]
        first = self.samples.index(before[-1] if before else inside[0])
        last = self.samples.index(inside[-1])
        parts0, parts1 = self.parts[first], self.parts[last]
        by_part = {k: round(v - parts0.get(k, 0.0), 1) for k, v in parts1.items()}
        return {
            "cpu_s": round(inside[-1][1] - cpu0, 1),
            "cpu_s_by_component": dict(sorted(by_part.items(), key=lambda kv: -kv[1])),
            "peak_rss_mb": round(max(s[2] for s in inside) / 2**20),
            "broker_depth_max": max(depths) if depths else None,
        }

    def stage(self, platform: Any, dag_id: str, runs: list[dict[str, Any]]) -> dict[str, Any]:
        """Wall (first start to last end), CPU and peak RSS over that window, task instances,
        their queued → running delays, the Celery queue(s) each task went through and the
        workers that ran them (the routing: crawls on their channel's queue, the rest on
        ``default``)."""
        starts = [_ts(r.get("start_date")) for r in runs]
        ends = [_ts(r.get("end_date")) for r in runs]
        start = min(s for s in starts if s is not None)
        end = max(e for e in ends if e is not None)
        delays: list[float] = []
        tis = 0
        queues: dict[str, set[str]] = {}
        workers: set[str] = set()
        for r in runs:
            for t in platform.task_instances(dag_id, r["dag_run_id"]):
                tis += 1
                q, s = _ts(t.get("queued_when")), _ts(t.get("start_date"))
                if q is not None and s is not None:
                    delays.append(max(0.0, s - q))
                if t.get("state") == "success":
                    queues.setdefault(t["task_id"], set()).add(str(t.get("queue")))
                    workers.add(str(t.get("hostname")))
        out: dict[str, Any] = {
            "runs": len(runs),
            "wall_s": round(end - start, 1),
            "task_instances": tis,
            "queues": {task: sorted(qs) for task, qs in sorted(queues.items())},
            "workers": sorted(workers),
        }
        if delays:
            delays.sort()
            out["sched_delay_p50_s"] = round(statistics.median(delays), 2)
            out["sched_delay_p95_s"] = round(delays[int(0.95 * (len(delays) - 1))], 2)
        out.update(self._window(start, end))
        return out

    def finish(self) -> dict[str, Any]:
        """PostgreSQL sizes and the data directory's size, at the end of the day."""
        import sqlalchemy as sa

        from harvestflow.settings import load

        settings = load(environ=self.env)
        sizes = {}
        for name, url in (
            ("harvest", settings.harvest_db_url),
            ("airflow", settings.airflow_db_url),
        ):
            engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
            with engine.connect() as conn:
                sizes[name] = int(
                    conn.execute(
                        sa.text("SELECT pg_database_size(current_database())")
                    ).scalar_one()
                )
            engine.dispose()
        data = Path(self.env["HARVESTFLOW_DATA_DIR"])
        disk = sum(p.stat().st_size for p in data.rglob("*") if p.is_file() and not p.is_symlink())
        return {
            "pg_harvest_mb": round(sizes["harvest"] / 2**20, 1),
            "pg_airflow_mb": round(sizes["airflow"] / 2**20, 1),
            "data_dir_mb": round(disk / 2**20, 1),
            "cpu_s_total": round(self.samples[-1][1], 1) if self.samples else None,
            "cpu_s_by_component": (
                {k: round(v, 1) for k, v in sorted(self.parts[-1].items(), key=lambda kv: -kv[1])}
                if self.parts
                else {}
            ),
            "peak_rss_mb": round(max(s[2] for s in self.samples) / 2**20) if self.samples else None,
        }
