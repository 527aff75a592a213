"""Several Airflow CLI commands in one process: ``python -m app.runtime.airflow_batch JSON``,
JSON being a list of argument lists (``[["db", "migrate"], ["pools", "import", "p.json"]]``).

Why: every ``airflow`` command pays for importing and initialising Airflow (configuration,
settings, secrets masking, providers: 7-8 CPU-s on a CI VM) before it does its work, which for
``pools import`` is a tenth of that. :func:`app.runtime.airflow_runtime.prepare` runs its
commands here, in one process, so ``harvestflow up``, the demo and the tests pay that once.

Each command is run by Airflow's own entry point (``airflow/__main__.py``: the same parser,
default configuration and options as the ``airflow`` program), one after the other; the first
that fails ends the batch as ``airflow`` itself would end (its message or traceback on stderr,
a non-zero status), the stderr line :data:`FAILED` naming it first. Run it with the Airflow environment
(:func:`~app.runtime.airflow_runtime.airflow_env`): this module imports Airflow.
"""

from __future__ import annotations

import json
import sys

FAILED = "harvestflow: `airflow {}` failed"  # on stderr when a command of the batch fails


def run(commands: list[list[str]]) -> None:
    """Run each command of ``commands`` as ``airflow ARGS`` would, in this process."""
    from airflow.__main__ import main

    for args in commands:
        sys.argv = ["airflow", *args]
        try:
            main()
        except SystemExit as exc:  # a command that ends itself with success goes on
            if exc.code not in (None, 0):
                print(FAILED.format(" ".join(args)), file=sys.stderr)
                raise
        except BaseException:
            print(FAILED.format(" ".join(args)), file=sys.stderr)
            raise


if __name__ == "__main__":
    run(json.loads(sys.argv[1]))
