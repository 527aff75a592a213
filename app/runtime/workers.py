"""Celery workers: ``harvestflow worker`` (any machine) and ``harvestflow up --workers N`` (local).

Why a command of ours around ``airflow celery worker``: a worker needs harvestflow's whole
environment (metadata DB, broker, dags/, settings file, data directory), must see the shared data
directory (checked before it takes a task: :mod:`harvestflow.services.datadir`), and several
workers on one machine need names of their own. A worker's name is its Celery hostname and also
the hostname its task instances record (``[core] hostname_callable`` = :func:`task_hostname`),
so the UI shows which worker ran which crawl.

Queues: crawl tasks go to the queue of their job's harvest channel (``crawl_high`` for selective
channels, ``crawl_low`` for snapshot channels: ``[airflow] high_priority_pool`` /
``low_priority_pool``), the continuous crawl's to ``crawl_continuous``, every other task to
``[airflow] default_queue``. A crawl machine is dedicated to a channel by its queues.
This module never imports Airflow (it runs Airflow's command in a process of its own).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from harvestflow.services.process import descendants, run_forwarding, stop_groups
from harvestflow.settings import Settings

log = logging.getLogger(__name__)

WORKER_NAME_ENV = "HARVESTFLOW_WORKER_NAME"


def task_hostname() -> str:
    """The hostname task instances record: the worker's name, else the machine's FQDN."""
    return os.environ.get(WORKER_NAME_ENV) or socket.getfqdn()


def all_queues(settings: Settings) -> list[str]:
    af = settings["airflow"]
    return [
        af["high_priority_pool"],
        af["low_priority_pool"],
        settings.continuous_pool[0],
        str(af.get("default_queue")),
    ]


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


def node_name(name: str) -> str:
    """The worker's name as Celery's node name and the task instances' hostname: Celery makes
    ``wA`` ``celery@wA``, so that form is used everywhere (a name with ``@`` is kept as it is).

    Why one form: ``celery inspect``, ``harvestflow services status`` and the worker's log name
    the node; the UI shows the task instance's hostname; an operator matches the two."""
    return name if "@" in name else f"celery@{name}"


def worker_command(
    queues: list[str],
    name: str,
    concurrency: int,
    *,
    serve_logs: bool = True,
) -> list[str]:
    """The program running ``airflow celery worker`` for one worker
    (:func:`~app.runtime.airflow_commands.batch_command`: a stopped worker ends without the
    interpreter's teardown, seconds of CPU less at each stop)."""
    from app.runtime.airflow_commands import batch_command

    args = [
        "celery",
        "worker",
        "--queues",
        ",".join(queues),
        "--celery-hostname",
        node_name(name),
        "--concurrency",
        str(concurrency),
    ]
    if not serve_logs:
        args.append("--skip-serve-logs")
    return batch_command(args)


def worker_env(settings: Settings, name: str) -> dict[str, str]:
    from app.runtime.airflow_config import airflow_env

    if settings.executor != "celery":
        raise ValueError(
            f'workers need [airflow] executor = "celery" (now {settings.executor!r}); set it in '
            f"{settings.source} or HARVESTFLOW_AIRFLOW__EXECUTOR=celery"
        )
    env = airflow_env(settings)
    env[WORKER_NAME_ENV] = node_name(name)
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
    grace = float(settings.get("crawler", "stop_grace_s", 20))

    def crawlers_first(worker: subprocess.Popen[bytes]) -> None:
        stop_crawlers(descendants([worker]), grace)

    return run_forwarding(cmd, env, before_stop=crawlers_first)


RESTART_LIMIT = 5  # restarts of one local worker within RESTART_WINDOW_S, then it is left dead
RESTART_WINDOW_S = 600.0
RESTART_BACKOFF_S = (2.0, 60.0)  # the first restart's delay, doubled each time up to the second


def crawler_processes(procs: list[psutil.Process]) -> list[psutil.Process]:
    """The crawler processes (``python -m crawler``) among ``procs``.

    Why by command line: a crawl task's crawler is a grandchild of Airflow's task supervisor, in
    the task runner's process group; stopping the platform asks the crawlers first (SIGTERM: they
    save their frontier, close their WARCs and write an ``unfinished`` summary), before the
    workers and components that would otherwise kill them mid-write.
    """
    found = []
    for p in procs:
        with contextlib.suppress(psutil.Error):
            cmd = p.cmdline()
            if cmd[1:3] == ["-m", "crawler"]:
                found.append(p)
    return found


def stop_crawlers(procs: list[psutil.Process], grace_s: float) -> None:
    """SIGTERM the crawlers among ``procs`` and wait up to ``grace_s`` for them; SIGKILL those
    left (their job resumes from its last checkpoint: the ``.open`` WARC is repaired)."""
    crawlers = crawler_processes(procs)
    if not crawlers:
        return
    log.info("asking %d crawler(s) to checkpoint and stop (grace %ss)", len(crawlers), grace_s)
    for p in crawlers:
        with contextlib.suppress(psutil.Error):
            p.terminate()
    _, alive = psutil.wait_procs(crawlers, timeout=grace_s)
    for p in alive:
        log.warning("crawler %d did not stop within %ss: killed", p.pid, grace_s)
        with contextlib.suppress(psutil.Error):
            p.kill()


@dataclass
class LocalWorkers:
    """N local workers for a single-machine trial (``harvestflow up --workers N``).

    Each listens to every queue, logs to AIRFLOW_HOME/logs/components/worker-<i>.log and serves
    no logs (the api-server reads the shared log folder). A worker that dies is started again
    (:meth:`restart_dead`), after a delay that doubles with each restart, and no more than
    RESTART_LIMIT times in RESTART_WINDOW_S: one lost worker must not stop the platform, and a
    worker that crashes at start must not spin.
    """

    settings: Settings
    count: int
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    restarts: dict[str, list[float]] = field(default_factory=dict)
    due: dict[str, float] = field(default_factory=dict)  # dead worker -> when it restarts
    given_up: set[str] = field(default_factory=set)

    @property
    def log_dir(self) -> Path:
        return self.settings.airflow_home / "logs" / "components"

    def _spawn(self, i: int, name: str) -> subprocess.Popen[bytes]:
        from app.runtime.airflow_runtime import spawn_logged

        conc = int(self.settings["airflow"].get("worker_concurrency", 4))
        return spawn_logged(
            worker_command(all_queues(self.settings), name, conc, serve_logs=False),
            worker_env(self.settings, name),
            self.log_dir / f"worker-{i}.log",
        )

    def start(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        host = socket.gethostname()
        for i in range(1, self.count + 1):
            name = f"worker{i}@{host}"
            self.procs[name] = self._spawn(i, name)

    def dead(self) -> list[str]:
        return [name for name, p in self.procs.items() if p.poll() is not None]

    def restart_dead(self, now: float | None = None) -> list[str]:
        """Start again each worker found dead whose delay has passed; returns what was done,
        one sentence per worker, for ``up``'s output (nothing when nothing happened)."""
        now = time.monotonic() if now is None else now
        said: list[str] = []
        for i, (name, proc) in enumerate(list(self.procs.items()), 1):
            if proc.poll() is None or name in self.given_up:
                continue
            recent = [t for t in self.restarts.get(name, []) if now - t < RESTART_WINDOW_S]
            self.restarts[name] = recent
            if name not in self.due:
                if len(recent) >= RESTART_LIMIT:
                    self.given_up.add(name)
                    said.append(
                        f"worker {name} exited with {proc.returncode} after {len(recent)}"
                        f" restarts in {RESTART_WINDOW_S:.0f}s: not restarted again; see"
                        f" {self.log_dir / f'worker-{i}.log'}"
                    )
                    continue
                first, cap = RESTART_BACKOFF_S
                delay = min(first * 2 ** len(recent), cap)
                self.due[name] = now + delay
                said.append(
                    f"worker {name} exited with {proc.returncode}; restarting it in {delay:.0f}s"
                    f" (restart {len(recent) + 1} of at most {RESTART_LIMIT} in"
                    f" {RESTART_WINDOW_S:.0f}s)"
                )
                # what the dead worker left (its pool, a task supervisor) must not keep its name
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
            if now >= self.due[name]:
                del self.due[name]
                self.restarts[name].append(now)
                self.procs[name] = self._spawn(i, name)
                said.append(f"worker {name} restarted (pid {self.procs[name].pid})")
        return said

    def descendants(self) -> list[psutil.Process]:
        return descendants(list(self.procs.values()))

    def stop(self, timeout_s: float = 15) -> None:
        """SIGTERM (Celery's warm shutdown), then the whole tree (tasks, crawlers) if left.

        The crawlers are asked first (:func:`stop_crawlers`, by the caller or here), so a
        running task ends at once as an unfinished crawl, and the warm shutdown has nothing
        left to wait for."""
        tree = self.descendants()
        stop_groups(list(self.procs.values()), timeout_s)
        for p in tree:
            with contextlib.suppress(psutil.NoSuchProcess):
                if p.is_running():
                    p.kill()
