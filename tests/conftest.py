"""Shared fixtures: real embedded PostgreSQL and SeaweedFS, once per test session.

Each pytest session gets its own data directory and free loopback ports, so several sessions
(developers, CI, benchmarks) can run side by side. ``db_engine`` gives every test a fresh harvest
database cloned from a migrated template (fast, and no test sees another's rows).
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from harvestflow import settings as settings_mod

pytest_plugins = ["tests.demo_fixture"]

TEMPLATE_DB = "harvestflow_tpl"

# The one way to let a test be skipped: the person running the tests asks for it by name.
ALLOW_SKIPS = "HARVESTFLOW_ALLOW_SKIPS"
ORACLE_BIN = Path(__file__).resolve().parent.parent / ".oracle-venv" / "bin"


def _skips_allowed() -> bool:
    return os.environ.get(ALLOW_SKIPS) == "1"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):  # type: ignore[no-untyped-def]
    """A skipped test, an expected failure (xfail) and an unexpected pass of one (XPASS) are
    failures, under CI or not, unless ``HARVESTFLOW_ALLOW_SKIPS=1``.

    Why: ``./run test`` installs every oracle and system tool the suite needs, so a skip (a
    missing pywb, a missing wget, a ``pytest.skip`` left in a test) would hide that a check
    did not run, on a developer's machine as much as in CI; an xfail hides a known failure the
    same way. Someone who wants a partial run where some test cannot run says so explicitly
    with the variable; choosing a subset with ``-k``/``-m`` deselects tests and skips none.
    The report is changed where it is made, so the test is named as failed in every summary
    (under pytest-xdist too: the worker sends the changed report); skips that no test report
    carries (a module skipped while collected) are failed by :class:`SkipGuard`.
    """
    outcome = yield
    report = outcome.get_result()
    if _skips_allowed():
        return
    if hasattr(report, "wasxfail"):
        what = "expected to fail and failed" if report.skipped else "expected to fail and passed"
        reason = report.wasxfail
        del report.wasxfail  # else the terminal files it under xfailed/xpassed
        report.outcome = "failed"
        report.longrepr = f"xfail, {what} (an xfail is a failure unless {ALLOW_SKIPS}=1): {reason}"
    elif report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped (a skip is a failure unless {ALLOW_SKIPS}=1): {reason}"


class SkipGuard:
    """Fails the run when any report is still a skip or an xfail at the end of the session.

    Why a second line: a module skipped at collection (``pytest.skip(allow_module_level=True)``,
    ``pytest.importorskip`` at module level, a skipped ``conftest``) makes a collection report,
    not a test report, and its tests never run; turned into a collection error it would stop the
    whole run. It is counted here instead, and the session's exit status set to 1 at its end.
    Under pytest-xdist the workers send every collection report that did not pass and every test
    report to the controller, whose hooks count them, so the exit status of ``pytest -n`` is set
    the same way. Anything a plugin reports as skipped past ``pytest_runtest_makereport`` is
    caught here as well.
    """

    def __init__(self) -> None:
        self.skips: list[str] = []

    def _count(self, report: pytest.CollectReport | pytest.TestReport) -> None:
        if _skips_allowed() or not (report.skipped or hasattr(report, "wasxfail")):
            return
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        self.skips.append(f"{report.nodeid or '<session>'}: {reason}")

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        self._count(report)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self._count(report)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.skips and session.exitstatus in (
            pytest.ExitCode.OK,
            pytest.ExitCode.NO_TESTS_COLLECTED,
        ):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter) -> None:  # type: ignore[no-untyped-def]
        if not self.skips:
            return
        terminalreporter.write_sep(
            "=", f"skipped, a failure unless {ALLOW_SKIPS}=1: {len(self.skips)}", red=True
        )
        for line in self.skips:
            terminalreporter.write_line(line)


def pytest_configure(config: pytest.Config) -> None:
    if not config.pluginmanager.has_plugin("harvestflow-skip-guard"):
        config.pluginmanager.register(SkipGuard(), "harvestflow-skip-guard")


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


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


_HANDED_OUT: set[int] = set()


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
        "HARVESTFLOW_AIRFLOW__PORT": str(free_port()),
        "HARVESTFLOW_SAMPLESITE__PORT": str(free_port()),
        "HARVESTFLOW_ACCESS__URL": f"http://127.0.0.1:{free_port()}/",
        "HARVESTFLOW_ACCESS__RESOLVER_PORT": str(free_port()),
        "HARVESTFLOW_ACCESS__PYWB_PORT": str(free_port()),
        "HARVESTFLOW_BROKER__PORT": str(free_port()),
    }


@pytest.fixture(scope="session")
def services() -> Iterator[settings_mod.Settings]:
    """Embedded PostgreSQL + SeaweedFS (and the replica SeaweedFS of ``[s3_replica]``) in a
    temporary data dir, migrated; yields Settings.

    The data dir is not under pytest's numbered temp folders: pytest rotates those when other
    sessions start, and a live database must not lose its files.
    """
    from harvestflow import db
    from harvestflow import services as svc

    data_dir = Path(tempfile.mkdtemp(prefix="harvestflow-test-"))
    env = session_env(data_dir)
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    settings_mod.reset()
    settings = settings_mod.get_settings()
    try:
        svc.start_all(settings)
        _make_template(settings)
        yield settings
    finally:
        db.dispose_engines()
        svc.stop_all(settings)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        settings_mod.reset()
        if not svc.postgres_for(settings).running():
            shutil.rmtree(data_dir, ignore_errors=True)


def _admin_engine(settings: settings_mod.Settings) -> sa.Engine:
    return sa.create_engine(
        f"{settings.postgres_server_url}/postgres", isolation_level="AUTOCOMMIT"
    )


def _make_template(settings: settings_mod.Settings) -> None:
    from harvestflow import db

    db.dispose_engines()
    admin = _admin_engine(settings)
    name = settings["postgres"]["harvest_db"]
    with admin.connect() as conn:
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


@pytest.fixture
def db_engine(services: settings_mod.Settings) -> Iterator[sa.Engine]:
    """An engine on a fresh, migrated, empty-but-reference-data harvest database."""
    from harvestflow import db

    reset_harvest_db(services)
    engine = db.get_engine(services.harvest_db_url)
    yield engine
    db.dispose_engines()


@pytest.fixture
def s3_client(services: settings_mod.Settings):  # type: ignore[no-untyped-def]
    import boto3

    s3 = services.s3
    return boto3.client(
        "s3",
        endpoint_url=s3.endpoint_url,
        aws_access_key_id=s3.access_key,
        aws_secret_access_key=s3.secret_key,
        region_name=s3.region,
    )


@pytest.fixture
def fresh_bucket(
    services: settings_mod.Settings, s3_client, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """A new empty bucket, made the configured one for the duration of the test."""
    name = f"test-{uuid.uuid4().hex[:12]}"
    s3_client.create_bucket(Bucket=name)
    monkeypatch.setenv("HARVESTFLOW_S3__BUCKET", name)
    settings_mod.reset()
    yield name
    settings_mod.reset()
