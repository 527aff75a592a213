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

from app.runtime.airflow_runtime import airflow_bin, airflow_env
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


def dags_test(
    dag_id: str, *args: str, conf: dict[str, Any] | None = None, **extra_env: str
) -> subprocess.CompletedProcess[str]:
    """``airflow dags test DAG_ID [ARGS] [-c CONF]`` in a child, in the Airflow environment
    `harvestflow airflow` gives it (the session's settings, no Airflow variables of this
    process), with ``extra_env``.

    Why not through `harvestflow airflow` itself: that command computes this environment and
    execs ``airflow``, after importing every `harvestflow` command (1.5 CPU-s on a CI VM, for
    each DAG run of the suite); here the environment is computed by the same function
    (:func:`app.runtime.airflow_runtime.airflow_env`) from the same variables. Tests of other
    files still run `harvestflow airflow` itself.

    Why ``-f`` (``--dagfile-path``): without it, the CLI parses every file of the DAGs folder
    and writes every DAG of it to the metadata DB to find the one asked for; a DAG's file is
    named after it (tests/dags/test_dag_integrity.py), so it parses that file only. (dag.test()
    itself then parses and writes the whole folder once more: Airflow 3.3 re-syncs the DAG's
    bundle in every run, apache/airflow#64884.)
    """
    return subprocess.run(
        [airflow_bin(), *_dags_test_args(dag_id, args, conf)],
        env=_airflow_env(extra_env),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )


RUN_TIMEOUT_S = 900


def _airflow_env(extra_env: dict[str, str]) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    base.update(extra_env)
    return airflow_env(load(environ=base), base=base)


def _dags_test_args(dag_id: str, args: tuple[str, ...], conf: dict[str, Any] | None) -> list[str]:
    conf_args = ["-c", json.dumps(conf)] if conf is not None else []
    return ["dags", "test", dag_id, *args, *conf_args, "-f", str(DAGS_DIR / f"{dag_id}.py")]


# Runs Airflow's CLI (its entry point, parser and options) for each line of stdin (a JSON list
# of arguments), then writes the end mark, with the command's exit status, on stdout and stderr.
_ONE_PROCESS = """
import json, sys, traceback
from airflow.__main__ import main
mark = sys.argv[1]
for line in sys.stdin:
    sys.argv = ["airflow", *json.loads(line)]
    try:
        main()
        code = 0
    except SystemExit as exc:  # as the interpreter ends on it: a message goes to stderr
        code = exc.code if isinstance(exc.code, int) or exc.code is None else 1
        if not (isinstance(exc.code, int) or exc.code is None):
            print(exc.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        print(mark.format(code or 0), file=stream, flush=True)
"""
RUN_ENDED = "=== harvestflow: airflow command ended: {} ==="


class DagTests:
    """``airflow dags test`` runs of one test, one after the other in ONE Airflow process, each
    when the test asks for it (:meth:`run`): what the test does between two runs is done by then.

    Why: a test that runs a DAG, changes something, and runs it again paid Airflow's start-up
    twice: its import, its CLI's set-up and the in-process Execution API that dag.test() builds
    for the process's first task (its routes generated for every API version). Each run is
    still Airflow's own ``dags test`` command with its own arguments, as
    app.runtime.airflow_batch runs several commands in one process, and the demo several DAG
    runs (app.runtime.dagrun); the environment is the same for every run of the process.
    """

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.lines = {name: queue.Queue[str | None]() for name in ("stdout", "stderr")}
        for name, q in self.lines.items():
            stream = getattr(proc, name)
            threading.Thread(target=self._read, args=(stream, q), daemon=True).start()

    @staticmethod
    def _read(stream: Any, q: queue.Queue[str | None]) -> None:
        for line in stream:
            q.put(line)
        q.put(None)  # the process ended

    def run(
        self, dag_id: str, *args: str, conf: dict[str, Any] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """:func:`dags_test` in this process: its exit status, and its output only."""
        argv = _dags_test_args(dag_id, args, conf)
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(argv) + "\n")
        self.proc.stdin.flush()
        out = {name: self._until_end(q) for name, q in self.lines.items()}
        code, stdout = out["stdout"]
        _, stderr = out["stderr"]
        return subprocess.CompletedProcess(["airflow", *argv], code, stdout, stderr)

    def _until_end(self, q: queue.Queue[str | None]) -> tuple[int, str]:
        head, _, tail = RUN_ENDED.partition("{}")
        lines: list[str] = []
        while (line := q.get(timeout=RUN_TIMEOUT_S)) is not None:
            if line.startswith(head) and line.rstrip("\n").endswith(tail):
                return int(line.rstrip("\n")[len(head) : -len(tail)]), "".join(lines)
            lines.append(line)
        raise AssertionError(f"the Airflow process ended during a run: {''.join(lines)[-3000:]}")


@contextlib.contextmanager
def dags_tests(**extra_env: str) -> Iterator[DagTests]:
    """One Airflow process for the ``dags test`` runs of a test (:class:`DagTests`), in the
    environment of :func:`dags_test`, with ``extra_env``; ended with the block."""
    proc = subprocess.Popen(
        [sys.executable, "-P", "-c", _ONE_PROCESS, RUN_ENDED],
        env=_airflow_env(extra_env),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        bufsize=1,
    )
    try:
        yield DagTests(proc)
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def dags_test_at(
    dag_id: str, logical_date: str | None, **extra_env: str
) -> subprocess.CompletedProcess[str]:
    """:func:`dags_test` at ``LOGICAL_DATE``."""
    env: dict[str, Any] = dict(extra_env)  # variables, never ``conf`` (mypy cannot tell)
    return dags_test(dag_id, *([logical_date] if logical_date else []), **env)
