"""The seed URL check against real TCP servers on loopback: it refuses the addresses the crawler
refuses in every spelling (no connection is made), says only "not reachable" whatever went
wrong, and cuts a server that answers one byte at a time at its total time limit."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from harvest.selection.urlcheck import NOT_REACHABLE, REFUSED_ADDRESS, UrlCheck, check_url
from tests.support.environment import free_port


@dataclass
class RawServer:
    """A loopback TCP server whose behaviour per connection is ``serve``; counts connections
    and notes when the client closed one."""

    serve: str  # "close", "drip"
    port: int = 0
    accepted: int = 0
    client_closed: threading.Event = field(default_factory=threading.Event)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self, listener: socket.socket) -> None:
        listener.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            self.accepted += 1
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()

    def handle(self, conn: socket.socket) -> None:
        with conn:
            if self.serve == "close":
                return
            conn.recv(4096)  # the request
            conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
            while not self.stop.is_set():  # one header byte every 0.1 s, for ever
                try:
                    conn.sendall(b"a")
                except OSError:
                    self.client_closed.set()
                    return
                if self.stop.wait(0.1):
                    return


@pytest.fixture
def raw_server(request: pytest.FixtureRequest) -> Iterator[RawServer]:
    server = RawServer(serve=request.param)
    listener = socket.create_server(("127.0.0.1", 0))
    server.port = listener.getsockname()[1]
    thread = threading.Thread(target=server.run, args=(listener,), daemon=True)
    thread.start()
    yield server
    server.stop.set()
    thread.join(10)
    listener.close()


@pytest.mark.parametrize("raw_server", ["close"], indirect=True)
def test_the_check_refuses_internal_addresses_in_every_spelling_without_connecting(
    raw_server: RawServer,
) -> None:
    port = raw_server.port
    spellings = [
        f"http://127.0.0.1:{port}/",
        f"http://localhost:{port}/",
        f"http://0x7f000001:{port}/",  # hexadecimal
        f"http://2130706433:{port}/",  # decimal
        f"http://0177.0.0.1:{port}/",  # octal
        f"http://127.1:{port}/",  # short form
        f"http://[::ffff:127.0.0.1]:{port}/",  # IPv4-mapped IPv6
        f"http://[::ffff:7f00:1]:{port}/",
        f"http://[64:ff9b::7f00:1]:{port}/",  # NAT64 of 127.0.0.1
        f"http://[::1]:{port}/",
        f"http://0.0.0.0:{port}/",
        f"http://169.254.169.254:{port}/",  # cloud metadata
        f"http://10.1.2.3:{port}/",
    ]
    for url in spellings:
        check = check_url(url, timeout=5)  # the setting's default: private addresses refused
        assert (check.verdict, check.reason) == ("invalid", REFUSED_ADDRESS), (url, check)
    assert raw_server.accepted == 0  # no port was touched


@pytest.mark.parametrize("raw_server", ["close"], indirect=True)
def test_a_failure_is_only_not_reachable(raw_server: RawServer) -> None:
    closed = free_port()  # nothing listens there
    dropped = check_url(f"http://127.0.0.1:{raw_server.port}/", allow_private=True, timeout=5)
    refused = check_url(f"http://127.0.0.1:{closed}/", allow_private=True, timeout=5)
    assert raw_server.accepted == 1
    for check in (dropped, refused):
        assert (check.verdict, check.reason) == ("invalid", NOT_REACHABLE), check
        assert check.message == f"{check.url}: not reachable"  # no exception name, no errno


@pytest.mark.parametrize("raw_server", ["drip"], indirect=True)
def test_a_server_answering_a_byte_at_a_time_is_cut_at_the_time_limit(
    raw_server: RawServer,
) -> None:
    done: list[UrlCheck] = []
    url = f"http://127.0.0.1:{raw_server.port}/"
    worker = threading.Thread(
        target=lambda: done.append(check_url(url, allow_private=True, timeout=1.0)), daemon=True
    )
    worker.start()
    worker.join(120)  # without a total limit this server holds the check for hours
    assert done, "the check did not end"
    assert (done[0].verdict, done[0].reason) == ("invalid", NOT_REACHABLE)
    assert raw_server.client_closed.wait(30)  # the check hung up: it holds no socket
