"""``bench/run [NAME...] [--rounds N] [--quick] [--readme] [--against COMMIT]``: run benchmarks.

Each NAME is a benchmark with a ``bench/NAME/spec.py`` defining ``BENCHMARK``. Every run writes
``bench/results/NAME.json`` (``--quick``: under $TMPDIR/hf-bench/results-quick, never over the
real figures) and regenerates bench/README.md's tables; ``--readme`` alone only
regenerates them. ``--against COMMIT`` runs a regression check instead of the peer comparison:
our side with this tree's code and with COMMIT's, alternating in the same run. Exit 1 when a benchmark's output check failed or a side exited non-zero, 2
when a rule refused the run (fewer than 3 rounds, an order that does not alternate).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from pathlib import Path

from bench.runner import readme, rules
from bench.runner.core import REPO, RESULTS, run_benchmark
from bench.runner.spec import Benchmark

README = REPO / "bench" / "README.md"


def known() -> list[str]:
    return sorted(
        p.parent.name for p in (REPO / "bench").glob("*/spec.py") if p.parent.name != "runner"
    )


def load(name: str) -> Benchmark:
    """The one benchmark of ``bench/NAME/spec.py`` (see :func:`load_all`)."""
    benches = load_all(name)
    if len(benches) != 1:
        raise SystemExit(f"bench/run: {name!r} holds {len(benches)} benchmarks")
    return benches[0]


def load_all(name: str) -> list[Benchmark]:
    """``bench/NAME/spec.py``'s ``BENCHMARK``, or its ``BENCHMARKS`` (one per setting of a
    parameter, e.g. render at 1, 2 and 4 tabs: each its own pair of sides and results file);
    ``FOLDER-SUFFIX`` names one of them (``render-2tabs``)."""
    folder = name if name in known() else name.split("-", 1)[0]
    if folder not in known():
        raise SystemExit(f"bench/run: unknown benchmark {name!r}; known: {', '.join(known())}")
    module = importlib.import_module(f"bench.{folder}.spec")
    benches = list(getattr(module, "BENCHMARKS", None) or [module.BENCHMARK])
    if folder != name:  # one benchmark of the folder's, by its own name (render-2tabs)
        benches = [b for b in benches if b.name == name]
        if not benches:
            raise SystemExit(f"bench/run: unknown benchmark {name!r}")
    return benches


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench/run", description=__doc__.split("\n\n")[1])
    ap.add_argument("names", nargs="*", metavar="NAME", help=f"benchmarks: {', '.join(known())}")
    ap.add_argument("--rounds", type=int, default=rules.MIN_ROUNDS)
    ap.add_argument("--quick", action="store_true", help="small inputs (a smoke run)")
    ap.add_argument("--readme", action="store_true", help="regenerate bench/README.md's tables")
    ap.add_argument(
        "--against",
        metavar="COMMIT",
        help="regression check: our side with COMMIT's library code instead of the peer",
    )
    ap.add_argument("--results", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--work", type=Path, help="inputs and outputs (default $TMPDIR/hf-bench)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if not args.names and not args.readme:
        ap.error("name a benchmark, or --readme")
    try:
        rules.check_rounds(args.rounds)
    except rules.RuleError as exc:
        print(f"bench/run: {exc}", file=sys.stderr)
        return 2
    if args.results is None:  # a smoke run never replaces the figures of bench/results
        quick = Path(os.environ.get("TMPDIR", "/tmp")) / "hf-bench" / "results-quick"
        args.results = quick if args.quick else RESULTS
    status = 0
    for name in args.names:
        for bench in load_all(name):
            try:
                code, path = run_benchmark(
                    bench, args.rounds, args.quick, args.results, args.work, args.against,
                    settle_max_s=0.0 if args.quick else rules.SETTLE_MAX_S,
                )  # fmt: skip
            except rules.RuleError as exc:
                print(f"bench/run: {bench.name}: {exc}", file=sys.stderr)
                return 2
            print(f"written: {path}")
            status = max(status, code)
    if args.results == RESULTS:
        changed = readme.update(README, RESULTS)
        print(f"bench/README.md tables {'regenerated' if changed else 'already up to date'}")
        # docs/scaling.md holds the scale tables (bench/results/scale) between the same markers
        changed = readme.update(README.parents[1] / "docs" / "scaling.md", RESULTS)
        print(f"docs/scaling.md tables {'regenerated' if changed else 'already up to date'}")
    return status
