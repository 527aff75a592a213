"""The DNS checker against a real DNS server on loopback."""

from __future__ import annotations

import time

import pytest

from harvest.preload.dnswire import (
    ACTIVE,
    FAILED,
    UNKNOWN,
    DnsChecker,
    DnsSettings,
    check_domains_inline,
    encode_qname,
    parse_nameserver,
)
from tests.support.dnsserver import ZoneServer


def _settings(server: ZoneServer, **kw: object) -> DnsSettings:
    base: dict[str, object] = {
        "nameservers": (parse_nameserver(server.address),),
        "timeout_s": 0.3,
        "retries": 2,
    }
    base.update(kw)
    return DnsSettings(**base)  # type: ignore[arg-type]


def _classes(results: list[tuple[str, str, str]]) -> dict[str, tuple[str, str]]:
    return {d: (c, x) for d, c, x in results}


def test_each_kind_of_answer_gets_its_class(zone_server: ZoneServer) -> None:
    names = [
        "exists.test",
        "v6only.test",
        "noaddr.test",
        "nothere.test",
        "alias.test",
        "hop.test",
        "dangling.test",
        "servfail.test",
        "refused.test",
        "silent.test",
        "big.test",
        "loop1.test",
    ]
    got = _classes(check_domains_inline(names, _settings(zone_server)))
    assert sorted(got) == sorted(names)
    assert got["exists.test"] == (ACTIVE, "A 192.0.2.1")
    assert got["v6only.test"] == (ACTIVE, "AAAA 2001:db8::1")
    assert got["noaddr.test"][0] == FAILED and "no address" in got["noaddr.test"][1]
    assert got["nothere.test"] == (FAILED, "NXDOMAIN")
    assert got["alias.test"] == (ACTIVE, "A 192.0.2.1")  # chain chased by the server
    assert got["hop.test"] == (ACTIVE, "A 192.0.2.1")  # chain followed by the checker
    assert got["dangling.test"][0] == FAILED and "NXDOMAIN" in got["dangling.test"][1]
    assert got["servfail.test"][0] == UNKNOWN and "SERVFAIL" in got["servfail.test"][1]
    assert got["refused.test"][0] == UNKNOWN and "REFUSED" in got["refused.test"][1]
    assert got["silent.test"][0] == UNKNOWN and "timeout" in got["silent.test"][1]
    assert got["big.test"] == (ACTIVE, "A 192.0.2.9 (tcp)")
    assert got["loop1.test"][0] == UNKNOWN


def test_retries_are_bounded(zone_server: ZoneServer) -> None:
    check_domains_inline(["silent.test", "servfail.test"], _settings(zone_server, retries=3))
    assert zone_server.queries[("silent.test", "A")] == 4
    assert zone_server.queries[("servfail.test", "A")] == 4


def test_a_server_that_stops_answering_gives_unknown_never_failed(
    zone_server: ZoneServer,
) -> None:
    zone_server.silent_all = True
    names = ["exists.test", "nothere.test", "noaddr.test"]
    got = _classes(check_domains_inline(names, _settings(zone_server, timeout_s=0.2, retries=1)))
    assert {c for c, _ in got.values()} == {UNKNOWN}


def test_many_queries_in_flight_with_a_small_window(zone_server: ZoneServer) -> None:
    names = [f"n{i}.test" for i in range(300)] + ["exists.test"] * 5
    started = time.monotonic()
    got = check_domains_inline(names, _settings(zone_server, max_in_flight=50))
    assert len(got) == len(names)
    assert sum(1 for _, c, _ in got if c == FAILED) == 300
    assert time.monotonic() - started < 20


def test_static_answers_skip_dns(zone_server: ZoneServer) -> None:
    settings = _settings(
        zone_server, static={"local.example": "127.0.0.1"}, static_only=True, nameservers=()
    )
    got = _classes(check_domains_inline(["local.example", "other.example"], settings))
    assert got["local.example"] == (ACTIVE, "static 127.0.0.1")
    assert got["other.example"][0] == FAILED
    assert zone_server.queries.total() == 0


def test_names_no_server_could_be_asked_are_unknown(zone_server: ZoneServer) -> None:
    got = _classes(check_domains_inline(["a" * 64 + ".test", "é.test"], _settings(zone_server)))
    assert {c for c, _ in got.values()} == {UNKNOWN}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("127.0.0.1", ("127.0.0.1", 53)),
        ("127.0.0.1:5300", ("127.0.0.1", 5300)),
        ("[::1]:5300", ("::1", 5300)),
        ("::1", ("::1", 53)),
    ],
)
def test_nameserver_forms(text: str, expected: tuple[str, int]) -> None:
    assert parse_nameserver(text) == expected


def test_qname_wire_is_lowercase_length_prefixed() -> None:
    assert encode_qname("WWW.Example.FR.") == b"\x03www\x07example\x02fr\x00"


def test_window_halves_only_when_a_real_share_of_queries_times_out() -> None:
    checker = DnsChecker(DnsSettings(max_in_flight=1000), lambda *a: None)
    checker._window = 1000.0
    checker._interval_answers, checker._interval_timeouts = 1000, 10  # 1%: dead domains
    checker._adapt_window(time.monotonic())
    assert checker._window == 1000.0
    checker._interval_answers, checker._interval_timeouts = 100, 50  # a lost burst
    checker._adapt_window(time.monotonic())
    assert checker._window == 500.0
    assert (checker._interval_answers, checker._interval_timeouts) == (0, 0)
