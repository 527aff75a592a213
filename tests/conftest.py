"""Shared fixtures: real embedded PostgreSQL and SeaweedFS, once per test session.

Each pytest session gets its own data directory and free loopback ports, so several sessions
(developers, CI, benchmarks) can run side by side. ``db_engine`` gives every test a fresh harvest
database cloned from a migrated template (fast, and no test sees another's rows).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import sqlalchemy as sa

from harvestflow import settings as settings_mod
from tests.support.environment import (
    _make_template,
    data_root,
    interrupt_as_from_a_terminal,
    reset_harvest_db,
    session_env,
)
from tests.support.last_user import STOPPED_AFTER_LAST_USER, LastUserTeardown

if TYPE_CHECKING:
    from tests.support.runstates import DagTests

pytest_plugins = [
    "tests.support.broker",
    "tests.support.browser",
    "tests.support.demo_fixture",
    "tests.support.platform_up",
]


# The one way to let a test be skipped: the person running the tests asks for it by name.
ALLOW_SKIPS = "HARVESTFLOW_ALLOW_SKIPS"


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


class TimesLog:
    """Appends each test phase's duration to ``$HARVESTFLOW_TEST_TIMES`` as it ends.

    Why: ``--durations`` prints only when the session ends, so a run killed for taking too long
    (the case that needs the figures) prints none; this file is written as the run goes.
    """

    def __init__(self, path: str) -> None:
        self.path = path

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        with open(self.path, "a", encoding="utf-8") as out:
            out.write(f"{report.duration:.2f}\t{report.when}\t{report.nodeid}\n")


def pytest_configure(config: pytest.Config) -> None:
    interrupt_as_from_a_terminal()  # before any worker or platform is started
    if not config.pluginmanager.has_plugin("harvestflow-skip-guard"):
        config.pluginmanager.register(SkipGuard(), "harvestflow-skip-guard")
    if not config.pluginmanager.has_plugin("harvestflow-last-user"):
        plugin = LastUserTeardown(STOPPED_AFTER_LAST_USER)
        config.pluginmanager.register(plugin, "harvestflow-last-user")
    times = os.environ.get("HARVESTFLOW_TEST_TIMES")
    if (
        times
        and not hasattr(config, "workerinput")
        and not config.pluginmanager.has_plugin("harvestflow-times")
    ):
        config.pluginmanager.register(TimesLog(times), "harvestflow-times")


def pytest_xdist_make_scheduler(config: pytest.Config, log):  # type: ignore[no-untyped-def]
    """Under ``--dist loadfile``, the files that share a session platform are one unit of work,
    sent to one worker, so the platform is built once per run and not once in each worker that
    got one of them: ``shared_up`` (`harvestflow up`, tests/support/platform_up.py) and
    ``demo_platform`` (`harvestflow demo`, tests/support/demo_fixture.py). Every other file is
    its own unit, as before."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    from tests.support.demo_fixture import DEMO_PLATFORM_FILES
    from tests.support.platform_up import SHARED_UP_FILES

    group = {path: "shared_up" for path in SHARED_UP_FILES}
    group.update({path: "demo_platform" for path in DEMO_PLATFORM_FILES})

    class SharedPlatformScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            return group.get(scope, scope)

    return SharedPlatformScheduling(config, log)


@pytest.fixture(scope="session")
def services() -> Iterator[settings_mod.Settings]:
    """Embedded PostgreSQL + SeaweedFS (and the replica SeaweedFS of ``[s3_replica]``) in a
    temporary data dir, migrated; yields Settings.

    The data dir is not under pytest's numbered temp folders: pytest rotates those when other
    sessions start, and a live database must not lose its files. It is in RAM when there is
    room (``data_root``: a database reset 10 times faster than on a busy disk).
    """
    from harvestflow import db
    from harvestflow import services as svc

    data_dir = Path(tempfile.mkdtemp(prefix="harvestflow-test-", dir=data_root()))
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


@pytest.fixture(scope="session")
def airflow_ready(services: settings_mod.Settings) -> settings_mod.Settings:
    """The session's services with Airflow's metadata database prepared (for ``dags test``):
    once per session (migrating, the pools and the logins are idempotent and take seconds of
    Airflow's CLI each)."""
    from app.runtime import airflow_commands

    airflow_commands.prepare(services)
    return services


@pytest.fixture(scope="session")
def airflow_runs(airflow_ready: settings_mod.Settings) -> Iterator[DagTests]:
    """The session's ``airflow dags test`` runs, in one Airflow process
    (tests/support/runstates.DagTests): each run still Airflow's own ``dags test``, started
    when its test asks, in that test's environment; Airflow's start-up paid once per pytest
    process, not once per run (~20 CPU-s each on the CI VM)."""
    from tests.support.runstates import dags_tests

    with dags_tests() as runs:
        yield runs


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
