"""Airflow's configuration for harvestflow, as the environment of every Airflow process:
:func:`airflow_env` (``AIRFLOW__SECTION__KEY`` variables), derived from the settings.

Why environment variables, not an airflow.cfg we write: Airflow reads them before its
configuration file, in every process it starts (components, task runners, the tests' ``dags
test``), so one function decides them all, from the settings the rest of harvestflow reads.
Airflow writes its own airflow.cfg (generated secrets) in the Airflow home; an operator's own
``AIRFLOW__`` variable wins over each default marked so below.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from app.runtime.airflow_logins import login_users, password_file
from app.runtime.ldap_auth import ldap_env
from harvestflow.package_data import data_path
from harvestflow.settings import EXECUTORS, Settings


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
