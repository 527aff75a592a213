"""Run Airflow 3's components for ``harvestflow up``, each in a process group of its own,
logging to its own file: :class:`AirflowProcesses`.

Why not ``airflow standalone``: it forces its own choices, prints a generated password once and
mixes four components' output on one terminal. ``harvestflow up`` starts the api-server, the
scheduler and the dag-processor (the triggerer too with ``[airflow] triggerer = true``:
:func:`components`) with LocalExecutor or, with ``[airflow] executor = "celery"``, the
CeleryExecutor (workers are ``harvestflow worker`` processes, see :mod:`app.runtime.workers`),
each logging to its own file under AIRFLOW_HOME/logs/components, with a login we create and
print every time (:mod:`app.runtime.airflow_logins`).

This module never imports Airflow: the components are forked by :mod:`app.runtime.airflow_launch`
after the preparation (:func:`app.runtime.airflow_commands.prepare_commands`), with the
environment of :func:`app.runtime.airflow_config.airflow_env`.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from app.runtime import airflow_launch, airflow_schema
from app.runtime.airflow_config import airflow_env
from harvestflow.services.process import GroupLeader, descendants, stop_groups
from harvestflow.settings import Settings

log = logging.getLogger(__name__)

# The scheduler and triggerer would serve task logs on 0.0.0.0:8793/8794; with LocalExecutor the
# api-server reads the log files directly, so nothing is served on other interfaces.
COMPONENTS: dict[str, tuple[str, ...]] = {
    "api-server": (),
    "scheduler": ("--skip-serve-logs",),
    "dag-processor": (),
    "triggerer": ("--skip-serve-logs",),
}


# The components start right after their launcher's `db migrate` (AirflowProcesses.start): the
# check each Airflow command makes first (Alembic's migration scripts loaded and compared with
# the database, ~1.2 CPU-s each) would only repeat it.
COMPONENT_ENV = {"AIRFLOW__DATABASE__CHECK_MIGRATIONS": "False"}


def components(settings: Settings) -> dict[str, tuple[str, ...]]:
    """The components ``up`` starts: :data:`COMPONENTS`, the triggerer only with
    ``[airflow] triggerer = true``.

    Why: the triggerer runs deferred tasks and nothing else, and harvestflow's DAGs defer none
    (tests/dags/test_dag_integrity.py checks it); idle, it still cost each start a process
    importing Airflow and its trigger runner (~8 CPU-s on the 2-core CI VM) and, every second,
    queries for triggers to take and clean (~1.8 CPU-s a minute, and PostgreSQL's answers:
    an idle platform's second largest user after the scheduler)."""
    return {n: a for n, a in COMPONENTS.items() if n != "triggerer" or settings.triggerer}


def spawn_logged(cmd: list[str], env: dict[str, str], logfile: Path) -> subprocess.Popen[bytes]:
    """Start ``cmd`` in a process group of its own, stdout and stderr appended to ``logfile``.

    Why its own group: stopping a component (or a local worker) signals the whole group, never
    the ``up`` process that started it. The parent closes its copy of the log file at once;
    the child keeps its own.
    """
    with open(logfile, "ab") as out:
        return subprocess.Popen(
            cmd,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )


def how_ended(proc: GroupLeader) -> str:
    """``exit status N``, ``killed by SIGNAME`` or ``exit status unknown …`` of an ended
    process (:meth:`AirflowProcesses.ended`)."""
    if isinstance(proc, airflow_launch.Component) and proc.unreported:
        return "exit status unknown: its launcher ended before it"
    code = proc.poll()
    if code is not None and code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
    return f"exit status {code}"


@dataclass
class AirflowProcesses:
    """The components (:func:`components`), each in its own process group, logging to its
    own file."""

    settings: Settings
    # the launcher's components (airflow_launch.Component), or processes started otherwise
    procs: dict[str, GroupLeader] = field(default_factory=dict)
    launched: airflow_launch.Launched | None = None

    @property
    def log_dir(self) -> Path:
        return self.settings.airflow_home / "logs" / "components"

    def start(self, prepare: list[list[str]], started: Mapping[str, Sequence[str]]) -> None:
        """Run ``prepare`` (Airflow commands,
        :func:`~app.runtime.airflow_commands.prepare_commands`), then start the components
        ``started`` (name: its extra arguments; ``up`` starts :func:`components`), all forked
        from one process that imported Airflow once (:mod:`app.runtime.airflow_launch`);
        RuntimeError naming the command that failed when the preparation did (nothing is
        started then)."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.launched = airflow_launch.launch(
            [sys.executable, "-P"],
            prepare,
            {
                name: ([name, *extra], self.log_dir / f"{name}.log")
                for name, extra in started.items()
            },
            COMPONENT_ENV,
            airflow_env(self.settings),
            self.log_dir.parent / "prepare.log",  # not a component: its own place
        )
        self.procs.update(self.launched.components)
        airflow_schema.record_migrated(self.settings, prepare)

    def dead(self) -> list[str]:
        return [name for name, p in self.procs.items() if p.poll() is not None]

    def ended(self) -> dict[str, str]:
        """How each component that is no longer running ended: its exit status, the signal
        that killed it, or that it is unknown (its launcher was gone before reporting it:
        a process of another parent cannot be waited for)."""
        return {name: how_ended(self.procs[name]) for name in self.dead()}

    def wait_api(self, timeout_s: float = 180) -> bool:
        import urllib.request

        af = self.settings["airflow"]
        url = f"http://{af['host']}:{af['port']}/api/v2/version"
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if "api-server" in self.dead():
                return False
            try:
                with urllib.request.urlopen(url, timeout=2) as resp:
                    if resp.status == 200:
                        return True
            except OSError:
                pass
            time.sleep(1)
        return False

    def warm_execution_api(self, timeout_s: float = 300) -> threading.Thread:
        """Ask the api-server's Execution API once, in a thread (the caller joins it), so that
        its first real caller does not wait for it to be built.

        Why: the Execution API (Cadwyn) builds its versioned routes and models on its first
        request, on the api-server's event loop, blocking every request meanwhile; the first
        task of a platform waited for it in its first call (23-57 s on a loaded 2-core VM) and,
        past its client's five tries, failed. Asked here, once the api-server answers, the
        build runs while the workers start.
        """
        af = self.settings["airflow"]
        url = f"http://{af['host']}:{af['port']}/execution/health"

        def ask() -> None:
            import urllib.request

            began = time.monotonic()
            try:
                with urllib.request.urlopen(url, timeout=timeout_s) as resp:
                    resp.read()
            except OSError as exc:
                log.warning("the Execution API did not answer %s: %s", url, exc)
                return
            log.info("the Execution API answered in %.1f s", time.monotonic() - began)

        thread = threading.Thread(target=ask, name="warm-execution-api", daemon=True)
        thread.start()
        return thread

    def descendants(self) -> list[psutil.Process]:
        """Every process below the components (task runners, crawlers), whatever its group."""
        return descendants(list(self.procs.values()))

    def stop(self, timeout_s: float = 30) -> None:
        tree = self.descendants()  # before the components exit and their children are reparented
        stop_groups(list(self.procs.values()), timeout_s)
        if self.launched is not None:
            self.launched.wait_launcher(timeout_s)  # it ends once it has reaped them
        left = [p for p in tree if p.is_running()]
        if left:
            log.info("stopping %d process(es) left by Airflow's tasks", len(left))
            for p in left:
                with contextlib.suppress(psutil.NoSuchProcess):
                    p.terminate()
            _, alive = psutil.wait_procs(left, timeout=3)
            for p in alive:
                log.warning("process %d (%s) did not stop on SIGTERM: killed", p.pid, p.name())
                with contextlib.suppress(psutil.NoSuchProcess):
                    p.kill()
