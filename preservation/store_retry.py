"""Retry with exponential back-off for transient object-store failures.

Why our own loop on top of botocore's retries: botocore retries one HTTP request a few times in
quick succession, which does not outlast an S3 server being restarted. The loop is the project's
one (:mod:`harvestflow.retry`); this module says which store errors are transient.
"""

from __future__ import annotations

import logging
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

from harvestflow.retry import with_backoff as core_backoff
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
    """Call ``func``; on a transient store error wait and retry, up to ``attempts`` calls in all.

    The loop is :func:`harvestflow.retry.with_backoff`'s; here is what counts as transient for
    the object store. Non-transient errors propagate at once. When the attempts are spent the
    last error is re-raised as :class:`TransientError` (the caller lets the task fail; Airflow
    retries later).
    """
    return core_backoff(
        func,
        what=what,
        attempts=attempts,
        base_delay_s=base_delay_s,
        max_delay_s=max_delay_s,
        retry_on=is_transient,
        give_up=TransientError,
        on_retry=on_retry,
        sleep=sleep,
    )
