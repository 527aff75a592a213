"""Start, stop and inspect the platform's services (embedded or external).

A configured external PostgreSQL URL or S3 endpoint replaces the embedded server: then we only
check that it answers, and never start or stop it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from dataclasses import dataclass

from harvestflow.s3 import replica_embedded, replica_target
from harvestflow.services import replica
from harvestflow.services.datadir import check_data_dir, write_data_dir_marker
from harvestflow.services.postgres import EmbeddedPostgres, ServiceError, port_open
from harvestflow.services.redis import EmbeddedRedis, url_answers
from harvestflow.services.seaweedfs import EmbeddedSeaweedFS
from harvestflow.settings import Settings, get_settings

log = logging.getLogger(__name__)

__all__ = [
    "OBJECT_STORES",
    "EmbeddedPostgres",
    "EmbeddedRedis",
    "EmbeddedSeaweedFS",
    "ServiceError",
    "ServiceStatus",
    "check_data_dir",
    "ensure_bucket",
    "postgres_for",
    "redis_for",
    "seaweedfs_for",
    "start_all",
    "status_all",
    "stop_all",
    "write_data_dir_marker",
]


def postgres_for(settings: Settings) -> EmbeddedPostgres:
    pg = settings["postgres"]
    return EmbeddedPostgres(
        settings.path(pg["data_subdir"]),
        host=pg["host"],
        port=int(pg["port"]),
        max_connections=int(pg.get("max_connections", 200)),
    )


def seaweedfs_for(settings: Settings) -> EmbeddedSeaweedFS:
    s3 = settings["s3"]
    return EmbeddedSeaweedFS(
        settings.path(s3["data_subdir"]),
        host=s3["host"],
        s3_port=int(s3["s3_port"]),
        master_port=int(s3["master_port"]),
        volume_port=int(s3["volume_port"]),
        filer_port=int(s3["filer_port"]),
        access_key=s3["access_key"],
        secret_key=s3["secret_key"],
    )


def redis_for(settings: Settings) -> EmbeddedRedis:
    broker = settings["broker"]
    return EmbeddedRedis(
        settings.path(broker["data_subdir"]), host=broker["host"], port=int(broker["port"])
    )


def ensure_broker(settings: Settings) -> bool:
    """With the celery executor: start the embedded broker (True if started) or check the
    external one (a clear error when it does not answer). Nothing with the local executor."""
    if settings.executor != "celery":
        return False
    if settings.broker_embedded:
        return redis_for(settings).start()
    if not url_answers(settings.broker_url):
        raise ServiceError(
            f"the Celery broker at [broker] url {settings.broker_url} does not answer; start it,"
            " or correct the url (HARVESTFLOW_BROKER__URL)"
        )
    return False


@dataclass
class ServiceStatus:
    name: str
    embedded: bool
    running: bool
    address: str
    off: bool = False  # not run by this deployment's settings (then not running either)

    def line(self) -> str:
        kind = "embedded" if self.embedded else "external"
        state = "off" if self.off else "running" if self.running else "stopped"
        return f"{self.name:<13} {kind:<9} {state:<8} {self.address}"


def ensure_bucket(settings: Settings) -> None:
    """Create the preservation bucket if missing (idempotent)."""
    from botocore.exceptions import ClientError

    from harvestflow.s3 import s3_client

    s3 = settings.s3
    client = s3_client(settings)
    try:
        client.head_bucket(Bucket=s3.bucket)
    except ClientError:
        client.create_bucket(Bucket=s3.bucket)
        log.info("created bucket %s", s3.bucket)


def start_all(settings: Settings | None = None, *, migrate: bool = True) -> list[str]:
    """Start the embedded services (idempotent), create the databases, apply migrations.

    The servers (PostgreSQL, SeaweedFS, the replica's SeaweedFS) start at once, each in a
    thread, and the databases are created and migrated while the object stores are still
    coming up: nothing of one server depends on another, and each SeaweedFS takes 4-6 s to
    answer, which every ``up``, ``services start`` and test session paid one after the other.
    A failure is the one the sequential start met first (PostgreSQL's, then the databases',
    then SeaweedFS's, then the replica's), raised once every start has ended, and what is left
    running is what it left: the servers before the failure; those after it that started
    beside it are stopped again.
    """
    from concurrent.futures import ThreadPoolExecutor

    from harvestflow import db

    settings = settings or get_settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    pg, s3, replica_server = (
        postgres_for(settings) if settings.postgres_embedded else None,
        seaweedfs_for(settings) if settings.s3_embedded else None,
        replica.replica_seaweedfs_for(settings),
    )
    servers = {"postgres": pg, "seaweedfs": s3, replica.NAME: replica_server}
    started: list[str] = []
    with ThreadPoolExecutor(max_workers=3, thread_name_prefix="start") as pool:
        began = {
            name: pool.submit(server.start)
            for name, server in servers.items()
            if server is not None
        }

        def started_now(name: str) -> None:
            """Wait for ``name``'s start: its error raised, or its name kept if it started."""
            if name in began and began.pop(name).result():
                started.append(name)

        try:
            started_now("postgres")
            db.ensure_database(settings.harvest_db_url)
            db.ensure_database(settings.airflow_db_url)
            if migrate:
                applied = db.migrate(db.get_engine(settings.harvest_db_url))
                if applied:
                    log.info("applied migrations %s", ", ".join(applied))
            started_now("seaweedfs")
            ensure_bucket(settings)
            started_now(replica.NAME)
            replica.ensure_replica_bucket(settings)
        except BaseException:
            # what the sequential start would not have started yet is stopped again
            for name, future in began.items():
                server = servers[name]
                assert server is not None  # began holds the servers this machine runs
                if future.exception() is None and future.result():
                    server.stop()
            raise
    if ensure_broker(settings):
        started.append("redis")
    write_data_dir_marker(settings.data_dir)
    return started


OBJECT_STORES = frozenset({"seaweedfs", replica.NAME})


def stop_all(
    settings: Settings | None = None,
    *,
    only: Collection[str] | None = None,
    exclude: Collection[str] = (),
) -> list[str]:
    """Stop the embedded services, all at once (each its own way; SeaweedFS takes a while), so
    a stop of the platform is as long as the slowest of them, not their sum. ``only`` /
    ``exclude``: a subset by name (``up`` stops the object stores beside Airflow's components,
    the database and the broker after them)."""
    from concurrent.futures import ThreadPoolExecutor

    settings = settings or get_settings()
    stops: dict[str, Callable[[], bool]] = {replica.NAME: lambda: replica.stop_replica(settings)}
    if settings.broker_embedded:  # whatever the executor now
        stops["redis"] = redis_for(settings).stop
    if settings.s3_embedded:
        stops["seaweedfs"] = seaweedfs_for(settings).stop
    if settings.postgres_embedded:
        from harvestflow import db

        db.dispose_engines()
        stops["postgres"] = postgres_for(settings).stop
    stops = {
        name: stop
        for name, stop in stops.items()
        if (only is None or name in only) and name not in exclude
    }
    if not stops:
        return []
    with ThreadPoolExecutor(max_workers=len(stops)) as pool:
        done = {name: pool.submit(stop) for name, stop in stops.items()}
    order = ("redis", "seaweedfs", "postgres", replica.NAME)
    return [name for name in order if name in done and done[name].result()]


def status_all(settings: Settings | None = None) -> list[ServiceStatus]:
    settings = settings or get_settings()
    pg = settings["postgres"]
    if settings.postgres_embedded:
        pg_running = postgres_for(settings).running()
        pg_addr = f"{pg['host']}:{pg['port']} data {settings.path(pg['data_subdir'])}"
    else:
        from sqlalchemy.engine import make_url

        url = make_url(settings.postgres_server_url)
        pg_running = port_open(url.host or "127.0.0.1", url.port or 5432)
        pg_addr = url.render_as_string(hide_password=True)
    s3_running = (
        seaweedfs_for(settings).running()
        if settings.s3_embedded
        else _endpoint_answers(settings.s3.endpoint_url)
    )
    found = [
        ServiceStatus("postgresql", settings.postgres_embedded, pg_running, pg_addr),
        ServiceStatus("s3", settings.s3_embedded, s3_running, settings.s3.endpoint_url),
        replay_status(settings),
    ]
    replica_running = replica.replica_running(settings)
    target = replica_target(settings)
    if replica_running is not None and target is not None:
        found.insert(
            2,
            ServiceStatus(
                "s3-replica", replica_embedded(settings), replica_running, target.endpoint_url
            ),
        )
    if settings.executor == "celery":
        broker_running = (
            redis_for(settings).running()
            if settings.broker_embedded
            else url_answers(settings.broker_url)
        )
        found.append(
            ServiceStatus("broker", settings.broker_embedded, broker_running, settings.broker_url)
        )
    return found + airflow_status(settings)


def airflow_status(settings: Settings) -> list[ServiceStatus]:
    """Airflow's api-server and the components it reports healthy, and with the celery
    executor each worker that answers on the broker (or a line saying none does)."""
    from harvestflow.services.cluster import (
        HEALTH_COMPONENTS,
        airflow_health,
        api_base,
        celery_workers,
    )

    health = airflow_health(settings)
    found = [ServiceStatus("api-server", True, health is not None, api_base(settings))]
    for name in HEALTH_COMPONENTS:
        if name == "triggerer" and not settings.triggerer:
            why = "not run: [airflow] triggerer = false (no DAG defers a task)"
            found.append(ServiceStatus(name, True, False, why, off=True))
            continue
        entry = (health or {}).get(name) or {}
        beat = next((str(v) for k, v in entry.items() if k.endswith("heartbeat")), "")
        healthy = entry.get("status") == "healthy"
        found.append(
            ServiceStatus(name.replace("_", "-"), True, healthy, f"last heartbeat {beat or '-'}")
        )
    if settings.executor == "celery":
        names = celery_workers(settings)
        if not names:
            found.append(
                ServiceStatus("worker", True, False, "no Celery worker answers: tasks wait")
            )
        for name in names or []:
            found.append(ServiceStatus("worker", True, True, name))
    return found


def replay_status(settings: Settings) -> ServiceStatus:
    """The replay service (``harvestflow access serve``): pywb's home page and our resolver's
    health page both answer. Read from the settings only (core does not import ``access``)."""
    url = str(settings.get("access", "url", "") or "http://127.0.0.1:8090/").rstrip("/") + "/"
    # the resolver listens on loopback only, whatever the gateway's address (access.config)
    resolver = f"http://127.0.0.1:{int(settings.get('access', 'resolver_port', 8091))}/health"
    running = _http_ok(url) and _http_ok(resolver)
    return ServiceStatus("replay", True, running, f"{url} (WARC resolver {resolver[:-7]})")


def _http_ok(url: str) -> bool:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return 200 <= int(resp.status) < 400
    except (OSError, urllib.error.URLError):
        return False


def _endpoint_answers(url: str) -> bool:
    from urllib.parse import urlparse

    parsed = urlparse(url)
    return port_open(parsed.hostname or "127.0.0.1", parsed.port or 443)
