"""The runner's waits before a round (bench/runner/core.py's ``wait_for_quiet``)."""

from __future__ import annotations

from bench.runner.core import wait_for_quiet


def test_a_round_waits_for_the_load_to_settle_and_gives_up_at_its_bound() -> None:
    """The load average trails the work: a round waits for it to fall to the quiet threshold
    (so a run whose own sides load the machine is still judged on quiet starts), and a machine
    others keep loaded is waited for only so long."""
    slept: list[float] = []
    falling = iter([[5.0, 4.0, 3.0], [3.5, 3.9, 3.0], [2.9, 3.8, 3.0], [9.0, 9.0, 9.0]])
    waited = wait_for_quiet(60.0, 2, read=lambda: next(falling), sleep=slept.append)
    assert waited == sum(slept) == 10.0  # 5.0 and 3.5 are over 1.5 × 2 cores; 2.9 is not
    slept.clear()
    waited = wait_for_quiet(12.0, 2, read=lambda: [9.0, 9.0, 9.0], sleep=slept.append)
    assert waited == sum(slept) == 15.0  # the bound reached: one step past 12 s, then no more
    assert wait_for_quiet(60.0, 8, read=lambda: [9.0, 9.0, 9.0], sleep=slept.append) == 0.0
