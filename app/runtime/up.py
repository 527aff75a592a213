"""``harvestflow up``: services, Airflow's components, the replay service (pywb, when its
virtualenv is set up) and the sample site, until Ctrl-C.

A second ``up`` reuses everything under the data directory (databases, object store, Airflow's
metadata and login). Ctrl-C (or SIGTERM) stops what this command started, and only that: a
service that was already running is left running. The stop asks the running crawlers first
(SIGTERM: each saves its frontier, closes its WARCs and writes an ``unfinished`` summary) and
kills those not gone after ``[crawler] stop_grace_s``; their jobs resume at the next ``up``.

A local worker (``--workers N``) that dies is started again, and said so; one that keeps dying
is left dead after a few tries (:class:`app.runtime.workers.LocalWorkers`). The other
components are not restarted: ``up`` stops when one of them dies.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from app.runtime import airflow_commands, airflow_logins, airflow_runtime, ldap_auth
from app.runtime.workers import LocalWorkers, stop_crawlers
from harvestflow import services
from harvestflow.services import OBJECT_STORES
from harvestflow.settings import Settings, get_settings

log = logging.getLogger(__name__)

COMPONENT_STOP_S = 8.0  # a worker's or component's SIGTERM, then SIGKILL (its whole tree)
# what a stop takes beyond stop_grace_s: the components' COMPONENT_STOP_S (SeaweedFS's
# STOP_DRAIN_S beside it), then PostgreSQL and the broker (a second or two)
STOP_MARGIN_S = 15.0
# how long `up` waits, before saying it is ready, for the Execution API's first answer (it
# goes on after that: the tasks' own calls wait for it then)
WARM_WAIT_S = 300.0


def run_up(sample_site: Callable[[Settings], Any] | None = None, workers: int = 0) -> int:
    """Run the platform until stopped; ``sample_site`` (the demo's, given by the CLI) starts a site
    to crawl, with a ``stop()``."""
    settings = get_settings()
    if workers and settings.executor != "celery":
        print(
            f'--workers needs [airflow] executor = "celery" (now {settings.executor!r}); '
            "set HARVESTFLOW_AIRFLOW__EXECUTOR=celery",
            flush=True,
        )
        return 2
    started = services.start_all(settings)
    procs = airflow_runtime.AirflowProcesses(settings)
    local_workers = LocalWorkers(settings, workers)
    site: Any = None
    replay: Any = None
    stopping_asked = False
    metrics: Any = None

    def _terminate(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _terminate)
    try:
        if sample_site is not None:
            site = sample_site(settings)
        metrics = _start_metrics(settings)
        print("preparing Airflow's metadata database and pools …", flush=True)
        # the preparation, then the components, forked from one process importing Airflow
        procs.start(
            airflow_commands.prepare_commands(settings), airflow_runtime.components(settings)
        )
        if not procs.wait_api():
            print(f"Airflow's api-server did not come up; see {procs.log_dir}", flush=True)
            return 1
        # its Execution API built now, while the workers and the replay service start, not in
        # the first task's first call (AirflowProcesses.warm_execution_api)
        warming = procs.warm_execution_api()
        # the workers once the api-server answers: a task they ran before would fail at once
        # (its supervisor cannot reach the Execution API), retries and run with it; due tasks
        # wait in the broker meanwhile
        local_workers.start()
        replay = _start_replay(settings)
        warming.join(WARM_WAIT_S)  # said ready once tasks are answered without that wait
        user, password = airflow_logins.ensure_login(settings)
        af = settings["airflow"]
        login = f"{user} / {password}"
        if ldap_auth.auth_of(settings) == "ldap":
            login = f"your account in the directory ({af['ldap_server']})"
        print(
            f"\nAirflow UI: http://{af['host']}:{af['port']}/  login: {login}\n"
            f"executor: {settings.executor}"
            + (f" (broker {settings.broker_url}, {workers} local worker(s))" if workers else "")
            + f"\ncomponent logs: {procs.log_dir}\nCtrl-C stops everything this command started.",
            flush=True,
        )
        if settings.executor == "celery" and not workers:
            print(
                "WARNING: no local worker (--workers N): every task waits in the broker's"
                " queues, for ever, until a `harvestflow worker` connects",
                flush=True,
            )
        while True:
            for said in local_workers.restart_dead():
                print(said, flush=True)
            ended = procs.ended()
            if ended:
                said = ", ".join(f"{name} ({how})" for name, how in ended.items())
                print(f"Airflow component(s) stopped: {said}; see {procs.log_dir}", flush=True)
                return 1
            if replay is not None and not replay.running():
                print(f"replay service stopped; see {replay.cfg.access_log}", flush=True)
                replay.stop()
                replay = None
            time.sleep(2)
    except KeyboardInterrupt:
        stopping_asked = True
        return 0
    finally:
        # a second Ctrl-C or SIGTERM must not cut the stop short (the services would be left)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if stopping_asked:
            print("stopping …", flush=True)
        stop_began = time.monotonic()
        grace = float(settings.get("crawler", "stop_grace_s", 20))
        stop_crawlers(local_workers.descendants() + procs.descendants(), grace)
        crawlers_s = time.monotonic() - stop_began
        # then together, each bounded: the workers and the components (COMPONENT_STOP_S), and
        # the object stores (SeaweedFS's STOP_DRAIN_S; no crawler is left to write to them);
        # PostgreSQL and the broker after them (the components' and workers' last reports)
        stops = [threading.Thread(target=local_workers.stop, args=(COMPONENT_STOP_S,))]
        if started:
            stops.append(
                threading.Thread(
                    target=services.stop_all, args=(settings,), kwargs={"only": OBJECT_STORES}
                )
            )
        for thread in stops:
            thread.daemon = True
            thread.start()
        procs.stop(COMPONENT_STOP_S)
        for thread in stops:
            thread.join()
        if replay is not None:
            replay.stop()
        if metrics is not None:
            metrics.stop()
        if site is not None:
            site.stop()
        if started:
            services.stop_all(settings, exclude=OBJECT_STORES)
        if stopping_asked:
            print(
                f"stopped in {time.monotonic() - stop_began:.1f} s (crawlers {crawlers_s:.1f} s;"
                f" bound: [crawler] stop_grace_s {grace:g} s + {STOP_MARGIN_S:g} s)",
                flush=True,
            )


def _start_replay(settings: Any) -> Any:
    """The replay service beside Airflow, or None (with the reason) when it cannot start."""
    from access.service import ReplayService
    from harvestflow.services import ServiceError

    replay = ReplayService(settings)
    try:
        replay.start()
    except ServiceError as exc:
        print(f"replay service not started: {exc}", flush=True)
        return None
    print(f"replay (pywb): {replay.cfg.url}all/  access log: {replay.cfg.access_log}", flush=True)
    return replay


def _start_metrics(settings: Any) -> Any:
    """The metrics service (``/metrics``, StatsD, alert rules), before Airflow sends to it."""
    from app.runtime.monitor_service import start_monitoring

    metrics = start_monitoring(settings)
    if metrics is not None:
        print(f"metrics (Prometheus): {metrics.url}", flush=True)
    return metrics
