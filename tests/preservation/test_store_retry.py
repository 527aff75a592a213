"""Transient/serious classification and the back-off loop."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from preservation.errors import ChecksumMismatch, TransientError
from preservation.store_retry import is_transient, with_backoff


def _client_error(status: int, code: str) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": code}, "ResponseMetadata": {"HTTPStatusCode": status}},
        "PutObject",
    )


def test_classification_of_store_errors() -> None:
    assert is_transient(EndpointConnectionError(endpoint_url="http://127.0.0.1:1"))
    assert is_transient(_client_error(503, "ServiceUnavailable"))
    assert is_transient(_client_error(500, "InternalError"))
    assert not is_transient(_client_error(403, "AccessDenied"))
    assert not is_transient(_client_error(400, "BadDigest"))
    assert not is_transient(ChecksumMismatch("x"))


def test_transient_errors_are_retried_with_growing_delays() -> None:
    calls: list[int] = []
    delays: list[float] = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 4:
            raise _client_error(503, "ServiceUnavailable")
        return "ok"

    result = with_backoff(
        flaky, what="t", attempts=5, base_delay_s=1.0, max_delay_s=3.0, sleep=delays.append
    )
    assert result == "ok" and len(calls) == 4
    assert len(delays) == 3
    assert delays[0] < delays[1] and delays[2] <= 3.0 * 1.25


def test_retries_give_up_as_transient_error_and_serious_ones_are_not_retried() -> None:
    def down() -> None:
        raise EndpointConnectionError(endpoint_url="http://127.0.0.1:1")

    with pytest.raises(TransientError, match="after 3 attempts"):
        with_backoff(
            down, what="t", attempts=3, base_delay_s=0, max_delay_s=0, sleep=lambda s: None
        )
    calls = []

    def serious() -> None:
        calls.append(1)
        raise ChecksumMismatch("bad")

    with pytest.raises(ChecksumMismatch):
        with_backoff(serious, what="t", attempts=5, base_delay_s=0, max_delay_s=0)
    assert len(calls) == 1
