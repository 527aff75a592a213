"""bench/run access's spec: our ZipNum build and gzip of the flat CDXJ are compared on the lines
they hold, and the index's size on disk is observed.

Why: a build ratio against gzip means something only if both outputs hold the flat file's
lines, every one (the shards inflated in the .loc's order, the .gz inflated). Quick size (20,000
captures); nothing here is timed.
"""

from __future__ import annotations

import gzip
from pathlib import Path

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
