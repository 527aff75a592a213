"""Which modules a piece of code imports, seen from a fresh interpreter.

Why a fresh process: the test process has imported half the platform already; only a new
interpreter shows what an entry point pulls in by itself (each heavy import is CPU paid by
every task, crawler or benchmark process that starts).
"""

from __future__ import annotations

import ast
import subprocess
import sys


def modules_loaded_by(code: str, watched: tuple[str, ...], timeout: float = 120) -> list[str]:
    """The ``watched`` top-level modules in ``sys.modules`` after running ``code``."""
    probe = f"{code}\nimport sys\nprint(sorted(m for m in {watched!r} if m in sys.modules))\n"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=timeout
    )
    return list(ast.literal_eval(done.stdout.strip().splitlines()[-1]))
