"""One round of a real benchmark at its quick size, for the tests of its spec.

Why: each spec's test proves that the two sides, run as the runner runs them (under the
subreaper wrapper), produce figures the output check accepts; nothing here is timed.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.runner.core import measure_side
from bench.runner.spec import Benchmark


def one_round(bench: Benchmark, work: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """Each side of ``bench`` once at its quick size: (figures, measurements) by side name."""
    bench.prepare(work, quick=True)
    figures, measured = {}, {}
    for side in bench.sides():
        m = measure_side(side, work / side.name)
        assert m["exit_code"] == 0, (work / side.name / "stderr").read_text()[-2000:]
        figures[side.name] = bench.figures(side, work / side.name)
        measured[side.name] = {**m, "observed": bench.observe(side, work / side.name)}
    return figures, measured


@contextlib.contextmanager
def restored_environment() -> Iterator[None]:
    """The process environment and harvestflow's settings as they were, after a benchmark's
    ``prepare`` pointed them at its own data folder and ports."""
    from harvestflow import settings as settings_mod

    saved = dict(os.environ)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)
        settings_mod.reset()
