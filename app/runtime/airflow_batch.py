"""Several Airflow CLI commands in one process: ``python -m app.runtime.airflow_batch JSON``,
JSON being a list of argument lists (``[["db", "migrate"], ["pools", "import", "p.json"]]``).

Why: every ``airflow`` command pays for importing and initialising Airflow (configuration,
settings, secrets masking, providers: 7-8 CPU-s on a CI VM) before it does its work, which for
``pools import`` is a tenth of that. :func:`app.runtime.airflow_commands.prepare` runs its
commands here, in one process, so ``harvestflow up``, the demo and the tests pay that once.

Each command is run by Airflow's own entry point (the same parser, defaults and options as
the ``airflow`` program), in order; the first that fails ends the batch as ``airflow`` would
(message or traceback on stderr, non-zero status), the stderr line :data:`FAILED` naming it.
It ends without the interpreter's teardown (:func:`exit_without_teardown`): why `up` runs
Airflow's components through here too, one command each. Run it with the Airflow environment
(:func:`~app.runtime.airflow_config.airflow_env`).
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
import traceback
from typing import NoReturn

FAILED = "harvestflow: `airflow {}` failed"  # on stderr when a command of the batch fails


def run(commands: list[list[str]]) -> None:
    """Run each command of ``commands`` as ``airflow ARGS`` would, in this process; the first
    that fails is named (:data:`FAILED`) and ends the batch with its status."""
    for args in commands:
        code = run_one(args)
        if code:
            print(FAILED.format(" ".join(args)), file=sys.stderr)
            raise SystemExit(code)


def run_one(args: list[str]) -> int:
    """Run ``airflow ARGS`` in this process by Airflow's own entry point; its exit status, as
    the ``airflow`` program would end with it (a ``sys.exit("message")`` or an exception: the
    message or traceback on stderr, status 1); the process goes on to its next command (of a
    batch, :func:`run`; the test suite's ``dags test`` runs, tests/support/runstates.py)."""
    from airflow.__main__ import main

    sys.argv = ["airflow", *args]
    try:
        main()
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
        return 1
    except Exception:
        traceback.print_exc()
        return 1
    return 0


def exit_without_teardown(code: object = None) -> NoReturn:
    """End this process as ``sys.exit(code)`` would (its other threads joined, its ``atexit``
    callbacks run, its output flushed), without the interpreter's teardown of every module and
    object.

    Why: an Airflow process holds hundreds of thousands of objects (its FastAPI apps' routes
    and pydantic schemas, SQLAlchemy's mappers), and freeing them one by one at exit cost an
    api-server ~4 CPU-s and ~9 s of its stop on the CI VM (`up` kills a component after 8 s, so
    it was killed instead), an Airflow command 1.5-2 CPU-s; the operating system frees the
    memory at once.
    """
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # as sys.exit("message"): the message on stderr, status 1
        print(code, file=sys.stderr)
        status = 1
    for thread in threading.enumerate():  # the interpreter waits for these before atexit
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


if __name__ == "__main__":
    try:
        run(json.loads(sys.argv[1]))
    except SystemExit as exc:
        exit_without_teardown(exc.code)
    exit_without_teardown(0)
