"""bench/run access's specs: our ZipNum build and gzip of the flat CDXJ are compared on the lines
they hold, and the index's size on disk is observed; pywb on the ZipNum and on the flat CDXJ
answer the same lookups.

Why: a build ratio against gzip means something only if both outputs hold the flat file's
lines, every one (the shards inflated in the .loc's order, the .gz inflated). Quick size (20,000
captures); nothing here is timed.
"""

from __future__ import annotations

import gzip
from pathlib import Path

from bench.access.lookup_spec import SEPARATOR, AccessLookupBenchmark
from bench.access.spec import AccessBuildBenchmark
from tests.support.bench_round import one_round, restored_environment


def test_the_zipnum_and_the_gzip_both_hold_the_flat_cdxjs_lines(tmp_path: Path) -> None:
    bench = AccessBuildBenchmark()
    with restored_environment():
        figures, measured = one_round(bench, tmp_path)
        assert figures["zipnum"] == figures["gzip"] == bench.truth
        assert bench.truth["lines"] == 20_000
        assert 5 < measured["zipnum"]["observed"]["size %"] < 50
        last = bench._shards()[-1]
        kept = gzip.decompress(last.read_bytes())
        kept = kept[: kept.rindex(b"\n", 0, len(kept) - 1) + 1]  # its last line dropped
        last.write_bytes(gzip.compress(kept))
        damaged = bench.figures(bench.sides()[0], tmp_path / "zipnum")
        assert damaged["lines"] == 19_999
        assert bench.problems(damaged) == ["the lines are not the flat CDXJ's"]


def test_pywb_on_the_zipnum_and_on_the_flat_cdxj_answer_the_same_lookups(tmp_path: Path) -> None:
    bench = AccessLookupBenchmark()
    with restored_environment():
        figures, measured = one_round(bench, tmp_path)
    assert figures["zipnum"] == figures["flat"]
    assert figures["zipnum"]["answers"] == bench.lookups and bench.problems(figures["zipnum"]) == []
    assert figures["zipnum"]["captures"] >= bench.lookups
    for side in ("zipnum", "flat"):
        assert set(measured[side]["observed"]) == {
            "exact p50 ms", "exact p95 ms", "prefix p50 ms", "prefix p95 ms"
        }  # fmt: skip
    answers = tmp_path / "zipnum" / "answers"
    bodies = answers.read_bytes().split(SEPARATOR)
    answers.write_bytes(SEPARATOR.join([b"", *bodies[1:]]))  # the first answer lost
    damaged = bench.figures(bench.sides()[0], tmp_path / "zipnum")
    assert damaged != figures["flat"]
    assert bench.problems(damaged) == ["1 empty answers (every query is a capture's)"]
