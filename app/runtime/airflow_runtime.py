"""Run Airflow 3 on the platform's PostgreSQL: environment, metadata DB, pools, components.

Why not ``airflow standalone``: it forces its own choices, prints a generated password once and
mixes four components' output on one terminal. ``harvestflow up`` starts the api-server, the
scheduler and the dag-processor (the triggerer too with ``[airflow] triggerer = true``:
:func:`components`) with LocalExecutor or, with ``[airflow] executor = "celery"``, the
CeleryExecutor (workers are ``harvestflow worker`` processes, see :mod:`app.runtime.workers`),
each logging to its own file under AIRFLOW_HOME/logs/components, with a login we create and
print every time.

This module never imports Airflow: it prepares environment variables and runs Airflow's
commands, one or several in one process, with the running Python (:mod:`app.runtime.airflow_batch`,
:func:`batch_command`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import secrets
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from app.runtime import airflow_batch, airflow_launch, airflow_schema
from app.runtime.ldap_auth import ldap_env
from harvestflow.atomic import atomic_write_text
from harvestflow.package_data import data_path
from harvestflow.services.process import descendants, stop_groups
from harvestflow.settings import EXECUTORS, Settings

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


ADMIN_USER = "admin"
AIRFLOW_ROLES = ("VIEWER", "USER", "OP", "ADMIN")  # the simple auth manager's roles


def airflow_bin() -> str:
    candidate = Path(sys.executable).parent / "airflow"
    return str(candidate) if candidate.exists() else "airflow"


def airflow_env(settings: Settings, base: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for every Airflow process (and for dag.test() in this process)."""
    env = dict(os.environ if base is None else base)
    home = settings.airflow_home
    af = settings["airflow"]
    api_url = f"http://{af['host']}:{af['port']}"
    bin_dir = str(Path(sys.executable).parent)
    if bin_dir not in env.get("PATH", "").split(os.pathsep):
        env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    env.update(
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": settings.airflow_db_url,
            "AIRFLOW__CORE__EXECUTOR": EXECUTORS[settings.executor],
            # the dags/ and plugins/ packages, in the checkout or in site-packages
            "AIRFLOW__CORE__DAGS_FOLDER": str(data_path("dags")),
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(data_path("plugins")),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": ",".join(
                f"{name}:{role}" for name, role in login_users(settings).items()
            ),
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(password_file(settings)),
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{api_url}/execution/",
            "AIRFLOW__API__HOST": str(af["host"]),
            "AIRFLOW__API__PORT": str(af["port"]),
            "AIRFLOW__API__BASE_URL": api_url,
            "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(home / "logs"),
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "30",
            "AIRFLOW__SCHEDULER__ENABLE_HEALTH_CHECK": "False",
            "AIRFLOW__CORE__PARALLELISM": "8",
            # the settings file and data dir travel with every task
            "HARVESTFLOW_DATA_DIR": str(settings.data_dir),
            "HARVESTFLOW_CONFIG": str(settings.source),
        }
    )
    # our DAGs run once parsed; an operator (or a test that needs a quiet platform, starting
    # only the DAGs it uses) may say otherwise
    paused = {"AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False"}
    # our DAG files are static tables of contents: a changed file is parsed again at the next
    # refresh (30 s) whatever this says; an unchanged one every 10 min, not every 30 s (the
    # dag-processor re-importing every file was the largest CPU user of a 10,000-URL day). A
    # changed settings file (pool names) reaches the DAGs at the next `up` or within 10 min.
    parsing = {"AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "600"}
    defaults = {**paused, **parsing, **recovery_env(settings), **metrics_env(settings)}
    for key, value in defaults.items():
        env.setdefault(key, value)  # an operator's own AIRFLOW__ value wins
    env.update(ldap_env(settings))  # [airflow] auth = "ldap": FAB's auth manager, the directory
    if settings.executor == "celery":
        env.update(celery_env(settings))
    return env


def metrics_env(settings: Settings) -> dict[str, str]:
    """Airflow's own metrics as StatsD to our metrics service (``[monitoring] statsd_port``),
    tags in InfluxDB form so that DAG, task and state become Prometheus labels; nothing when
    ``[monitoring] enabled = false``."""
    from harvestflow.monitoring.config import MonitorConfig

    cfg = MonitorConfig.from_settings(settings)
    if not cfg.enabled:
        return {}
    return {
        "AIRFLOW__METRICS__STATSD_ON": "True",
        "AIRFLOW__METRICS__STATSD_HOST": cfg.host,
        "AIRFLOW__METRICS__STATSD_PORT": str(cfg.statsd_port),
        "AIRFLOW__METRICS__STATSD_PREFIX": "airflow",
        "AIRFLOW__METRICS__STATSD_INFLUXDB_ENABLED": "True",
    }


def recovery_env(settings: Settings) -> dict[str, str]:
    """How soon the scheduler fails a task instance whose worker is gone: after half of
    ``[crawler] job_lease_ttl_s`` without a heartbeat (Airflow's default is 300 s), checked
    every quarter of that.

    Why from the job lease's TTL: the crawl task's retry (5 s later) waits for the job's lease,
    which expires a TTL after the dead crawler's last heartbeat; failing the task instance
    sooner than that lets the retry be there, queued and started, when the lease frees, so a
    crawl slot is idle about one TTL (plus the crawler's start), and a task instance left
    "running" by a stopped platform is failed as soon as the scheduler runs again. The task
    supervisor heartbeats every ``[workers] min_heartbeat_interval`` (5 s), so a live task is
    never taken for a dead one; the timeout is at least 15 s for that reason.
    """
    timeout = max(int(float(settings.get("crawler", "job_lease_ttl_s", 90)) / 2), 15)
    return {
        "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": str(timeout),
        "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL": str(
            min(10.0, timeout / 4)
        ),
    }


def celery_env(settings: Settings) -> dict[str, str]:
    """The CeleryExecutor's keys (apache-airflow-providers-celery's [celery] section).

    The result backend is Airflow's own database on our PostgreSQL (``db+`` SQLAlchemy URL), so
    the broker only carries messages. The task instance's hostname is a worker's name when it has
    one (``harvestflow worker --name``), which tells apart several workers on one machine.
    """
    af = settings["airflow"]
    return {
        **publish_env(settings),
        "AIRFLOW__CELERY__BROKER_URL": settings.broker_url,
        "AIRFLOW__CELERY__RESULT_BACKEND": f"db+{settings.airflow_db_url}",
        "AIRFLOW__CELERY__WORKER_CONCURRENCY": str(int(af.get("worker_concurrency", 4))),
        "AIRFLOW__OPERATORS__DEFAULT_QUEUE": str(af.get("default_queue", "default")),
        "AIRFLOW__CORE__HOSTNAME_CALLABLE": "app.runtime.workers.task_hostname",
        # a crawl runs for hours: the broker must not hand a running task to another worker
        "AIRFLOW__CELERY_BROKER_TRANSPORT_OPTIONS__VISIBILITY_TIMEOUT": str(7 * 24 * 3600),
    }


PUBLISH_TIMEOUT_S = 2.0  # [celery] operation_timeout: one try at publishing a task


def publish_env(settings: Settings) -> dict[str, str]:
    """The scheduler publishes a due task again and again while the broker is away, for up to
    ``[broker] outage_s``, instead of failing it at the first refused connection.

    Why: Airflow's CeleryExecutor marks a task instance failed as soon as one publish raises,
    and Celery's default publish retries last under a second, so a broker restarted (or away
    for 30 s) while a crawl ended failed the chain's next tasks and the run. The Celery
    configuration of ``plugins/harvestflow_celery.py`` retries the connection without end; the
    executor's ``operation_timeout`` cuts each try after PUBLISH_TIMEOUT_S, which the executor
    counts as a try and publishes again at its next loop, up to ``task_publish_max_retries``.
    """
    outage = float(settings.get("broker", "outage_s", 120))
    return {
        "AIRFLOW__CELERY__CELERY_CONFIG_OPTIONS": "harvestflow_celery.CELERY_CONFIG",
        "AIRFLOW__CELERY__OPERATION_TIMEOUT": str(PUBLISH_TIMEOUT_S),
        "AIRFLOW__CELERY__TASK_PUBLISH_MAX_RETRIES": str(max(int(outage / PUBLISH_TIMEOUT_S), 1)),
    }


def password_file(settings: Settings) -> Path:
    return settings.airflow_home / "simple_auth_manager_passwords.json.generated"


def login_users(settings: Settings) -> dict[str, str]:
    """The simple auth manager's users and roles: admin, then ``[airflow] users``."""
    users = {ADMIN_USER: "admin"}
    for entry in settings["airflow"].get("users") or []:
        name, _, role = str(entry).partition(":")
        if not name.strip() or role.strip().upper() not in AIRFLOW_ROLES:
            raise ValueError(
                f"[airflow] users: {entry!r} is not name:ROLE (ROLE one of "
                f"{', '.join(r.lower() for r in AIRFLOW_ROLES)})"
            )
        users[name.strip()] = role.strip().lower()
    return users


def ensure_login(settings: Settings) -> tuple[str, str]:
    """Create each user's password once (kept across runs) and return the admin's login."""
    path = password_file(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    passwords: dict[str, str] = {}
    if path.exists() and path.read_text().strip():
        passwords = json.loads(path.read_text())
    missing = [name for name in login_users(settings) if name not in passwords]
    if missing:
        passwords.update({name: secrets.token_urlsafe(12) for name in missing})
        atomic_write_text(path, json.dumps(passwords) + "\n", chmod=0o600)
    return ADMIN_USER, passwords[ADMIN_USER]


def run_airflow(
    settings: Settings, *args: str, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run ``airflow ARGS`` (:func:`batch_command`: no interpreter teardown at its end); raise
    RuntimeError with its stderr when it fails, unless ``check`` is false."""
    cmd = batch_command(list(args))
    log.info("running airflow %s", " ".join(args))
    proc = subprocess.run(
        cmd, env=airflow_env(settings), capture_output=True, text=True, check=False
    )
    if check and proc.returncode != 0:
        raise RuntimeError(f"`airflow {' '.join(args)}` failed: {proc.stderr.strip()[-2000:]}")
    return proc


def pools(settings: Settings) -> dict[str, int]:
    af = settings["airflow"]
    return {
        af["high_priority_pool"]: int(af["high_priority_slots"]),
        af["low_priority_pool"]: int(af["low_priority_slots"]),
        **dict([settings.continuous_pool]),
    }


def batch_command(*commands: list[str]) -> list[str]:
    """The program running ``airflow ARGS`` for each ARGS of ``commands``, in order, in ONE
    process (:mod:`app.runtime.airflow_batch`: Airflow's start-up cost paid once, and no
    interpreter teardown at its end).

    Every Airflow command harvestflow runs goes through here, one command or several (the
    components, ``dags trigger``, the Celery workers, ``harvestflow airflow``): the same
    entry point, parser and options as the ``airflow`` program, 1.5-2 CPU-s cheaper each."""
    # -P: the working directory is not put first on sys.path (a folder there named like a
    # module would be imported instead of it)
    return [sys.executable, "-P", "-m", airflow_batch.__name__, json.dumps(commands)]


def run_airflow_batch(settings: Settings, *commands: list[str]) -> subprocess.CompletedProcess[str]:
    """Run ``airflow ARGS`` for each ARGS of ``commands``, in order, in ONE process
    (:func:`batch_command`); raise RuntimeError naming the command that failed, with the
    process's stderr, when one did (the later ones do not run)."""
    cmd = batch_command(*commands)
    log.info("running %s", " ; ".join(f"airflow {' '.join(args)}" for args in commands))
    proc = subprocess.run(
        cmd, env=airflow_env(settings), capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        named = re.search(airflow_batch.FAILED.format("(.*)"), proc.stderr)
        failed = named.group(1) if named else " ; ".join(" ".join(a) for a in commands)
        raise RuntimeError(f"`airflow {failed}` failed: {proc.stderr.strip()[-2000:]}")
    return proc


def prepare_commands(settings: Settings) -> list[list[str]]:
    """The Airflow commands that migrate the metadata DB (unless it is as the last migration
    left it: :mod:`app.runtime.airflow_schema`) and create the crawl pools (idempotent): one
    ``pools import`` for every pool (its slots and description set anew when it exists).
    Writes the pool file they read and the logins' password file."""
    settings.airflow_home.mkdir(parents=True, exist_ok=True)
    wanted = {
        name: {"slots": slots, "description": f"harvestflow crawl channel {name}"}
        for name, slots in pools(settings).items()
    }
    pool_file = settings.airflow_home / "pools.json"
    pool_file.write_text(json.dumps(wanted, indent=1))
    ensure_login(settings)
    commands = [["pools", "import", str(pool_file)]]
    if airflow_schema.needs_migration(settings):  # else as the last migration left it
        commands.insert(0, airflow_schema.MIGRATE)
    return commands


def prepare(settings: Settings) -> None:
    """Migrate Airflow's metadata DB and create the crawl pools (:func:`prepare_commands`), in
    one Airflow process: each one costs seconds of CPU to start. (``up`` runs them in its
    launcher instead: :meth:`AirflowProcesses.start`.)"""
    commands = prepare_commands(settings)
    run_airflow_batch(settings, *commands)
    airflow_schema.record_migrated(settings, commands)


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


@dataclass
class AirflowProcesses:
    """The components (:func:`components`), each in its own process group, logging to its
    own file."""

    settings: Settings
    # Popen-like: the launcher's components (airflow_launch.Component), or a test's own
    procs: dict[str, Any] = field(default_factory=dict)
    launched: airflow_launch.Launched | None = None

    @property
    def log_dir(self) -> Path:
        return self.settings.airflow_home / "logs" / "components"

    def start(self, prepare: list[list[str]] | None = None) -> None:
        """Run ``prepare`` (Airflow commands, :func:`prepare_commands`), then start the
        components, all forked from one process that imported Airflow once
        (:mod:`app.runtime.airflow_launch`); RuntimeError naming the command that failed when
        the preparation did (nothing is started then)."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.launched = airflow_launch.launch(
            [sys.executable, "-P"],
            prepare or [],
            {
                name: ([name, *extra], self.log_dir / f"{name}.log")
                for name, extra in components(self.settings).items()
            },
            COMPONENT_ENV,
            airflow_env(self.settings),
            self.log_dir.parent / "prepare.log",  # not a component: its own place
        )
        self.procs.update(self.launched.components)
        airflow_schema.record_migrated(self.settings, prepare or [])

    def dead(self) -> list[str]:
        return [name for name, p in self.procs.items() if p.poll() is not None]

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
