"""Fixtures of the preload tests: the loopback DNS server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.dnsserver import SAMPLE_RECORDS, ZoneServer


@pytest.fixture
def zone_server() -> Iterator[ZoneServer]:
    server = ZoneServer(
        SAMPLE_RECORDS,
        servfail={"servfail.test"},
        refused={"refused.test"},
        silent={"silent.test"},
        truncate={"big.test"},
        no_chase={"hop.test"},
    ).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def preload_settings(services, tmp_path):  # type: ignore[no-untyped-def]
    """Settings with a [preload] section tuned for tests (small chunks, short timeouts)."""
    import copy

    from harvestflow.settings import Settings

    data = copy.deepcopy(services.data)
    data.setdefault("preload", {}).update(
        {
            "chunk_size": 3,
            "dns_timeout_s": 0.3,
            "dns_retries": 1,
            "dns_processes": 1,
            "http_per_host_delay_s": 0.0,
            "http_timeout_s": 5.0,
        }
    )
    return Settings(data, services.source)


@pytest.fixture
def run_id() -> str:
    import uuid

    return f"test-{uuid.uuid4().hex[:10]}"
