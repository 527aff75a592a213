"""Ports, oracles and the environment of a test's own data directory (the session's services use them too)."""

from __future__ import annotations

import os
import random
import socket
from pathlib import Path

import pytest
import sqlalchemy as sa

from harvestflow import settings as settings_mod

TEMPLATE_DB = "harvestflow_tpl"


ORACLE_BIN = Path(__file__).resolve().parents[2] / ".oracle-venv" / "bin"


def oracle(name: str) -> Path:
    """A test oracle's program in ``.oracle-venv/bin``; fails the test, saying how to get it,
    when it is missing (never a silent pass nor a skip)."""
    path = ORACLE_BIN / name
    if not path.exists():
        pytest.fail(
            f"test oracle {name} missing at {path}: run bash scripts/setup-oracles.sh"
            " (./run test does)",
            pytrace=False,
        )
    return path


RAM_DIR = Path("/dev/shm")
RAM_DIR_MIN_FREE = 4 << 30  # bytes: room for two sessions' databases and platforms, and more


DATA_ROOT_ENV = "HARVESTFLOW_TEST_DATA_ROOT"  # a directory: the session's data there instead


def data_root() -> str | None:
    """Where a session's services and platforms keep their data: ``$HARVESTFLOW_TEST_DATA_ROOT``
    when set (to measure on a disk, as on a CI machine whose ``/dev/shm`` is small), else in RAM
    (``/dev/shm``) when it has room, else the system's temporary directory (None: ``tempfile``'s
    default).

    Why: the embedded PostgreSQL runs with ``fsync=on``, so every database a test resets (a
    ``CREATE DATABASE`` from the template, 10 MB of WAL flushed) and every commit of Airflow's
    migrations waits for the disk; on a disk shared by other jobs a reset took 1.5 s, in RAM
    0.15 s. Nothing here is kept after the session.
    """
    if os.environ.get(DATA_ROOT_ENV):
        return os.environ[DATA_ROOT_ENV]
    try:
        stat = os.statvfs(RAM_DIR)
    except OSError:
        return None
    return str(RAM_DIR) if stat.f_bavail * stat.f_frsize >= RAM_DIR_MIN_FREE else None


_HANDED_OUT: set[int] = set()  # ports this process gave out (never twice)


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _worker_ports() -> range:
    """This pytest-xdist worker's own share of 10000-19999 (the whole of it without xdist).

    Why shares: a port is checked free when a test's settings are made and bound minutes later
    (the demo's sample site, after PostgreSQL, S3 and Airflow's migration); drawn from one range,
    the other worker could take it meanwhile ("Address already in use", seen in a full run).
    """
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    index = int(worker[2:]) if worker.startswith("gw") and worker[2:].isdigit() else 0
    size = 10000 // max(1, count)
    start = 10000 + (index % max(1, count)) * size
    return range(start, start + size)


def free_port(*, with_grpc: bool = False) -> int:
    """A free loopback port (and port+10000 free too, for SeaweedFS' gRPC ports).

    Drawn below Linux's ephemeral range (32768+), so that no outgoing connection can take it
    between this check and the bind; from this worker's share of 10000-19999 (gRPC twins in
    20000-29999), so that two workers never draw the same; never the same twice in a session.
    """
    ports = _worker_ports()
    for _ in range(500):
        port = random.choice(ports)
        if port in _HANDED_OUT:
            continue
        if _port_free(port) and (not with_grpc or _port_free(port + 10000)):
            _HANDED_OUT.add(port)
            return port
    raise RuntimeError(f"no free port found in {ports}")


def session_env(data_dir: Path) -> dict[str, str]:
    airflow_port = str(free_port())
    return {
        "HARVESTFLOW_DATA_DIR": str(data_dir),
        "HARVESTFLOW_POSTGRES__PORT": str(free_port()),
        # not the default (200): test_services checks the server was started with it
        "HARVESTFLOW_POSTGRES__MAX_CONNECTIONS": "250",
        "HARVESTFLOW_S3__S3_PORT": str(free_port(with_grpc=True)),
        "HARVESTFLOW_S3__MASTER_PORT": str(free_port(with_grpc=True)),
        "HARVESTFLOW_S3__VOLUME_PORT": str(free_port(with_grpc=True)),
        "HARVESTFLOW_S3__FILER_PORT": str(free_port(with_grpc=True)),
        # preservation's second copy: a second embedded SeaweedFS ([s3_replica])
        "HARVESTFLOW_S3_REPLICA__S3_PORT": str(free_port(with_grpc=True)),
        "HARVESTFLOW_S3_REPLICA__MASTER_PORT": str(free_port(with_grpc=True)),
        "HARVESTFLOW_S3_REPLICA__VOLUME_PORT": str(free_port(with_grpc=True)),
        "HARVESTFLOW_S3_REPLICA__FILER_PORT": str(free_port(with_grpc=True)),
        "HARVESTFLOW_AIRFLOW__PORT": airflow_port,
        # the curator pages are on that Airflow (the gateway asks them about logins)
        "HARVESTFLOW_ACCESS__CURATOR_URL": f"http://127.0.0.1:{airflow_port}/curator/",
        "HARVESTFLOW_SAMPLESITE__PORT": str(free_port()),
        "HARVESTFLOW_ACCESS__URL": f"http://127.0.0.1:{free_port()}/",
        "HARVESTFLOW_ACCESS__RESOLVER_PORT": str(free_port()),
        "HARVESTFLOW_ACCESS__PYWB_PORT": str(free_port()),
        "HARVESTFLOW_BROKER__PORT": str(free_port()),
        "HARVESTFLOW_MONITORING__PORT": str(free_port()),
        "HARVESTFLOW_MONITORING__STATSD_PORT": str(free_port()),
    }


def _admin_engine(settings: settings_mod.Settings) -> sa.Engine:
    return sa.create_engine(
        f"{settings.postgres_server_url}/postgres", isolation_level="AUTOCOMMIT"
    )


# The session's own cluster only (never a product default): a commit need not wait for its WAL
# to reach the disk, nor a page's first change after a checkpoint log the whole page. A crash of
# the machine could lose the last commits: the session's data is thrown away anyway. (``fsync``
# itself is on the server's command line, ``-c fsync=on``, which outranks ALTER SYSTEM.)
TEST_CLUSTER_SETTINGS = {
    "max_wal_size": "192MB",
    "synchronous_commit": "off",
    "full_page_writes": "off",
}


def _make_template(settings: settings_mod.Settings) -> None:
    """The migrated harvest DB copied as the template of every reset; the server's WAL kept
    small (each reset writes the template's 10 MB into it: the default 1 GB would take that much
    of the RAM the data dir may be in, :func:`data_root`) and its commits not waiting for the
    disk (:data:`TEST_CLUSTER_SETTINGS`)."""
    from harvestflow import db

    db.dispose_engines()
    admin = _admin_engine(settings)
    name = settings["postgres"]["harvest_db"]
    with admin.connect() as conn:
        for key, value in TEST_CLUSTER_SETTINGS.items():
            conn.execute(sa.text(f"ALTER SYSTEM SET {key} = '{value}'"))
        conn.execute(sa.text("SELECT pg_reload_conf()"))
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{TEMPLATE_DB}"'))
        conn.execute(sa.text(f'CREATE DATABASE "{TEMPLATE_DB}" TEMPLATE "{name}"'))
    admin.dispose()


def reset_harvest_db(settings: settings_mod.Settings) -> None:
    """Replace the harvest DB by a fresh copy of the migrated template."""
    from harvestflow import db

    db.dispose_engines()
    admin = _admin_engine(settings)
    name = settings["postgres"]["harvest_db"]
    with admin.connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        conn.execute(sa.text(f'CREATE DATABASE "{name}" TEMPLATE "{TEMPLATE_DB}"'))
    admin.dispose()


def interrupt_as_from_a_terminal() -> None:
    """Let the processes the tests start take SIGINT as a foreground command does.

    Why: a suite started in the background (a shell's ``&``, ``nohup``, a CI runner's
    non-interactive shell) inherits SIGINT ignored, and an ignored signal stays ignored across
    exec, so every ``harvestflow up`` the tests start would too: the tests stop ``up`` with
    SIGINT, as Ctrl-C does, and each such stop then waited out its timeout (180 s) before the
    kill. A Python handler is reset to the default at exec, so the children start with it.
    """
    import signal

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
