"""The shared pinned resolver, through both of its users (rendering passthrough, redirect probe)."""

from __future__ import annotations

import asyncio
import socket

from crawler.rendering.passthrough import MappedResolver
from harvest.preload.redirects import _StaticResolver


def _resolve(make, host: str, port: int) -> list:  # type: ignore[no-untyped-def]
    """Build the resolver inside the loop (aiohttp's threaded resolver needs a running one)."""

    async def run() -> list:  # type: ignore[type-arg]
        resolver = make()
        try:
            return await resolver.resolve(host, port)
        finally:
            await resolver.close()

    return asyncio.run(run())


def test_mapped_hosts_get_their_numeric_address_and_others_go_to_the_system() -> None:
    got = _resolve(lambda: MappedResolver({"WWW.Example.test": "::1"}), "www.example.test", 8080)
    assert got == [
        {
            "hostname": "www.example.test",
            "host": "::1",
            "port": 8080,
            "family": socket.AF_INET6,
            "proto": 0,
            "flags": socket.AI_NUMERICHOST,
        }
    ]
    system = _resolve(lambda: MappedResolver({}), "localhost", 81)
    assert system and all(r["port"] == 81 for r in system)


def test_connect_to_sends_every_host_to_one_address_and_port() -> None:
    hosts = {"a.test": "127.0.0.9"}
    assert _resolve(lambda: _StaticResolver(hosts, None), "A.test.", 80)[0]["host"] == "127.0.0.9"
    got = _resolve(lambda: _StaticResolver(hosts, ("127.0.0.7", 8001)), "a.test", 80)[0]
    assert (got["host"], got["port"], got["family"]) == ("127.0.0.7", 8001, socket.AF_INET)
