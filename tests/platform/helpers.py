"""Helpers for tests that run the ``harvestflow`` command in its own data directory."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.conftest import session_env

HARVESTFLOW = str(Path(sys.executable).parent / "harvestflow")


def isolated_env(data_dir: Path) -> dict[str, str]:
    """Environment for a harvestflow process with its own data dir and free ports."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HARVESTFLOW_", "AIRFLOW"))}
    env.update(session_env(data_dir))
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
    return env


class Output:
    """Collects a child's stdout lines in the background."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self._thread.start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self.lines.append(line)

    def wait_for(self, pattern: str, timeout: float) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if m := re.search(pattern, line):
                    return m
            time.sleep(0.5)
        raise AssertionError(
            f"no line matching {pattern!r}; output:\n{''.join(self.lines)[-4000:]}"
        )


def start_up(env: dict[str, str]) -> tuple[subprocess.Popen[str], Output]:
    """`harvestflow up` on ``env``, in a session of its own (the caller stops it), and its output."""
    proc = subprocess.Popen(
        [HARVESTFLOW, "up"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    return proc, Output(proc)
