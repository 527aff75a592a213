"""A redis-server of the test module's own (the Celery broker's program, started as the
platform starts it), for the tests of what lives in the broker: host leases, the metrics relay."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harvestflow.services.redis import EmbeddedRedis
from tests.support.environment import free_port


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedRedis]:
    server = EmbeddedRedis(tmp_path_factory.mktemp("broker") / "redis", port=free_port())
    server.start()
    try:
        yield server
    finally:
        server.stop()
