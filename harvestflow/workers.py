"""Celery workers: ``harvestflow worker`` (any machine) and ``harvestflow up --workers N`` (local).

Why a command of ours around ``airflow celery worker``: a worker needs harvestflow's whole
environment (metadata DB, broker, dags/, settings file, data directory), must see the shared data
directory (checked before it takes a task: :mod:`harvestflow.services.datadir`), and several
workers on one machine need names of their own. A worker's name is its Celery hostname and also
the hostname its task instances record (``[core] hostname_callable`` = :func:`task_hostname`),
so the UI shows which worker ran which crawl.

Queues: crawl tasks go to the queue of their job's harvest channel (``crawl_high`` for selective
channels, ``crawl_low`` for snapshot channels: ``[airflow] high_priority_pool`` /
``low_priority_pool``), every other task to ``[airflow] default_queue``. A crawl machine is
dedicated to a channel by the queues it listens to.

This module never imports Airflow (it runs the ``airflow`` command).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from harvestflow.services.process import run_forwarding
from harvestflow.settings import Settings

log = logging.getLogger(__name__)

WORKER_NAME_ENV = "HARVESTFLOW_WORKER_NAME"


def task_hostname() -> str:
    """The hostname task instances record: the worker's name, else the machine's FQDN."""
    return os.environ.get(WORKER_NAME_ENV) or socket.getfqdn()


def all_queues(settings: Settings) -> list[str]:
    af = settings["airflow"]
    return [af["high_priority_pool"], af["low_priority_pool"], str(af.get("default_queue"))]


def parse_queues(raw: str | None, settings: Settings) -> list[str]:
    """Comma-separated queue names (default: every queue); blanks and repeats are refused."""
    if not raw:
        return all_queues(settings)
    names = [q.strip() for q in raw.split(",")]
    if any(not q or any(c.isspace() for c in q) for q in names) or len(set(names)) != len(names):
        raise ValueError(f"--queues {raw!r}: expected distinct comma-separated names, no spaces")
    unknown = [q for q in names if q not in all_queues(settings)]
    if unknown:
        log.warning("queue(s) %s are none of the platform's %s", unknown, all_queues(settings))
    return names


def worker_command(
    queues: list[str],
    name: str,
    concurrency: int,
    *,
    serve_logs: bool = True,
) -> list[str]:
    """``airflow celery worker`` arguments for one worker."""
    from harvestflow.airflow_runtime import airflow_bin

    cmd = [
        airflow_bin(),
        "celery",
        "worker",
        "--queues",
        ",".join(queues),
        "--celery-hostname",
        name,
        "--concurrency",
        str(concurrency),
    ]
    if not serve_logs:
        cmd.append("--skip-serve-logs")
    return cmd


def worker_env(settings: Settings, name: str) -> dict[str, str]:
    from harvestflow.airflow_runtime import airflow_env

    if settings.executor != "celery":
        raise ValueError(
            f'workers need [airflow] executor = "celery" (now {settings.executor!r}); set it in '
            f"{settings.source} or HARVESTFLOW_AIRFLOW__EXECUTOR=celery"
        )
    env = airflow_env(settings)
    env[WORKER_NAME_ENV] = name
    return env


def run_worker(
    settings: Settings,
    queues: list[str],
    name: str | None = None,
    concurrency: int | None = None,
    *,
    serve_logs: bool = True,
) -> int:
    """Run one worker in the foreground (``harvestflow worker``); refuses without the shared
    data directory. Returns the worker's exit status."""
    from harvestflow.services.datadir import check_data_dir

    check_data_dir(settings.data_dir)
    name = name or socket.getfqdn()
    conc = concurrency or int(settings["airflow"].get("worker_concurrency", 4))
    cmd = worker_command(queues, name, conc, serve_logs=serve_logs)
    env = worker_env(settings, name)
    log.info("worker %s on queues %s (concurrency %d)", name, ",".join(queues), conc)
    return run_forwarding(cmd, env)


@dataclass
class LocalWorkers:
    """N local workers for a single-machine trial (``harvestflow up --workers N``).

    Each listens to every queue, logs to AIRFLOW_HOME/logs/components/worker-<i>.log and serves
    no logs (the api-server reads the shared log folder).
    """

    settings: Settings
    count: int
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def log_dir(self) -> Path:
        return self.settings.airflow_home / "logs" / "components"

    def start(self) -> None:
        from harvestflow.airflow_runtime import spawn_logged

        self.log_dir.mkdir(parents=True, exist_ok=True)
        conc = int(self.settings["airflow"].get("worker_concurrency", 4))
        host = socket.gethostname()
        for i in range(1, self.count + 1):
            name = f"worker{i}@{host}"
            self.procs[name] = spawn_logged(
                worker_command(all_queues(self.settings), name, conc, serve_logs=False),
                worker_env(self.settings, name),
                self.log_dir / f"worker-{i}.log",
            )

    def dead(self) -> list[str]:
        return [name for name, p in self.procs.items() if p.poll() is not None]

    def stop(self, timeout_s: float = 30) -> None:
        """SIGTERM (Celery's warm shutdown), then the whole tree (tasks, crawlers) if left."""
        tree: list[psutil.Process] = []
        for proc in self.procs.values():
            with contextlib.suppress(psutil.NoSuchProcess):
                tree.extend(psutil.Process(proc.pid).children(recursive=True))
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        for p in tree:
            with contextlib.suppress(psutil.NoSuchProcess):
                if p.is_running():
                    p.kill()
