"""Serve a synthetic national web (bench/scale/nationalweb.py) from loopback, with its DNS.

One process: an aiohttp server on ``address:port`` answering every domain by its Host header
as production servers do (gzip on every text type when asked, single byte ranges, HEAD,
keep-alive), and an authoritative DNS server over UDP on ``address:dns_port`` answering the
web's names (A records; NXDOMAIN for the dead "nxdomain" domains and any other name), so the
preload's DNS check and the crawler's resolver (``[crawler] nameservers``) ask it like any
nameserver. ``GET /_stats`` with ``Host: _stats`` returns the requests served and the robots
violations (fetches under a disallowed ``/private/``). Every site also listens for HTTPS on
``tls_port`` (443; a self-signed certificate, as crawlers do not verify) and answers every
request there, robots.txt included, with a 301 to the same URL over http: the web's canonical
addresses are http, and a national crawl seeds both schemes of every name, so the https seeds
cost one redirect each instead of a refused connection retried.

Run as a program (``python bench/scale/webserve.py --seed 1 --domains 5000 --urls 10000``): it
prints ``READY <http address:port> <dns address:port>`` once both listen. :class:`WebProcess`
starts it for a test or the day and stops it.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import signal
import ssl
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from types import TracebackType
from typing import Any

import dns.flags
import dns.message
import dns.rcode
import dns.rdatatype
import dns.rrset
from aiohttp import web

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from nationalweb import NationalWeb  # noqa: E402

TEXT_TYPES = ("text/", "application/javascript", "application/json", "image/svg")


def _make_app(model: NationalWeb, stats: Counter[str]) -> web.Application:
    async def handle(request: web.Request) -> web.StreamResponse:
        host = (request.host or "").lower()
        if host == "_stats":
            return web.json_response(dict(stats))
        stats["requests"] += 1
        d = model.by_host.get(host.split(":")[0])
        if d is not None and d.robots_private and request.path.startswith("/private/"):
            stats["robots_violations"] += 1
        status, ctype, body, extra = model.answer(host, request.path_qs)
        headers = {"Content-Type": ctype, "Accept-Ranges": "bytes", **extra}
        rng = request.headers.get("Range", "")
        if status == 200 and rng.startswith("bytes=") and "," not in rng:
            first, _, last = rng[6:].partition("-")
            if first.isdigit() and (last.isdigit() or last == "") and int(first) < len(body):
                end = min(int(last), len(body) - 1) if last else len(body) - 1
                headers["Content-Range"] = f"bytes {first}-{end}/{len(body)}"
                return web.Response(status=206, body=body[int(first) : end + 1], headers=headers)
        if ctype.startswith(TEXT_TYPES) and "gzip" in request.headers.get("Accept-Encoding", ""):
            body = gzip.compress(body, compresslevel=5, mtime=0)
            headers["Content-Encoding"] = "gzip"
            headers["Vary"] = "Accept-Encoding"
        return web.Response(status=status, body=body, headers=headers)

    app = web.Application(client_max_size=64 * 1024)
    app.router.add_route("*", "/{tail:.*}", handle)
    return app


class _Dns(asyncio.DatagramProtocol):
    """Authoritative answers for the web's names over UDP."""

    def __init__(self, zone: dict[str, str]) -> None:
        self.zone = zone
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        try:
            query = dns.message.from_wire(data)
        except Exception:  # a malformed datagram is dropped, as servers do
            return
        response = dns.message.make_response(query)
        response.flags |= dns.flags.AA
        q = query.question[0]
        name = q.name.to_text(omit_final_dot=True).lower()
        address = self.zone.get(name)
        if address is None:
            response.set_rcode(dns.rcode.NXDOMAIN)
        elif q.rdtype == dns.rdatatype.A:
            response.answer.append(dns.rrset.from_text(q.name, 300, "IN", "A", address))
        assert self.transport is not None
        self.transport.sendto(response.to_wire(), addr)


def _make_tls_app(stats: Counter[str]) -> web.Application:
    async def handle(request: web.Request) -> web.StreamResponse:
        stats["tls_redirects"] += 1
        host = (request.host or "").lower().split(":")[0]
        return web.Response(status=301, headers={"Location": f"http://{host}{request.path_qs}"})

    app = web.Application(client_max_size=64 * 1024)
    app.router.add_route("*", "/{tail:.*}", handle)
    return app


def _tls_context(workdir: Path) -> ssl.SSLContext:
    """A self-signed certificate made by openssl for this run (crawlers do not verify)."""
    key, cert = workdir / "key.pem", workdir / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
         "-subj", "/CN=nationalweb.test", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context


async def serve(
    model: NationalWeb, address: str, port: int, dead: str, dns_port: int, tls_port: int = 443
) -> None:
    stats: Counter[str] = Counter()
    runner = web.AppRunner(_make_app(model, stats), access_log=None, keepalive_timeout=15)
    await runner.setup()
    await web.TCPSite(runner, address, port, backlog=1024).start()
    tls_runner = web.AppRunner(_make_tls_app(stats), access_log=None, keepalive_timeout=15)
    await tls_runner.setup()
    with tempfile.TemporaryDirectory(prefix="nationalweb-tls-") as workdir:
        context = _tls_context(Path(workdir))
    await web.TCPSite(tls_runner, address, tls_port, backlog=1024, ssl_context=context).start()
    loop = asyncio.get_running_loop()
    transport, _ = await loop.create_datagram_endpoint(
        lambda: _Dns(model.zone(address, dead)), local_addr=(address, dns_port)
    )
    bound = transport.get_extra_info("sockname")
    print(f"READY {address}:{port} {bound[0]}:{bound[1]}", flush=True)
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    await stop.wait()
    transport.close()
    await tls_runner.cleanup()
    await runner.cleanup()


class WebProcess:
    """The server as a child process: ``with WebProcess(...) as w: w.dns`` ("addr:port")."""

    def __init__(
        self, seed: int, domains: int, urls: int, address: str, *, port: int = 80,
        tls_port: int = 443,
    ) -> None:  # fmt: skip
        self.args = [str(seed), str(domains), str(urls), address, str(port), str(tls_port)]
        self.address, self.port, self.tls_port = address, port, tls_port
        # the dead "refused" domains' address: the next one on loopback, where nobody listens
        parts = address.split(".")
        self.dead_address = ".".join([*parts[:3], str((int(parts[3]) % 250) + 2)])
        self.proc: subprocess.Popen[str] | None = None
        self.dns = ""

    def __enter__(self) -> WebProcess:
        from harvestflow.services.process import die_with_parent

        seed, domains, urls, address, port, tls_port = self.args
        cmd = [sys.executable, str(Path(__file__)), "--seed", seed, "--domains", domains,
               "--urls", urls, "--address", address, "--port", port, "--tls-port", tls_port,
               "--dead-address", self.dead_address]  # fmt: skip
        # gone with its starter, even one killed (a test's timeout): no server left on loopback
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=dict(os.environ),
                                     preexec_fn=die_with_parent)  # fmt: skip
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("READY "):
            self.proc.kill()
            raise RuntimeError(
                f"the synthetic web did not start: {line!r} (exit {self.proc.wait()})"
            )
        self.dns = line.split()[2]
        return self

    def stats(self) -> dict[str, Any]:
        import urllib.request

        req = urllib.request.Request(
            f"http://{self.address}:{self.port}/", headers={"Host": "_stats"}
        )
        with urllib.request.urlopen(req, timeout=10) as resp:  # loopback only
            return json.loads(resp.read())

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--domains", type=int, default=5000)
    ap.add_argument("--urls", type=int, default=10_000)
    ap.add_argument("--address", default="127.88.0.1", help="loopback address to serve on")
    ap.add_argument("--port", type=int, default=80)
    ap.add_argument("--tls-port", type=int, default=443, help="HTTPS port (301s to http)")
    ap.add_argument("--dead-address", default="127.88.0.2", help="the dead domains' address")
    ap.add_argument("--dns-port", type=int, default=0, help="UDP port of the DNS (0: any)")
    args = ap.parse_args()
    if not args.address.startswith("127."):
        raise SystemExit(f"--address {args.address}: the synthetic web serves on loopback only")
    model = NationalWeb(args.seed, args.domains, args.urls)
    asyncio.run(
        serve(model, args.address, args.port, args.dead_address, args.dns_port, args.tls_port)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
