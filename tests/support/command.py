"""``harvestflow ARGS`` run in the test process through the command's entry point
(``app.cli.main.main``), answering as the subprocess did: exit status, stdout, and stderr with
the command's log lines in it, a given stdin.

Why not a subprocess: the tests that use it ask what a command does and says, not how an
interpreter starts, and a start with the commands' imports costs ~1–2.5 CPU-s (the access rules
tests ran ~30). The command reads the test process's environment, as a child would; a test
about the installed script or the process itself (exit on a signal, a crash point) starts one.
"""

from __future__ import annotations

import contextlib
import io
import logging
import subprocess
import sys


def harvestflow(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """The command's exit status and output; its log records (INFO and up, DEBUG with
    ``-v``: the levels ``main`` gives a process of its own) are written to its stderr, so a
    test that looks for a secret in the console output still reads them."""
    from app.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    handler = logging.StreamHandler(err)
    handler.setFormatter(
        logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%Y-%m-%dT%H:%M:%S")
    )
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)  # main's logging.basicConfig() adds none beside it
    root.setLevel(logging.DEBUG if {"-v", "--verbose"} & set(args) else logging.INFO)
    stdin_was = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:  # argparse refusing the arguments
                code = exc.code if isinstance(exc.code, int) else 1
    finally:
        sys.stdin = stdin_was
        root.removeHandler(handler)
        root.setLevel(level)
    return subprocess.CompletedProcess(["harvestflow", *args], code, out.getvalue(), err.getvalue())
