"""A small authoritative DNS server for the preload tests (UDP + TCP on 127.0.0.1, port 0).

It answers from a dict of records and has the misbehaviours the checker must survive: SERVFAIL,
REFUSED, names that never answer, answers truncated over UDP, CNAME chains it does not chase.
It counts queries per (name, type) so tests can prove retries are bounded.
"""

from __future__ import annotations

import collections
import socket
import socketserver
import struct
import threading
from typing import Any

import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdatatype
import dns.rrset


class ZoneServer:
    """records: name -> {"A": [...], "AAAA": [...], "CNAME": "target", "TXT": [...]}."""

    def __init__(
        self,
        records: dict[str, dict[str, Any]],
        *,
        servfail: set[str] | None = None,
        refused: set[str] | None = None,
        silent: set[str] | None = None,
        truncate: set[str] | None = None,
        no_chase: set[str] | None = None,
        silent_all: bool = False,
    ) -> None:
        self.records = {k.lower().rstrip("."): v for k, v in records.items()}
        self.servfail = servfail or set()
        self.refused = refused or set()
        self.silent = silent or set()
        self.truncate = truncate or set()
        self.no_chase = no_chase or set()
        self.silent_all = silent_all
        self.delay_s = 0.0  # per UDP answer: a slow server, for kill/resume tests
        self.queries: collections.Counter[tuple[str, str]] = collections.Counter()
        self._lock = threading.Lock()
        self._udp: socket.socket | None = None
        self._tcp: socketserver.ThreadingTCPServer | None = None
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        self.port = 0

    # --- answers ------------------------------------------------------------------------------
    def answer(self, wire: bytes, over_tcp: bool) -> bytes | None:
        query = dns.message.from_wire(wire)
        question = query.question[0]
        name = question.name.to_text(omit_final_dot=True).lower()
        rdtype = dns.rdatatype.to_text(question.rdtype)
        with self._lock:
            self.queries[(name, rdtype)] += 1
        if self.silent_all or name in self.silent:
            return None
        response = dns.message.make_response(query)
        response.flags |= dns.flags.AA
        if name in self.servfail:
            response.set_rcode(dns.rcode.SERVFAIL)
            return response.to_wire()
        if name in self.refused:
            response.set_rcode(dns.rcode.REFUSED)
            return response.to_wire()
        if name in self.truncate and not over_tcp:
            response.flags |= dns.flags.TC
            return response.to_wire()
        current = name
        for _ in range(20):
            entry = self.records.get(current)
            if entry is None:
                response.set_rcode(dns.rcode.NXDOMAIN)  # the name, or the end of its chain
                break
            if "CNAME" in entry:
                target = entry["CNAME"].lower().rstrip(".")
                response.answer.append(
                    dns.rrset.from_text(current + ".", 300, "IN", "CNAME", target + ".")
                )
                if current in self.no_chase:
                    break
                current = target
                continue
            values = entry.get(rdtype, [])
            if values:
                response.answer.append(
                    dns.rrset.from_text_list(current + ".", 300, "IN", rdtype, values)
                )
            break
        return response.to_wire()

    # --- serving ------------------------------------------------------------------------------
    def start(self) -> ZoneServer:
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.bind(("127.0.0.1", 0))
        udp.settimeout(0.2)
        self._udp = udp
        self.port = udp.getsockname()[1]
        server = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                conn: socket.socket = self.request
                head = conn.recv(2)
                if len(head) < 2:
                    return
                (length,) = struct.unpack("!H", head)
                data = b""
                while len(data) < length:
                    chunk = conn.recv(length - len(data))
                    if not chunk:
                        return
                    data += chunk
                reply = server.answer(data, over_tcp=True)
                if reply is not None:
                    conn.sendall(struct.pack("!H", len(reply)) + reply)

        socketserver.ThreadingTCPServer.allow_reuse_address = True
        try:
            self._tcp = socketserver.ThreadingTCPServer(("127.0.0.1", self.port), Handler)
        except OSError:
            self._tcp = None  # the TCP port is taken: truncation tests would fail loudly
        self._threads = [threading.Thread(target=self._serve_udp, daemon=True)]
        if self._tcp is not None:
            self._tcp.daemon_threads = True
            self._threads.append(threading.Thread(target=self._tcp.serve_forever, daemon=True))
        for thread in self._threads:
            thread.start()
        return self

    def _serve_udp(self) -> None:
        assert self._udp is not None
        while not self._stop.is_set():
            try:
                wire, addr = self._udp.recvfrom(4096)
            except TimeoutError:
                continue
            except OSError:
                return
            if self.delay_s:
                self._stop.wait(self.delay_s)
            try:
                reply = self.answer(wire, over_tcp=False)
            except Exception:  # a malformed query: no answer, like a real server dropping it
                continue
            if reply is not None:
                self._udp.sendto(reply, addr)

    def stop(self) -> None:
        self._stop.set()
        if self._tcp is not None:
            self._tcp.shutdown()
            self._tcp.server_close()
        for thread in self._threads:
            thread.join(timeout=2)
        if self._udp is not None:
            self._udp.close()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"


SAMPLE_RECORDS: dict[str, dict[str, Any]] = {
    "exists.test": {"A": ["192.0.2.1"]},
    "www.exists.test": {"A": ["192.0.2.1"]},
    "v6only.test": {"AAAA": ["2001:db8::1"]},
    "noaddr.test": {"TXT": ["no address here"]},
    "alias.test": {"CNAME": "mid.test"},
    "mid.test": {"CNAME": "exists.test"},
    "hop.test": {"CNAME": "alias.test"},  # served with no_chase: the checker must follow
    "dangling.test": {"CNAME": "gone.test"},
    "loop1.test": {"CNAME": "loop2.test"},
    "loop2.test": {"CNAME": "loop1.test"},
    "big.test": {"A": ["192.0.2.9"]},  # truncated over UDP: answered over TCP only
}
