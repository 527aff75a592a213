"""harvestflow.retry: the one back-off loop (preservation's S3 retries go through it)."""

from __future__ import annotations

import pytest

from harvestflow.errors import HarvestflowError, RetriesExhausted
from harvestflow.retry import delays, with_backoff


def test_only_what_retry_on_accepts_is_retried_with_growing_capped_waits() -> None:
    calls: list[int] = []
    waits: list[float] = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 5:
            raise ConnectionResetError("reset by peer")
        return "ok"

    got = with_backoff(
        flaky,
        what="probe",
        attempts=6,
        base_delay_s=1.0,
        max_delay_s=4.0,
        retry_on=lambda e: isinstance(e, ConnectionError),
        sleep=waits.append,
    )
    assert got == "ok" and len(calls) == 5 and len(waits) == 4
    assert waits[0] < waits[1] < waits[2] and 0.75 <= waits[0] <= 1.25
    assert all(w <= 4.0 * 1.25 for w in waits)

    def broken() -> None:
        raise KeyError("not transient")

    with pytest.raises(KeyError):
        with_backoff(
            broken,
            what="x",
            attempts=3,
            base_delay_s=0,
            max_delay_s=0,
            retry_on=lambda e: isinstance(e, ConnectionError),
            sleep=waits.append,
        )


def test_giving_up_names_what_and_raises_the_callers_class() -> None:
    def down() -> None:
        raise TimeoutError("no answer")

    with pytest.raises(RetriesExhausted, match=r"upload x: still failing after 3 attempts") as info:
        with_backoff(
            down,
            what="upload x",
            attempts=3,
            base_delay_s=0,
            max_delay_s=0,
            retry_on=lambda e: True,
            sleep=lambda s: None,
        )
    assert isinstance(info.value, HarvestflowError)
    assert isinstance(info.value.__cause__, TimeoutError)

    class StageTransient(Exception):
        pass

    with pytest.raises(StageTransient):
        with_backoff(
            down,
            what="y",
            attempts=1,
            base_delay_s=0,
            max_delay_s=0,
            retry_on=lambda e: True,
            give_up=StageTransient,
            sleep=lambda s: None,
        )
    assert list(delays(1, 1.0, 1.0)) == []
