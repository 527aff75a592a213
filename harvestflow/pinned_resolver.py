"""An aiohttp resolver that answers some hosts with a fixed address, the rest through the system.

Why here (core): the crawler's rendering passthrough (the job's host map) and the harvest's
redirect preload (a hosts map or curl-like ``--connect-to``) both pin hosts to addresses for
aiohttp; only their lookup rule differs, so each subclass gives :meth:`PinnedResolver.pinned`.
"""

from __future__ import annotations

import socket

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult


class PinnedResolver(AbstractResolver):
    """Hosts that :meth:`pinned` maps go to their address (numeric, no lookup); others to DNS."""

    def __init__(self) -> None:
        self.system = aiohttp.ThreadedResolver()

    def pinned(self, host: str, port: int) -> tuple[str, int] | None:
        """The (address, port) to connect to for ``host``, or None to ask the system."""
        raise NotImplementedError

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        hit = self.pinned(host, port)
        if hit is None:
            return await self.system.resolve(host, port, family)
        address, port = hit
        fam = socket.AF_INET6 if ":" in address else socket.AF_INET
        return [
            {
                "hostname": host,
                "host": address,
                "port": port,
                "family": fam,
                "proto": 0,
                "flags": socket.AI_NUMERICHOST,
            }
        ]

    async def close(self) -> None:
        await self.system.close()
