"""bench/run jobgen's spec: the generator's planned rows are checked against the rows COPY
wrote, and the PostgreSQL doing each side's work is in that side's process tree.

Why: the generator against PostgreSQL's COPY of its query means something only if both
handed out the same rows (a configuration lost, doubled or altered in planning must fail the
run) and if the server's CPU, where the peer does nearly all its work, is counted for the side
that used it. Quick size (5,000 configurations); nothing here is timed.
"""

from __future__ import annotations

from pathlib import Path

from bench.jobgen.spec import JobgenBenchmark
from tests.support.bench_round import one_round, restored_environment


def test_planned_rows_equal_copys_rows_and_each_side_runs_its_own_postgresql(
    tmp_path: Path,
) -> None:
    bench = JobgenBenchmark()
    with restored_environment():
        figures, measured = one_round(bench, tmp_path)
    assert figures["generator"] == figures["copy"]
    assert figures["copy"]["rows"] == bench.configs == 5_000
    assert bench.problems(figures["copy"]) == []
    for side in ("generator", "copy"):
        # the postmaster, orphaned by pg_ctl, was reaped by the runner's subreaper: its CPU
        # and its backends' are in the side's figure
        assert measured[side]["orphans_reaped"] >= 1, measured[side]
    assert measured["generator"]["observed"]["jobs"] >= 1


def test_a_planned_row_that_differs_from_copys_fails_the_check(tmp_path: Path) -> None:
    bench = JobgenBenchmark()
    bench.configs = 2
    rows = ["1\t1\td1.fr\tdefault_snapshot\t{}\t-1\t1000000000\t5\t50\t0\tdefaultconfig\n",
            "2\t2\td2.fr\tdefault_snapshot\t{}\t-1\t1000000000\t\\N\t\\N\t\\N\tdefaultconfig\n"]  # fmt: skip
    for name, lines in (("copy", rows), ("generator", [rows[0], rows[1].replace("\\N", "0", 1)])):
        (tmp_path / name).mkdir()
        (tmp_path / name / "rows.tsv").write_text("".join(reversed(lines)))
    sides = {s: bench.figures(None, tmp_path / s) for s in ("copy", "generator")}  # type: ignore[arg-type]
    assert sides["copy"]["rows"] == sides["generator"]["rows"] == 2
    assert sides["copy"]["sha256"] != sides["generator"]["sha256"]
