"""The crawler's resolver on ``[crawler] nameservers``: names asked to those servers (as the
preload's DNS check does), a name without an answer a DNS failure, a typo a clear error."""

from __future__ import annotations

import pytest
from twisted.internet.error import DNSLookupError

from crawler import CrawlerError
from crawler.resolver import ArchivalResolver, _dns_client
from harvestflow.settings import reset
from tests.support.dnsserver import ZoneServer


def test_names_are_asked_to_the_configured_nameservers(monkeypatch) -> None:
    server = ZoneServer({"www.site.test": {"A": ["192.0.2.7"]}}).start()
    try:
        monkeypatch.setenv("HARVESTFLOW_CRAWLER__NAMESERVERS", f'["{server.address}"]')
        reset()
        resolver = ArchivalResolver.__new__(ArchivalResolver)
        resolver.dns = _dns_client(5.0)
        assert resolver._ask("www.site.test") == "192.0.2.7"
        with pytest.raises(DNSLookupError, match=r"nothere\.test: no address"):
            resolver._ask("nothere.test")
        assert server.queries[("www.site.test", "A")] == 1
    finally:
        server.stop()
        reset()


def test_without_nameservers_the_system_resolver_answers(monkeypatch) -> None:
    monkeypatch.delenv("HARVESTFLOW_CRAWLER__NAMESERVERS", raising=False)
    reset()
    assert _dns_client(5.0) is None


def test_a_misspelt_nameserver_names_the_setting(monkeypatch) -> None:
    monkeypatch.setenv("HARVESTFLOW_CRAWLER__NAMESERVERS", '["127.0.0.1:99999"]')
    reset()
    try:
        with pytest.raises(CrawlerError, match=r"\[crawler\] nameservers: .*port '99999'"):
            _dns_client(5.0)
    finally:
        reset()
