"""`harvestflow services start|status|stop` on a fresh data dir: idempotent, clean stop, reuse."""

from __future__ import annotations

import subprocess

from harvestflow.services.postgres import port_open
from tests.support.platform_cli import HARVESTFLOW, isolated_env


def _run(env: dict[str, str], *args: str) -> str:
    proc = subprocess.run(
        [HARVESTFLOW, *args], env=env, capture_output=True, text=True, timeout=240, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_services_start_stop_cycle_reuses_state(tmp_path) -> None:
    env = isolated_env(tmp_path / "var")
    pg_port = int(env["HARVESTFLOW_POSTGRES__PORT"])
    s3_port = int(env["HARVESTFLOW_S3__S3_PORT"])
    try:
        out = _run(env, "services", "start")
        assert "started: postgres, seaweedfs" in out
        assert port_open("127.0.0.1", pg_port) and port_open("127.0.0.1", s3_port)
        assert "nothing (already running)" in _run(env, "services", "start")
        assert "applied: nothing" in _run(env, "db", "migrate")

        out = _run(env, "services", "stop")
        assert "stopped: seaweedfs, postgres" in out
        assert not port_open("127.0.0.1", pg_port)
        assert not port_open("127.0.0.1", s3_port)
        assert "stopped" in _run(env, "services", "status")

        # a second start reuses the data: the schema is still there, nothing to migrate
        _run(env, "services", "start")
        assert "applied: nothing" in _run(env, "db", "migrate")
    finally:
        subprocess.run([HARVESTFLOW, "services", "stop"], env=env, capture_output=True, timeout=240)


def test_port_taken_by_another_program_gives_a_clear_error(tmp_path) -> None:
    import socket

    env = isolated_env(tmp_path / "var")
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", int(env["HARVESTFLOW_POSTGRES__PORT"])))
        blocker.listen()
        proc = subprocess.run(
            [HARVESTFLOW, "services", "start"], env=env, capture_output=True, text=True, timeout=240
        )
    assert proc.returncode == 2
    assert "is taken by another program" in proc.stderr
    assert "HARVESTFLOW_POSTGRES__PORT" in proc.stderr
