"""bench/run continuous's spec: the peer is a fixed interval per class of URL, chosen for the
budget, and spends exactly the adaptive side's fetches over the same change history.

Why: adaptive revisiting against one uniform interval for every URL flatters it (no fixed
schedule's user does that); against the best per-class schedule, for the same fetches and the
same page changes, the changes captured compare the policies and nothing else.
"""

from __future__ import annotations

from pathlib import Path

from bench.continuous import bench_continuous as sim
from bench.continuous.spec import ContinuousBenchmark
from tests.support.bench_round import one_round


def test_both_sides_spend_the_same_fetches_on_the_same_change_history(tmp_path: Path) -> None:
    bench = ContinuousBenchmark()
    figures, measured = one_round(bench, tmp_path)
    assert figures["adaptive"] == figures["fixed_per_class"]
    assert figures["adaptive"]["fetches"] == bench.fetches > 0
    assert bench.problems(figures["adaptive"]) == []
    for side in ("adaptive", "fixed_per_class"):
        assert measured[side]["observed"]["captured"] > 0


def test_the_fixed_schedule_gives_each_class_its_own_interval_within_the_budget() -> None:
    pages = sim.make_pages(400, 10, 7)
    days, uniform = 3.0, 3 * 400 * 2  # a budget of two fetches a day per URL
    intervals = sim.class_intervals(pages, days, uniform)
    assert set(intervals) == {"news front", "news deep", "other front", "other deep"}
    # the news front pages change every 30-90 min: far more often revisited than the rest
    assert intervals["news front"] * 4 < min(intervals["other deep"], intervals["news deep"])
    expected = sum(days * 86400 / intervals[sim.page_class(p)] for p in pages)
    assert 0.9 * uniform <= expected <= uniform
    fetches, captured, changes, _ = sim.simulate_fixed(pages, days, uniform, 7)
    assert fetches == uniform and 0 < captured <= changes
