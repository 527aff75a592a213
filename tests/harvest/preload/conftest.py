"""Fixtures of the preload tests: the loopback DNS server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .dnsserver import SAMPLE_RECORDS, ZoneServer


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
