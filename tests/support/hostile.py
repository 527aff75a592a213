"""A hostile HTTP server on loopback: answers each path with bytes the test chose, exactly.

Why not http.server: a hostile server sends what no well-behaved library would write — tabs,
bare CR, NUL and 10 kB values in headers, compression bombs — so each response is given as raw
bytes (status line, headers and body) and written as is. One thread per connection, each
connection closed after its response; every socket has a timeout, so a test never hangs on it.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

HOST = "www.hostile.test"


def response(
    body: bytes = b"",
    *,
    status: bytes = b"200 OK",
    content_type: bytes | None = b"text/html",
    headers: list[tuple[bytes, bytes]] | None = None,
) -> bytes:
    """The raw bytes of one HTTP/1.1 response (header values written exactly as given)."""
    lines = [b"HTTP/1.1 " + status]
    if content_type is not None:
        lines.append(b"Content-Type: " + content_type)
    for name, value in headers or []:
        lines.append(name + b": " + value)
    lines.append(b"Content-Length: " + str(len(body)).encode())
    lines.append(b"Connection: close")
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def _zeros(
    compress: Callable[[bytes], bytes],
    flush: Callable[[], bytes],
    inflated: int,
    prefix: bytes,
    chunk: int = 1 << 20,
) -> bytes:
    """``prefix``, then zeros up to ``inflated`` bytes, through a streaming compressor."""
    zeros = bytes(chunk)
    parts = [compress(prefix)]
    parts += [compress(zeros) for _ in range(inflated // chunk)]
    parts.append(flush())
    return b"".join(parts)


def _zeros_compressed(inflated: int, wbits: int, prefix: bytes) -> bytes:
    # ISA-L's level 1 makes a 1 GiB bomb in ~0.05 s (zlib's level 9 takes ~2.5 s)
    from isal import isal_zlib

    comp = isal_zlib.compressobj(1, isal_zlib.DEFLATED, wbits)
    return _zeros(comp.compress, comp.flush, inflated, prefix)


def gzip_bomb(inflated: int, prefix: bytes = b"") -> bytes:
    """A gzip body: ``prefix``, then zeros up to ``inflated`` bytes (~1/1000 on the wire)."""
    return _zeros_compressed(inflated, 31, prefix)


def deflate_bomb(inflated: int, prefix: bytes = b"") -> bytes:
    """A zlib-wrapped deflate body (HTTP's ``deflate``): ``prefix``, then zeros."""
    return _zeros_compressed(inflated, 15, prefix)


def brotli_bomb(inflated: int, prefix: bytes = b"") -> bytes:
    """A brotli (``br``) body: ``prefix``, then zeros up to ``inflated`` bytes."""
    import brotli

    comp = brotli.Compressor(quality=1)
    return _zeros(comp.process, comp.finish, inflated, prefix)


def zstd_bomb(inflated: int, prefix: bytes = b"") -> bytes:
    """A zstd body: ``prefix``, then zeros up to ``inflated`` bytes (10 GiB: ~330 kB)."""
    from backports import zstd

    comp = zstd.ZstdCompressor(level=1)
    return _zeros(comp.compress, comp.flush, inflated, prefix, 1 << 24)


class HostileServer:
    """Serves ``routes`` (path → raw response bytes) on 127.0.0.1; 404 for anything else."""

    def __init__(self) -> None:
        self.routes: dict[str, bytes] = {}
        self.requests: list[str] = []
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.2)
        self.port: int = self._sock.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def url(self, path: str) -> str:
        return f"http://{HOST}:{self.port}{path}"

    def start(self) -> HostileServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._sock.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        conn.settimeout(10)
        try:
            data = b""
            while b"\r\n\r\n" not in data and len(data) < 65536:
                piece = conn.recv(4096)
                if not piece:
                    return
                data += piece
            target = data.split(b"\r\n", 1)[0].split(b" ")
            path = target[1].decode("latin-1") if len(target) > 1 else "/"
            self.requests.append(path)
            raw = self.routes.get(path)
            if raw is None:
                raw = response(b"not here", status=b"404 Not Found", content_type=b"text/plain")
            conn.sendall(raw)
        except OSError:
            pass  # the crawler hung up: its business
        finally:
            conn.close()


@contextmanager
def hostile_server() -> Iterator[HostileServer]:
    server = HostileServer().start()
    try:
        yield server
    finally:
        server.stop()
