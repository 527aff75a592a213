"""bench/run logsearch's spec: our search and mawk print the same matching lines, and a line
missing from one side changes its figures.

Why: the CPU ratio against mawk means something only if both sides found the same lines, every
one, in the same order. Quick size (20,000 lines); nothing here is timed.
"""

from __future__ import annotations

from pathlib import Path

from bench.logsearch.spec import BENCHMARKS, line_digest


def test_the_search_and_mawk_print_the_same_matching_lines(tmp_path: Path) -> None:
    from tests.support.bench_round import one_round

    bench = next(b for b in BENCHMARKS if b.name == "logsearch-all")
    figures, _ = one_round(bench, tmp_path / "work")
    assert figures["search"] == figures["mawk"]
    assert figures["search"]["lines"] > 0 and bench.problems(figures["search"]) == []
    peer_lines = tmp_path / "work" / "mawk" / "lines"
    kept = peer_lines.read_bytes().splitlines(keepends=True)[:-1]
    peer_lines.write_bytes(b"".join(kept))
    assert line_digest(peer_lines) != figures["search"]


def test_a_line_is_read_as_its_first_twelve_fields(tmp_path: Path) -> None:
    twelve = "2026-11-29T10:00:00.000Z 200 5 http://a/ - - text/html #1 - - - -"
    one, other = tmp_path / "one", tmp_path / "other"
    one.write_text(twelve + "\n")
    other.write_text(twelve.replace(" ", "  ") + ' {"x":1}\n')
    assert line_digest(one) == line_digest(other)
    other.write_text(twelve.replace("200", "404") + "\n")
    assert line_digest(one) != line_digest(other)
