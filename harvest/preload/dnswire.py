"""A fast multiplexing DNS checker: raw UDP, thousands of queries in flight, one socket.

Why not ``dns.asyncresolver``: the broad-crawl preload checks millions of domains once a year and
the resolver objects of dnspython cost a task, a socket and a full message parse per query —
about a thousand domains a second on one core. Here one ``asyncio.DatagramProtocol`` per
nameserver multiplexes every query by its 16-bit id, the query wire is built by hand and the
answer is read with a minimal parser (header, question echo, the answer records' types). The
rare cases that need a full parse (CNAME chains an authoritative server did not complete,
truncated answers re-asked over TCP) go through dnspython's ``dns.message``.

Classification: *active* = an A or AAAA answer, following CNAMEs; *failed* = NXDOMAIN
or no address record at all (only these exclude a domain); *unknown* = timeout, SERVFAIL,
REFUSED or anything else after bounded retries (never excluded).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import random
import socket
import struct
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field

import dns.asyncquery
import dns.exception
import dns.message
import dns.name
import dns.rcode
import dns.rdatatype

from harvest.preload.dnsbase import (
    ACTIVE,
    FAILED,
    UNKNOWN,
    DnsSettings,
    Result,
    encode_qname,
    new_event_loop,
    parse_nameserver,
    read_hosts_file,
)

__all__ = [
    "ACTIVE",
    "FAILED",
    "UNKNOWN",
    "DnsChecker",
    "DnsSettings",
    "Result",
    "check_domains_inline",
    "encode_qname",
    "new_event_loop",
    "parse_nameserver",
    "read_hosts_file",
]

log = logging.getLogger(__name__)

A, AAAA, CNAME = 1, 28, 5
_HEADER = struct.Struct("!HHHHHH")
_RR = struct.Struct("!HHIH")
_QTAIL = {A: struct.pack("!HH", A, 1), AAAA: struct.pack("!HH", AAAA, 1)}
# EDNS0 OPT record: 1232-byte UDP payload (DNS flag day 2020) so CNAME chains rarely truncate.
_OPT = b"\x00" + struct.pack("!HHIH", 41, 1232, 0, 0)
_RCODE_NAMES = {0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP", 5: "REFUSED"}


def _grow_buffers(sock: socket.socket, size: int = 8 * 1024 * 1024) -> None:
    """Large socket buffers: thousands of answers can arrive while the loop is busy.

    The plain options are capped by net.core.rmem_max (about 200 KB by default, a few hundred
    datagrams: answers beyond that are dropped and become timeouts); run as root, the FORCE
    variants lift the cap.
    """
    linux = sys.platform.startswith("linux")
    for forced, plain in ((33, socket.SO_RCVBUF), (32, socket.SO_SNDBUF)):  # SO_*BUFFORCE
        try:
            sock.setsockopt(socket.SOL_SOCKET, forced if linux else plain, size)
        except OSError:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, plain, size)


def _skip_name(data: bytes, off: int) -> int:
    while True:
        length = data[off]
        if length == 0:
            return off + 1
        if length & 0xC0 == 0xC0:
            return off + 2
        off += length + 1


@dataclass(slots=True)
class _Check:
    """One domain being checked: the current step is (qname, qtype)."""

    domain: str
    qname: str
    qwire: bytes
    qtype: int = A
    attempts: int = 0
    depth: int = 0
    rcodes: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _Query:
    check: _Check
    qid: int
    ns: int
    question: bytes
    deadline: float
    pending: bool = True


class _Protocol(asyncio.DatagramProtocol):
    def __init__(self, owner: DnsChecker, ns: int) -> None:
        self.owner = owner
        self.ns = ns

    def datagram_received(self, data: bytes, addr: object) -> None:
        self.owner._on_datagram(self.ns, data)

    def error_received(self, exc: Exception) -> None:
        # ICMP port unreachable etc.: the query will time out and be retried
        log.debug("DNS socket error: %s", exc)


class DnsChecker:
    """Checks domains from an async iterator, calling ``on_result`` for each one.

    Keeps at most ``max_in_flight`` domains in progress; ids are taken from a shuffled pool and
    given back at the far end so a late answer to a timed-out query cannot match a new one
    (the question echo is compared as well).
    """

    def __init__(self, settings: DnsSettings, on_result: Callable[[str, str, str], None]) -> None:
        if not settings.nameservers and not settings.static_only:
            raise ValueError("no nameserver configured")
        self.settings = settings
        self.on_result = on_result
        self._transports: list[asyncio.DatagramTransport] = []
        self._pending: list[dict[int, _Query]] = []
        self._free_ids: list[collections.deque[int]] = []
        self._timeouts: collections.deque[_Query] = collections.deque()
        self._active = 0
        self._slot_free: asyncio.Event | None = None
        self._drained: asyncio.Event | None = None
        self._tcp_tasks: set[asyncio.Task[None]] = set()
        self._ns_turn = 0
        # congestion window (AIMD): grows with answers up to max_in_flight, shrinks on timeouts,
        # so an overloaded server or a full socket buffer does not turn loss into 'unknown'
        self._ceiling = float(min(max(1, settings.max_in_flight), 30000))
        self._window = min(self._ceiling, 64.0)
        self._last_cut = 0.0
        self._interval_start = time.monotonic()
        self._interval_answers = 0
        self._interval_timeouts = 0
        self.sent = 0
        self.answered = 0
        self.timeouts = 0

    # --- lifecycle ------------------------------------------------------------------------
    async def _open(self) -> None:
        loop = asyncio.get_running_loop()
        for index, (host, port) in enumerate(self.settings.nameservers):
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            transport, _ = await loop.create_datagram_endpoint(
                lambda index=index: _Protocol(self, index),  # type: ignore[misc]
                remote_addr=(host, port),
                family=family,
            )
            sock = transport.get_extra_info("socket")
            if sock is not None:
                _grow_buffers(sock)
            self._transports.append(transport)
            self._pending.append({})
            ids = list(range(65536))
            random.shuffle(ids)
            self._free_ids.append(collections.deque(ids))

    def _close(self) -> None:
        for transport in self._transports:
            transport.close()
        self._transports.clear()

    async def run(self, domains: AsyncIterator[str]) -> None:
        """Check every domain of ``domains``; returns when all have a result."""
        self._slot_free = asyncio.Event()
        self._drained = asyncio.Event()
        if self.settings.nameservers:
            await self._open()
        sweeper = asyncio.ensure_future(self._sweep())
        try:
            async for domain in domains:
                while self._active >= self._window:
                    self._slot_free.clear()
                    await self._slot_free.wait()
                self._start(domain)
            while self._active:
                self._drained.clear()
                await self._drained.wait()
        finally:
            sweeper.cancel()
            for task in list(self._tcp_tasks):
                task.cancel()
            self._close()

    # --- one domain -----------------------------------------------------------------------
    def _start(self, domain: str) -> None:
        name = domain.strip().lower().rstrip(".")
        static = self.settings.static.get(name)
        if static is not None:
            self.on_result(domain, ACTIVE, f"static {static}")
            return
        if self.settings.static_only:
            self.on_result(domain, FAILED, "not in the static answers")
            return
        try:
            qwire = encode_qname(name)
        except (ValueError, UnicodeEncodeError) as exc:
            self.on_result(domain, UNKNOWN, f"not asked: {exc}")
            return
        self._active += 1
        self._send(_Check(domain, name, qwire))

    def _finish(self, check: _Check, cls: str, detail: str) -> None:
        self._active -= 1
        self.on_result(check.domain, cls, detail)
        assert self._slot_free is not None and self._drained is not None
        self._slot_free.set()
        if not self._active:
            self._drained.set()

    def _send(self, check: _Check) -> None:
        check.attempts += 1
        ns = self._ns_turn
        self._ns_turn = (ns + 1) % len(self._transports)
        if check.attempts > 1 and len(self._transports) > 1:
            ns = (ns + check.attempts) % len(self._transports)  # retries go elsewhere first
        free = self._free_ids[ns]
        qid = free.popleft()
        question = check.qwire + _QTAIL[check.qtype]
        query = _Query(check, qid, ns, question, time.monotonic() + self.settings.timeout_s)
        self._pending[ns][qid] = query
        self._timeouts.append(query)
        self._transports[ns].sendto(_HEADER.pack(qid, 0x0100, 1, 0, 0, 1) + question + _OPT)
        self.sent += 1

    def _release(self, query: _Query) -> None:
        query.pending = False
        del self._pending[query.ns][query.qid]
        self._free_ids[query.ns].append(query.qid)

    async def _sweep(self) -> None:
        interval = min(0.05, self.settings.timeout_s / 4)
        while True:
            await asyncio.sleep(interval)
            now = time.monotonic()
            timeouts = self._timeouts
            while timeouts and (not timeouts[0].pending or timeouts[0].deadline <= now):
                query = timeouts.popleft()
                if query.pending:
                    self._release(query)
                    self.timeouts += 1
                    self._interval_timeouts += 1
                    self._retry(query.check, "timeout")
            if now - self._interval_start >= 1.0:
                self._adapt_window(now)

    def _adapt_window(self, now: float) -> None:
        """Halve the window when more than 5% of the last second's queries timed out.

        A share, not every timeout: dead authoritative servers make a few timeouts at any
        load and must not throttle the whole check; a full socket buffer (server or ours)
        loses a burst, which this sees.
        """
        answered, lost = self._interval_answers, self._interval_timeouts
        if lost and lost > 0.05 * (answered + lost):
            self._window = max(min(16.0, self._ceiling), self._window * 0.5)
            self._last_cut = now
            log.debug(
                "DNS window cut to %.0f (%d timeouts, %d answers)", self._window, lost, answered
            )
        self._interval_start = now
        self._interval_answers = self._interval_timeouts = 0

    def _retry(self, check: _Check, why: str) -> None:
        check.rcodes.append(why)
        if check.attempts <= self.settings.retries:
            self._send(check)
        else:
            self._finish(check, UNKNOWN, self._step_label(check) + ",".join(check.rcodes))

    @staticmethod
    def _step_label(check: _Check) -> str:
        qtype = "A" if check.qtype == A else "AAAA"
        via = f" {check.qname}" if check.qname != check.domain.lower().rstrip(".") else ""
        return f"{qtype}{via}: "

    def _next_step(self, check: _Check, qtype: int, qname: str | None = None) -> None:
        check.qtype = qtype
        check.attempts = 0
        check.rcodes = []
        if qname is not None:
            check.qname = qname
            check.qwire = encode_qname(qname)
        self._send(check)

    # --- answers --------------------------------------------------------------------------
    def _on_datagram(self, ns: int, data: bytes) -> None:
        if len(data) < 12:
            return
        qid, flags, _qd, ancount, _ns, _ar = _HEADER.unpack_from(data)
        query = self._pending[ns].get(qid)
        if query is None or not flags & 0x8000:
            return
        question = query.question
        end = 12 + len(question)
        if data[12:end].lower() != question:
            return  # not the answer to what we asked (late, or spoofed)
        self._release(query)
        self.answered += 1
        self._interval_answers += 1
        if self._window < self._ceiling:
            # fast start until the first cut, then slower growth
            self._window = min(self._ceiling, self._window + (0.1 if self._last_cut else 1.0))
        check = query.check
        rcode = flags & 0x000F
        if flags & 0x0200 and not ancount:
            self._tcp(check)
            return
        if rcode == 0:
            off = end
            saw_cname = False
            try:
                for _ in range(ancount):
                    off = _skip_name(data, off)
                    rtype, _rclass, _ttl, rdlen = _RR.unpack_from(data, off)
                    off += 10
                    if rtype == A and rdlen == 4 and check.qtype == A:
                        self._finish(check, ACTIVE, "A " + socket.inet_ntoa(data[off : off + 4]))
                        return
                    if rtype == AAAA and rdlen == 16 and check.qtype == AAAA:
                        addr = socket.inet_ntop(socket.AF_INET6, data[off : off + 16])
                        self._finish(check, ACTIVE, "AAAA " + addr)
                        return
                    if rtype == CNAME:
                        saw_cname = True
                    off += rdlen
            except (IndexError, struct.error):
                self._retry(check, "malformed")
                return
            if saw_cname:
                try:
                    message = dns.message.from_wire(data, ignore_trailing=True)
                except dns.exception.DNSException:
                    self._retry(check, "malformed")
                    return
                self._follow_cname(check, message)
            elif check.qtype == A:
                self._next_step(check, AAAA)
            else:
                self._finish(check, FAILED, self._no_address_detail(check))
        elif rcode == 3:
            via = f" (CNAME target {check.qname})" if check.depth else ""
            self._finish(check, FAILED, "NXDOMAIN" + via)
        else:
            self._retry(check, _RCODE_NAMES.get(rcode, f"RCODE{rcode}"))

    @staticmethod
    def _no_address_detail(check: _Check) -> str:
        via = f" (CNAME target {check.qname})" if check.depth else ""
        return "no address record" + via

    def _follow_cname(self, check: _Check, message: dns.message.Message) -> None:
        """The answer had a CNAME but no address: ask again for the end of the chain."""
        targets: dict[dns.name.Name, dns.name.Name] = {}
        for rrset in message.answer:
            if rrset.rdtype == dns.rdatatype.CNAME:
                targets[rrset.name] = rrset[0].target
        current = dns.name.from_text(check.qname)
        seen = {current}
        while current in targets:
            current = targets[current]
            if current in seen:
                self._finish(check, UNKNOWN, f"CNAME loop at {current}")
                return
            seen.add(current)
        check.depth += 1
        if check.depth > self.settings.max_cname_depth:
            self._finish(check, UNKNOWN, f"CNAME chain longer than {self.settings.max_cname_depth}")
            return
        try:
            self._next_step(check, check.qtype, current.to_text(omit_final_dot=True))
        except ValueError as exc:
            self._finish(check, UNKNOWN, f"bad CNAME target: {exc}")

    # --- TCP fallback for truncated answers -----------------------------------------------
    def _tcp(self, check: _Check) -> None:
        if not self.settings.tcp_fallback:
            self._retry(check, "truncated")
            return
        task = asyncio.ensure_future(self._tcp_query(check))
        self._tcp_tasks.add(task)
        task.add_done_callback(self._tcp_tasks.discard)

    async def _tcp_query(self, check: _Check) -> None:
        host, port = self.settings.nameservers[check.attempts % len(self.settings.nameservers)]
        qtype = dns.rdatatype.A if check.qtype == A else dns.rdatatype.AAAA
        query = dns.message.make_query(check.qname, qtype, use_edns=0)
        try:
            answer = await dns.asyncquery.tcp(
                query, host, timeout=self.settings.timeout_s, port=port
            )
        except (dns.exception.DNSException, OSError) as exc:
            self._retry(check, f"tcp {type(exc).__name__}")
            return
        rcode = answer.rcode()
        if rcode == dns.rcode.NOERROR:
            wanted = dns.rdatatype.A if check.qtype == A else dns.rdatatype.AAAA
            for rrset in answer.answer:
                if rrset.rdtype == wanted:
                    name = "A" if check.qtype == A else "AAAA"
                    self._finish(check, ACTIVE, f"{name} {rrset[0].address} (tcp)")
                    return
            if any(r.rdtype == dns.rdatatype.CNAME for r in answer.answer):
                self._follow_cname(check, answer)
            elif check.qtype == A:
                self._next_step(check, AAAA)
            else:
                self._finish(check, FAILED, self._no_address_detail(check))
        elif rcode == dns.rcode.NXDOMAIN:
            self._finish(check, FAILED, "NXDOMAIN (tcp)")
        else:
            self._retry(check, dns.rcode.to_text(rcode))


async def _aiter(items: Iterable[str]) -> AsyncIterator[str]:
    for item in items:
        yield item


def check_domains_inline(domains: Iterable[str], settings: DnsSettings) -> list[Result]:
    """Check ``domains`` in this process and thread; results in completion order."""
    results: list[Result] = []
    checker = DnsChecker(settings, lambda d, c, x: results.append((d, c, x)))
    loop = new_event_loop()
    try:
        loop.run_until_complete(checker.run(_aiter(domains)))
    finally:
        loop.close()
    return results
