"""What a benchmark tells the runner: its two sides, its output check, its targets.

Why so little: everything that makes a figure trustworthy (order, rounds, measurement, medians,
ratios, the results file) belongs to the runner, so a benchmark cannot get it wrong. A
benchmark only prepares its input, names the two commands and says how to read each side's
output into figures that must be equal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Side:
    """One side of a benchmark: a command run as its users run it.

    ``command`` may hold ``{out}``: this side's output directory for the round (empty, its own).
    ``parallelism`` is how many processes or threads do the work at once: the runner shows a
    wall-clock ratio only when both sides have the same.
    """

    name: str
    command: list[str]
    parallelism: int
    tuning: str
    env: dict[str, str] = field(default_factory=dict)
    #: the command as a reader should see it (placeholders for long file lists)
    shown: str = ""
    #: working directory (default: the repository)
    cwd: str | None = None

    def argv(self, out: Path) -> list[str]:
        return [part.replace("{out}", str(out)) for part in self.command]


@dataclass(frozen=True)
class Target:
    """A target on a ratio ``peer / ours`` (``metric`` "cpu" or "wall"), on a figure our side
    is observed with (``metric`` "observed:<name>", :meth:`Benchmark.observe`, its median), on
    the ratio of that figure's medians, ours over the peer's (``metric`` "observed_ratio:<name>":
    what a side achieves for the same work, e.g. changes captured for the same fetches), or
    on our median CPU per unit of work (``metric`` "cpu_ms_per_unit", milliseconds of the whole
    process tree): met when >= ``minimum`` and, if given, <= ``maximum`` (a limit)."""

    text: str
    metric: str
    minimum: float
    maximum: float | None = None


class Benchmark:
    """Base of every benchmark the runner knows (``bench/<name>/spec.py``)."""

    name = ""
    title = ""
    #: what the output check compares, in words (written into the results file)
    output_check = ""
    #: what one unit of work is ("records", "lines"): per-CPU-second rates are given in it
    unit = ""
    targets: tuple[Target, ...] = ()
    #: a benchmark cannot choose the order of its sides: the runner refuses any set here
    order: list[list[str]] | None = None

    def prepare(self, work: Path, quick: bool) -> dict[str, Any]:
        """Build the input in ``work`` (untimed, cached); return its description."""
        raise NotImplementedError

    def sides(self) -> tuple[Side, Side]:
        """(ours, peer) — or (new, old) for a regression check; after :meth:`prepare`."""
        raise NotImplementedError

    def figures(self, side: Side, out: Path) -> Any:
        """The figures ``side`` produced in ``out`` (its stdout is ``out/stdout``), JSON-able.

        The two sides' figures must be equal in every round, or the run fails.
        """
        raise NotImplementedError

    def problems(self, figures: Any) -> list[str]:
        """Checks of the (equal) figures against what the input is known to hold."""
        return []

    def units(self, figures: Any) -> int | None:
        """How many units of work the figures account for (for per-CPU-second rates)."""
        return None

    def observe(self, side: Side, out: Path) -> dict[str, float]:
        """Figures a side is judged on that may differ between the sides (capture
        completeness: a peer that runs no behaviours captures less). Recorded for each round
        and as medians, never compared: the output check stays :meth:`figures`'s."""
        return {}
