"""The ``harvestflow`` command's own answers, through the installed command as a subprocess:
a command that needs the harvest database while it is not running says so in one line (which
database, where, what to run), never with a SQLAlchemy traceback."""

from __future__ import annotations

import subprocess

import pytest

from tests.support.platform_cli import HARVESTFLOW, isolated_env


@pytest.mark.parametrize(
    "command",
    [["jobs", "pause", "999999"], ["jobs", "list"], ["definitions", "list"]],
    ids=" ".join,
)
def test_a_command_needing_the_stopped_database_says_so_in_one_line(tmp_path, command) -> None:
    env = isolated_env(tmp_path / "var")  # its own data dir and ports: nothing runs there
    port = env["HARVESTFLOW_POSTGRES__PORT"]
    proc = subprocess.run(
        [HARVESTFLOW, *command], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "sqlalchemy" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    (line,) = lines
    assert "harvest database 'harvestflow'" in line
    assert f"127.0.0.1:{port}" in line
    assert "run `harvestflow services start`" in line
