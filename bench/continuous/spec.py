"""bench/run continuous: the continuous crawl's adaptive revisiting against the best fixed
per-class schedule, for the same number of fetches, in a simulation of 10,000 changing pages.

Why this peer: a fixed schedule's user does not give every URL one interval; they set one per
kind of page they know (a news site's front page, other front pages, deeper pages). The peer
gets such a class interval, each chosen with the true change rates of the class's pages (more
than its user knows: the best a fixed per-class schedule can do), and exactly the adaptive
side's number of fetches (counted by an untimed adaptive run before the rounds).

The output check: both sides made the same number of fetches over the same change history (the
changes that happened, per-page random streams). What the figure is about, the changes each
captured, differs by design: it is observed on each side (``captured``) and the target is on
the ratio of the two medians. The CPU ratio is the cost of the two schedulers' simulations.
Full run: 10,000 URLs on 100 hosts, 30 simulated days; ``--quick``: 500 URLs, 10 hosts, 3 days.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.runner.spec import Benchmark, Side, Target

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "bench_continuous.py"


class ContinuousBenchmark(Benchmark):
    name = "continuous"
    title = "adaptive revisiting vs the best fixed per-class schedule, same fetches (simulated)"
    output_check = "the fetches made and the changes that happened (the same change history)"
    unit = "fetches"
    targets = (
        Target("captures more changes than the best fixed per-class schedule for the same"
               " fetches (ratio of the medians)", "observed_ratio:captured", 1.0),
    )  # fmt: skip

    def __init__(self) -> None:
        self.args: list[str] = []
        self.fetches = 0

    def prepare(self, work: Path, quick: bool) -> dict[str, Any]:
        urls, hosts, days = (500, 10, 3) if quick else (10_000, 100, 30)
        self.args = ["--urls", str(urls), "--hosts", str(hosts), "--days", str(days)]
        budget = work / f"budget-{urls}-{hosts}-{days}"
        subprocess.run(
            [sys.executable, str(SCRIPT), "--side", "adaptive", "--out", str(budget), *self.args],
            check=True,
        )
        self.fetches = int(json.loads((budget / "result.json").read_text())["fetches"])
        return {
            "urls": urls,
            "hosts": hosts,
            "simulated_days": days,
            "fetches": self.fetches,
            "source": "bench/continuous/bench_continuous.py make_pages (seed 7): per URL a"
            " Poisson change process, mean interval log-uniform 1 h–90 days, 15 % never"
            " change, the front pages of every fifth host ('news') every 30–90 min",
        }

    def sides(self) -> tuple[Side, Side]:
        ours = Side(
            "adaptive",
            [sys.executable, str(SCRIPT), "--side", "adaptive", "--out", "{out}", *self.args],
            1,
            "harvest.continuous RevisitPolicy (minimum wait 30 min, other settings the"
            " defaults) + apply_visit after each visit, a batch every 10 simulated minutes",
            shown=f"python bench/continuous/bench_continuous.py --side adaptive {' '.join(self.args)}",
        )  # fmt: skip
        peer = Side(
            "fixed_per_class",
            [sys.executable, str(SCRIPT), "--side", "fixed", "--fetches", str(self.fetches),
             "--out", "{out}", *self.args],
            1,
            "one fixed interval per class (news / other host × front / deeper page), each"
            " chosen with its pages' true change rates to capture the most changes for the"
            " budget; staggered phases; exactly the adaptive side's fetches",
            shown=f"python bench/continuous/bench_continuous.py --side fixed --fetches"
            f" {self.fetches} {' '.join(self.args)}",
        )  # fmt: skip
        return ours, peer

    def figures(self, side: Side, out: Path) -> Any:
        data = json.loads((out / "result.json").read_text())
        return {"fetches": data["fetches"], "changes": data["changes"]}

    def problems(self, figures: Any) -> list[str]:
        if figures["fetches"] != self.fetches:
            return [f"{figures['fetches']} fetches, not the budget's {self.fetches}"]
        return [] if figures["changes"] else ["no page changed"]

    def units(self, figures: Any) -> int | None:
        return int(figures["fetches"])

    def observe(self, side: Side, out: Path) -> dict[str, float]:
        data = json.loads((out / "result.json").read_text())
        return {
            "captured": float(data["captured"]),
            "captured %": round(100.0 * data["captured"] / data["changes"], 1),
        }


BENCHMARK = ContinuousBenchmark()
