"""The state of a DAG run and of each of its task instances, read from Airflow's metadata DB.

Why: ``airflow dags test`` exits non-zero only when the run failed; a test must also see which
task failed and that the bookkeeping tasks ran, as an engineer sees them in the UI.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from app.runtime.airflow_config import airflow_env
from app.runtime.dagrun import DAGS_DIR
from harvestflow.settings import Settings, load


@dataclass
class RunStates:
    """The newest run of a DAG: its state, {task_id[map_index]: state}, for mapped tasks
    with a ``map_index_template`` {task_id[rendered name]: state}, and {task_id[map_index]:
    tries} (how many times each task instance was started: 1 when it was not retried)."""

    run_id: str
    state: str
    tasks: dict[str, str]
    named: dict[str, str]
    tries: dict[str, int]

    def of(self, prefix: str) -> dict[str, str]:
        """The task states whose key starts with ``prefix`` (e.g. ``harvest_job.crawl``)."""
        return {k: v for k, v in self.tasks.items() if k.startswith(prefix)}


def last_run(settings: Settings, dag_id: str) -> RunStates:
    engine = sa.create_engine(settings.airflow_db_url)
    try:
        with engine.connect() as conn:
            run = conn.execute(
                sa.text(
                    "SELECT run_id, state FROM dag_run WHERE dag_id = :d ORDER BY id DESC LIMIT 1"
                ),
                {"d": dag_id},
            ).one()
            rows = conn.execute(
                sa.text(
                    "SELECT task_id, map_index, rendered_map_index, state, try_number"
                    " FROM task_instance"
                    " WHERE dag_id = :d AND run_id = :r"
                ),
                {"d": dag_id, "r": run.run_id},
            ).all()
    finally:
        engine.dispose()

    def key(r: Any) -> str:
        return r.task_id if r.map_index < 0 else f"{r.task_id}[{r.map_index}]"

    tasks = {key(r): str(r.state) for r in rows}
    named = {f"{r.task_id}[{r.rendered_map_index}]": str(r.state) for r in rows if r.map_index >= 0}
    tries = {key(r): int(r.try_number) for r in rows}
    return RunStates(run.run_id, str(run.state), dict(sorted(tasks.items())), named, tries)


def asset_events(settings: Settings, run: RunStates) -> list[tuple[str, str]]:
    """(task_id, asset URI) of each Asset event the run's tasks emitted, in order."""
    engine = sa.create_engine(settings.airflow_db_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                sa.text(
                    "SELECT e.source_task_id, a.uri FROM asset_event e"
                    " JOIN asset a ON a.id = e.asset_id WHERE e.source_run_id = :r"
                    " ORDER BY e.id"
                ),
                {"r": run.run_id},
            ).all()
    finally:
        engine.dispose()
    return [(r.source_task_id, r.uri) for r in rows]


RUN_TIMEOUT_S = 900


def _airflow_env(extra_env: dict[str, str]) -> dict[str, str]:
    """The environment `harvestflow airflow` gives Airflow: the session's settings (this
    process's variables, none of its Airflow ones), with ``extra_env``, computed by the same
    function (:func:`app.runtime.airflow_config.airflow_env`) from the same variables."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    base.update(extra_env)
    return airflow_env(load(environ=base), base=base)


def _airflow_part(env: dict[str, str]) -> dict[str, str]:
    """Airflow's own variables of ``env``: its configuration, read once by an Airflow process."""
    return {k: v for k, v in env.items() if k.startswith(("AIRFLOW", "_AIRFLOW"))}


def _dags_test_args(dag_id: str, args: tuple[str, ...], conf: dict[str, Any] | None) -> list[str]:
    """``dags test DAG_ID [ARGS] [-c CONF] -f DAG_FILE``.

    Why ``-f`` (``--dagfile-path``): without it, the CLI parses every file of the DAGs folder
    and writes every DAG of it to the metadata DB to find the one asked for; a DAG's file is
    named after it (tests/dags/test_dag_integrity.py), so it parses that file only. (dag.test()
    itself then parses and writes the whole folder once more: Airflow 3.3 re-syncs the DAG's
    bundle in every run, apache/airflow#64884.)
    """
    conf_args = ["-c", json.dumps(conf)] if conf is not None else []
    return ["dags", "test", dag_id, *args, *conf_args, "-f", str(DAGS_DIR / f"{dag_id}.py")]


# For each line of stdin ({"argv": Airflow's arguments, "env": the run's environment}): the
# process's variables become the run's, but for Airflow's own (read once, at Airflow's start:
# DagTests starts the process with the run's), the settings are read anew, Airflow's CLI runs
# the command (app.runtime.airflow_batch.run_one), then the end mark with its exit status is
# written on stdout and stderr.
_ONE_PROCESS = """
import json, os, sys
from app.runtime.airflow_batch import run_one
from harvestflow import settings
mark, airflow_prefixes = sys.argv[1], ("AIRFLOW", "_AIRFLOW")
for line in sys.stdin:
    run = json.loads(line)
    for key in [k for k in os.environ if not k.startswith(airflow_prefixes)]:
        if key not in run["env"]:
            del os.environ[key]
    os.environ.update({k: v for k, v in run["env"].items() if not k.startswith(airflow_prefixes)})
    settings.reset()
    code = run_one(run["argv"])
    for stream in (sys.stdout, sys.stderr):
        print(mark.format(code), file=stream, flush=True)
"""
RUN_ENDED = "=== harvestflow: airflow command ended: {} ==="


class DagTests:
    """``airflow dags test`` runs, one after the other in ONE Airflow process, each when a test
    asks for it (:meth:`run`), in that test's environment: what the test did before is done by
    then, its variables (a fixture's bucket, webhook, a run's own settings) are the run's.

    Why: each run paid Airflow's start-up in its own process: its import, its CLI's set-up and
    the in-process Execution API that dag.test() builds for the process's first task (its routes
    generated for every API version), ~20 CPU-s on the CI VM. Each run is still Airflow's own
    ``dags test`` command with its own arguments, as app.runtime.airflow_batch runs several
    commands in one process, and the demo several DAG runs (app.runtime.dagrun).

    Airflow reads its own variables (``AIRFLOW*``: its configuration) once, at its start: a run
    whose Airflow variables differ from the process's (another metrics port, executor…) ends
    the process and starts one with them; so does a run after one that did not end (timed out,
    or the process died).
    """

    def __init__(self) -> None:
        self.proc: subprocess.Popen[str] | None = None
        self.airflow: dict[str, str] = {}
        self.lines: dict[str, queue.Queue[str | None]] = {}

    def run(
        self,
        dag_id: str,
        *args: str,
        conf: dict[str, Any] | None = None,
        **extra_env: str,
    ) -> subprocess.CompletedProcess[str]:
        """``airflow dags test DAG_ID [ARGS] [-c CONF]`` in the process, in the Airflow
        environment `harvestflow airflow` gives it (:func:`_airflow_env`) with ``extra_env``:
        its exit status, and its output only."""
        env = _airflow_env(extra_env)
        argv = _dags_test_args(dag_id, args, conf)
        proc = self._process(env)
        assert proc.stdin is not None
        try:
            proc.stdin.write(json.dumps({"argv": argv, "env": env}) + "\n")
            proc.stdin.flush()
            out = {name: self._until_end(q) for name, q in self.lines.items()}
        except BaseException:
            self.close()  # the next run starts a process of its own
            raise
        code, stdout = out["stdout"]
        _, stderr = out["stderr"]
        return subprocess.CompletedProcess(["airflow", *argv], code, stdout, stderr)

    def _process(self, env: dict[str, str]) -> subprocess.Popen[str]:
        """The running process, or a new one when its Airflow variables are not ``env``'s."""
        if self.proc is not None and self.airflow != _airflow_part(env):
            self.close()
        if self.proc is None:
            self.proc = subprocess.Popen(
                [sys.executable, "-P", "-c", _ONE_PROCESS, RUN_ENDED],
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                bufsize=1,
            )
            self.airflow = _airflow_part(env)
            self.lines = {name: queue.Queue() for name in ("stdout", "stderr")}
            for name, q in self.lines.items():
                stream = getattr(self.proc, name)
                threading.Thread(target=self._read, args=(stream, q), daemon=True).start()
        return self.proc

    @staticmethod
    def _read(stream: Any, q: queue.Queue[str | None]) -> None:
        for line in stream:
            q.put(line)
        q.put(None)  # the process ended

    def _until_end(self, q: queue.Queue[str | None]) -> tuple[int, str]:
        head, _, tail = RUN_ENDED.partition("{}")
        lines: list[str] = []
        while (line := q.get(timeout=RUN_TIMEOUT_S)) is not None:
            if line.startswith(head) and line.rstrip("\n").endswith(tail):
                return int(line.rstrip("\n")[len(head) : -len(tail)]), "".join(lines)
            lines.append(line)
        raise AssertionError(f"the Airflow process ended during a run: {''.join(lines)[-3000:]}")

    def close(self) -> None:
        """End the process (its stdin closed: it ends after its run), if one runs."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        assert proc.stdin is not None
        with contextlib.suppress(OSError):
            proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def dags_tests() -> Iterator[DagTests]:
    """A :class:`DagTests` whose process is ended with the block."""
    runs = DagTests()
    try:
        yield runs
    finally:
        runs.close()
