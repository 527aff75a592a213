"""Helpers for tests that run the ``harvestflow`` command in its own data directory."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from tests.support.environment import session_env

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


def start_up(env: dict[str, str], *args: str) -> tuple[subprocess.Popen[str], Output]:
    """`harvestflow up ARGS` on ``env``, in a session of its own (the caller stops it), and its
    output."""
    proc = subprocess.Popen(
        [HARVESTFLOW, "up", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    return proc, Output(proc)


def api_client(out: Output, timeout: float = 300) -> httpx.Client:
    """A client of the api-server of the `up` whose output is ``out``, signed in with the login
    it printed (the caller closes it)."""
    login = out.wait_for(r"Airflow UI: (http://\S+)\s+login: (\S+) / (\S+)", timeout)
    base, user, password = login.group(1).rstrip("/"), login.group(2), login.group(3)
    token = httpx.post(
        f"{base}/auth/token", json={"username": user, "password": password}, timeout=60
    ).json()["access_token"]
    return httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=60)


def trigger(client: httpx.Client, dag_id: str, conf: dict[str, Any]) -> str:
    """Trigger ``dag_id`` with ``conf`` now; its run id."""
    run = client.post(f"/api/v2/dags/{dag_id}/dagRuns", json={"logical_date": None, "conf": conf})
    assert run.status_code == 200, run.text
    return str(run.json()["dag_run_id"])


def task_instances(client: httpx.Client, dag_id: str, run_id: str) -> list[dict[str, Any]]:
    url = f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances"
    return list(client.get(url, params={"limit": 200}).json()["task_instances"])


def wait_dags(client: httpx.Client, dag_ids: set[str], timeout: float = 180) -> None:
    """Wait until the dag-processor has parsed every DAG of ``dag_ids``."""
    deadline = time.monotonic() + timeout
    seen: set[str] = set()
    while time.monotonic() < deadline:
        dags = client.get("/api/v2/dags", params={"limit": 100}).json()["dags"]
        seen = {d["dag_id"] for d in dags}
        if dag_ids <= seen:
            return
        time.sleep(1)
    raise AssertionError(f"DAGs {dag_ids - seen} not parsed in {timeout}s")


# a test's platform starts with its DAGs paused; the test starts those it uses (`unpause`):
# else every schedule's first run (a dozen DAGs, each task a process importing Airflow) takes
# both CI cores for minutes while `up` starts and the test's own run waits for a slot
PAUSED_AT_CREATION = {"AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True"}


def unpause(client: httpx.Client, dag_ids: set[str]) -> None:
    """Start the DAGs ``dag_ids`` of a platform started with ``PAUSED_AT_CREATION``."""
    wait_dags(client, dag_ids)
    for dag_id in sorted(dag_ids):
        answer = client.patch(f"/api/v2/dags/{dag_id}", json={"is_paused": False})
        assert answer.status_code == 200, answer.text


def _wait_run(client: httpx.Client, dag_id: str, run_id: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    state = "?"
    while time.monotonic() < deadline:
        answer = client.get(f"/api/v2/dags/{dag_id}/dagRuns/{run_id}")
        assert answer.status_code == 200, (answer.status_code, answer.text[:2000])
        state = answer.json()["state"]
        if state in ("success", "failed"):
            return state
        time.sleep(1)  # a run's end seen within a second: the caller's next step waits less
    return state


def _fetched(logs: list[Path]) -> list[str]:
    """The one-off's seed URLs fetched (status > 0) in crawl.log, complete lines only."""
    return [
        f[3]
        for p in logs
        for f in (ln.split() for ln in p.read_text().split("\n")[:-1])
        if len(f) == 12 and "/slow?ms=700" in f[3] and int(f[1]) > 0
    ]


def _stop(proc: subprocess.Popen[Any], sig: int = signal.SIGTERM, timeout: float = 120) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
