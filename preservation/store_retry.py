"""Retry with exponential back-off for transient object-store failures.

Why our own loop on top of botocore's retries: botocore retries one HTTP request a few times in
quick succession, which does not outlast an S3 server being restarted. The loop is the project's
one (:mod:`harvestflow.retry`); this module says which store errors are transient.
"""

from __future__ import annotations

import logging
import socket
from functools import partial
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


# Call ``func``; on a transient store error (:func:`is_transient`) wait and retry, up to
# ``attempts`` calls in all: the loop is harvestflow.retry's. Non-transient errors propagate at
# once; when the attempts are spent the last error is re-raised as TransientError (the caller
# lets the task fail; Airflow retries later).
with_backoff = partial(core_backoff, retry_on=is_transient, give_up=TransientError)
