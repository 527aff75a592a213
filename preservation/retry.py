"""Retry with exponential back-off for transient object-store failures.

Why our own loop on top of botocore's retries: botocore retries one HTTP request a few times in
quick succession, which does not outlast an S3 server being restarted. This loop waits longer
(base × 2^n, capped, with jitter) and logs every wait so the task log shows what is happening.
"""

from __future__ import annotations

import logging
import random
import socket
import time
from collections.abc import Callable
from typing import TypeVar

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    HTTPClientError,
    ReadTimeoutError,
)
from botocore.exceptions import (
    ConnectionError as BotoConnectionError,
)

from preservation.errors import TransientError

log = logging.getLogger(__name__)
T = TypeVar("T")

_TRANSIENT_CODES = {
    "InternalError",
    "ServiceUnavailable",
    "SlowDown",
    "RequestTimeout",
    "RequestTimeTooSkewed",
    "Throttling",
    "ThrottlingException",
    "503",
    "500",
    "502",
    "504",
}


def is_transient(exc: BaseException) -> bool:
    """True for failures that may heal by waiting: connection, timeout, 5xx, throttling."""
    if isinstance(exc, TransientError):
        return True
    if isinstance(exc, BotoConnectionError | HTTPClientError | ReadTimeoutError):
        return True
    if isinstance(exc, ClientError):
        err = exc.response.get("Error", {})
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
        return status >= 500 or str(err.get("Code")) in _TRANSIENT_CODES
    if isinstance(exc, BotoCoreError):
        return "timeout" in type(exc).__name__.lower() or "connect" in type(exc).__name__.lower()
    return isinstance(exc, ConnectionError | TimeoutError | socket.timeout)


def with_backoff(
    func: Callable[[], T],
    *,
    what: str,
    attempts: int,
    base_delay_s: float,
    max_delay_s: float,
    on_retry: Callable[[int, BaseException], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Call ``func``; on a transient error wait and retry, up to ``attempts`` calls in all.

    Non-transient errors propagate at once. When the attempts are spent the last error is
    re-raised as :class:`TransientError` (the caller lets the task fail; Airflow retries later).
    """
    for attempt in range(1, attempts + 1):
        try:
            return func()
        except Exception as exc:
            if not is_transient(exc):
                raise
            if attempt >= attempts:
                raise TransientError(
                    f"{what}: still failing after {attempts} attempts: {exc}"
                ) from exc
            delay = min(max_delay_s, base_delay_s * 2 ** (attempt - 1))
            delay *= 0.75 + random.random() / 2
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
    raise AssertionError("unreachable")
