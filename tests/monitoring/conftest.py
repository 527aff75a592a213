"""Fixtures of the monitoring tests: the sample site, the webhook receiver named in the
settings, and ports of the test's own for the metrics service."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.demo.samplesite import SampleSite, start
from harvestflow import settings as settings_mod
from tests.support.environment import free_port
from tests.support.monitoring import Webhook


@pytest.fixture()
def site() -> Iterator[SampleSite]:
    """The bundled sample site on a free loopback port."""
    s = start()
    yield s
    s.stop()


@pytest.fixture()
def webhook(monkeypatch: pytest.MonkeyPatch) -> Iterator[Webhook]:
    """The receiver, named in ``[monitoring] webhook_url`` for this process and its children."""
    hook = Webhook()
    monkeypatch.setenv("HARVESTFLOW_MONITORING__WEBHOOK_URL", hook.url)
    settings_mod.reset()
    yield hook
    hook.stop()
    settings_mod.reset()


@pytest.fixture()
def monitor_ports(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ports of this test's own (the session's may be in use by another test's service)."""
    monkeypatch.setenv("HARVESTFLOW_MONITORING__PORT", str(free_port()))
    monkeypatch.setenv("HARVESTFLOW_MONITORING__STATSD_PORT", str(free_port()))
    settings_mod.reset()
