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

import os
import statistics
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

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


_TICK = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


class _Stat(NamedTuple):
    ppid: int
    start: int  # clock ticks after boot: with the pid, one process (pids are reused)
    comm: str
    cpu_s: float  # user + system, its own (not its reaped children's)
    rss: int  # bytes


def _read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def _all_stats() -> dict[int, _Stat]:
    """Every process's /proc/<pid>/stat (one read each)."""
    out: dict[int, _Stat] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            raw = _read(f"/proc/{entry.name}/stat").decode("utf-8", "replace")
        except OSError:
            continue
        # the command name may hold spaces and parentheses: the fields follow the last ')'
        comm = raw[raw.find("(") + 1 : raw.rfind(")")]
        f = raw[raw.rfind(")") + 2 :].split()
        out[int(entry.name)] = _Stat(
            int(f[1]), int(f[19]), comm, (int(f[11]) + int(f[12])) / _TICK, int(f[21]) * _PAGE
        )
    return out


class Meter:
    """Samples the whole platform's process tree and the broker's queues."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        data = env["HARVESTFLOW_DATA_DIR"]
        self._env_mark = f"HARVESTFLOW_DATA_DIR={data}\0".encode()
        self._arg_mark = data.encode()
        self.cpu: dict[tuple[int, int], float] = {}  # (pid, start) -> last CPU seconds seen
        self.samples: list[tuple[float, float, int, int]] = []  # time, CPU total, peak RSS, depth
        self.parts: list[dict[str, float]] = []  # per sample: component -> CPU seconds so far
        # (pid, start) -> (command name, component): classified again after an exec or a
        # retitle (a forked child seen before its exec is not left under its parent's name)
        self.kind: dict[tuple[int, int], tuple[str, str]] = {}
        # (pid, start, command name) -> whether the process names the data directory
        self._root: dict[tuple[int, int, str], bool] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _names_data_dir(self, pid: int) -> bool:
        """Whether the process has the day's data directory in its environment or arguments."""
        try:
            if self._env_mark in _read(f"/proc/{pid}/environ"):
                return True
            return self._arg_mark in _read(f"/proc/{pid}/cmdline")
        except OSError:
            return False

    def _tree(self, procs: dict[int, _Stat]) -> list[int]:
        """The day's processes: those naming the data directory and all their descendants.
        One read of /proc per process and sample; environment and arguments read once per
        process (and again after an exec): a machine's every process, every second, cost the
        driver more CPU than some stages it measures."""
        children: dict[int, list[int]] = {}
        for pid, st in procs.items():
            children.setdefault(st.ppid, []).append(pid)
        todo = []
        for pid, st in procs.items():
            key = (pid, st.start, st.comm)
            if key not in self._root:
                self._root[key] = self._names_data_dir(pid)
            if self._root[key]:
                todo.append(pid)
        seen: set[int] = set()
        while todo:
            pid = todo.pop()
            if pid not in seen:
                seen.add(pid)
                todo += children.get(pid, [])
        return sorted(seen)

    def sample_processes(self) -> int:
        """One look at the day's processes: each one's CPU so far and component recorded;
        returns the largest one's RSS."""
        procs = _all_stats()
        rss = 0
        for pid in self._tree(procs):
            st = procs[pid]
            key = (pid, st.start)
            if self.kind.get(key, ("",))[0] != st.comm:
                try:
                    cmdline = _read(f"/proc/{pid}/cmdline").split(b"\0")
                except OSError:
                    continue
                self.kind[key] = (
                    st.comm,
                    component([a.decode("utf-8", "replace") for a in cmdline]),
                )
            # own only: reaped children are counted by (pid, start)
            self.cpu[key] = st.cpu_s
            rss = max(rss, st.rss)
        return rss

    def _sample(self) -> None:
        import redis

        broker = redis.Redis(port=int(self.env["HARVESTFLOW_BROKER__PORT"]), socket_timeout=2)
        while not self._stop.is_set():
            rss = self.sample_processes()
            try:
                depth = sum(int(broker.llen(q)) for q in QUEUES)
            except redis.RedisError:
                depth = -1
            parts: dict[str, float] = {}
            for key, cpu in self.cpu.items():
                name = self.kind[key][1]
                parts[name] = parts.get(name, 0.0) + cpu
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
