"""Retry with exponential back-off: the one loop for failures that may heal by waiting.

Why our own loop: a client library's retries (botocore's, urllib3's) try one request a few
times in quick succession, which does not outlast a server being restarted. This waits longer
(``base × 2^n``, capped, with ±25 % jitter so that workers do not retry in step), logs every wait
so that the task log shows what is happening, and retries only what ``retry_on`` says is
transient: anything else propagates at once.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

from harvestflow.errors import RetriesExhausted

log = logging.getLogger(__name__)
T = TypeVar("T")


def delays(attempts: int, base_delay_s: float, max_delay_s: float) -> Iterator[float]:
    """The waits between ``attempts`` calls: base × 2^n, capped, with jitter."""
    for n in range(max(attempts - 1, 0)):
        yield min(max_delay_s, base_delay_s * 2**n) * (0.75 + random.random() / 2)


def with_backoff(
    func: Callable[[], T],
    *,
    what: str,
    attempts: int,
    base_delay_s: float,
    max_delay_s: float,
    retry_on: Callable[[BaseException], bool],
    give_up: Callable[[str], Exception] = RetriesExhausted,
    on_retry: Callable[[int, BaseException], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Call ``func``; when ``retry_on(error)``, wait and retry, up to ``attempts`` calls in all.

    When the attempts are spent, ``give_up(message)`` is raised from the last error (by
    default :class:`RetriesExhausted`; a stage passes its own transient error class).
    """
    waits = delays(attempts, base_delay_s, max_delay_s)
    attempt = 0
    while True:
        attempt += 1
        try:
            return func()
        except Exception as exc:
            if not retry_on(exc):
                raise
            delay = next(waits, None)
            if delay is None:
                raise give_up(
                    f"{what}: still failing after {attempts} attempts: {exc}"
                    " (a transient failure: check that the service is up, then run it again)"
                ) from exc
            log.warning(
                "%s: transient error (attempt %d/%d), retrying in %.1fs: %s",
                what,
                attempt,
                attempts,
                delay,
                exc,
            )
            if on_retry is not None:
                on_retry(attempt, exc)
            sleep(delay)
