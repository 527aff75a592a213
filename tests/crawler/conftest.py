"""Fixtures for crawler tests: the sample site on a free loopback port and a helper that runs a
crawl job in a child process (Twisted's reactor runs once per process)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.demo.samplesite import SampleSite, start


@pytest.fixture(scope="module")
def site() -> Iterator[SampleSite]:
    s = start()
    yield s
    s.stop()


@pytest.fixture()
def fresh_site() -> Iterator[SampleSite]:
    """A site of its own, for tests that measure the requests it served."""
    s = start()
    yield s
    s.stop()
