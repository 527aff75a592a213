"""The embedded Celery broker (Debian's redis-server): start/stop idempotent, on loopback,
under the data directory; the executor setting turns it on; an external broker is only checked."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from harvestflow import services as svc
from harvestflow.services.redis import EmbeddedRedis, ping, url_answers
from harvestflow.settings import SettingsError, load
from tests.support.environment import free_port


def test_redis_starts_once_answers_on_loopback_and_stops(tmp_path: Path) -> None:
    server = EmbeddedRedis(tmp_path / "redis", port=free_port())
    try:
        assert server.start() is True
        assert server.start() is False  # idempotent: the running one is reused
        assert server.running() and ping("127.0.0.1", server.port)
        assert url_answers(server.url)
        # bound to loopback only, its files under the data directory
        conf = (tmp_path / "redis" / "redis.conf").read_text()
        assert "bind 127.0.0.1\n" in conf and "appendonly yes" in conf
        assert (tmp_path / "redis" / "redis.pid").exists()
    finally:
        assert server.stop() is True
    assert server.stop() is False
    assert not server.running() and not url_answers(server.url)


def test_redis_refuses_a_port_taken_by_another_program(tmp_path: Path) -> None:
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        server = EmbeddedRedis(tmp_path / "redis", port=other.getsockname()[1])
        with pytest.raises(svc.ServiceError, match="taken by another program"):
            server.start()


def test_executor_setting_chooses_airflow_executor_and_celery_keys(tmp_path: Path) -> None:
    from app.runtime.airflow_config import airflow_env

    local = load(environ={"HARVESTFLOW_DATA_DIR": str(tmp_path)})
    env = airflow_env(local, base={})
    assert env["AIRFLOW__CORE__EXECUTOR"] == "LocalExecutor"
    assert not any(k.startswith("AIRFLOW__CELERY__") for k in env)

    celery = load(
        environ={"HARVESTFLOW_AIRFLOW__EXECUTOR": "celery", "HARVESTFLOW_BROKER__PORT": "16390"}
    )
    env = airflow_env(celery, base={})
    assert env["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor"
    assert env["AIRFLOW__CELERY__BROKER_URL"] == "redis://127.0.0.1:16390/0"
    assert env["AIRFLOW__CELERY__RESULT_BACKEND"] == "db+" + celery.airflow_db_url
    assert env["AIRFLOW__OPERATORS__DEFAULT_QUEUE"] == "default"

    with pytest.raises(SettingsError, match=r"executor = 'kubernetes'"):
        _ = load(environ={"HARVESTFLOW_AIRFLOW__EXECUTOR": "kubernetes"}).executor


def test_services_start_the_broker_only_with_the_celery_executor(services, monkeypatch) -> None:
    from harvestflow import settings as settings_mod

    assert "broker" not in {s.name for s in svc.status_all(services)}
    monkeypatch.setenv("HARVESTFLOW_AIRFLOW__EXECUTOR", "celery")
    settings_mod.reset()
    celery = settings_mod.get_settings()
    try:
        assert svc.start_all(celery) == ["redis"]
        status = {s.name: s for s in svc.status_all(celery)}["broker"]
        assert status.embedded and status.running
        assert (celery.data_dir / ".harvestflow-data-dir").exists()
    finally:
        assert svc.redis_for(celery).stop() is True
        settings_mod.reset()


def test_an_external_broker_that_does_not_answer_is_named(monkeypatch) -> None:
    port = free_port()
    settings = load(
        environ={
            "HARVESTFLOW_AIRFLOW__EXECUTOR": "celery",
            "HARVESTFLOW_BROKER__URL": f"redis://127.0.0.1:{port}/0",
        }
    )
    with pytest.raises(svc.ServiceError, match=f"127.0.0.1:{port}/0 does not answer"):
        svc.ensure_broker(settings)


def test_a_task_published_while_the_broker_is_away_goes_out_once_it_returns(
    tmp_path: Path,
) -> None:
    """The scheduler's Celery app (the configuration `up` and `harvestflow worker` give Airflow)
    keeps retrying a publish while the broker refuses connections, and the message is queued
    once the broker is back; Celery's default gave up in under a second and the executor then
    failed the task instance (a broker restarted mid-chain failed the run)."""
    import subprocess
    import sys
    import time

    from app.runtime.airflow_config import airflow_env

    port = free_port()
    environ = {
        "HARVESTFLOW_DATA_DIR": str(tmp_path),
        "HARVESTFLOW_AIRFLOW__EXECUTOR": "celery",
        "HARVESTFLOW_BROKER__PORT": str(port),
    }
    env = airflow_env(load(environ=environ))
    env.update(environ)
    env["AIRFLOW__CELERY__RESULT_BACKEND"] = "cache+memory://"  # no database needed here
    code = (
        "from airflow.providers.celery.executors.celery_executor_utils import app\n"
        "print('publishing', flush=True)\n"
        "app.send_task('execute_workload', args=('{}',), queue='publish-probe')\n"
        "print('published', flush=True)\n"
    )
    server = EmbeddedRedis(tmp_path / "redis", port=port)
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("publishing"):
                break
        time.sleep(3)  # the broker away: the publish retries
        assert proc.poll() is None, "".join(lines) + proc.stdout.read()
        server.start()
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0 and "published" in out, "".join(lines) + out
        import redis

        assert redis.Redis(port=port).llen("publish-probe") == 1
    finally:
        proc.kill()
        server.stop()
