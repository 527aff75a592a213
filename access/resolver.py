"""Our WARC resolver: pywb's last place to look for a WARC, serving byte ranges over loopback.

Why a server of ours rather than S3 URLs in pywb's path index: presigned URLs expire, a public
bucket would expose the preservation store, and pywb's S3 loader cannot be given our endpoint.
For ``GET /warc/<file name>`` it finds the file from the harvest database (repository copy,
verified backup, preserved copy in S3, the continuous crawl's live folder) and streams the
requested range; credentials stay in this process.
"""

from __future__ import annotations

import logging
import re
import shutil
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from botocore.exceptions import ClientError

from access.errors import AccessError
from access.index import live_dir
from harvestflow.db import get_engine
from harvestflow.s3 import s3_client
from harvestflow.settings import Settings
from indexing import manifest
from preservation.records import preserved_key

log = logging.getLogger(__name__)

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
_RANGE = re.compile(r"^bytes=(\d{0,20})-(\d{0,20})$")
_CHUNK = 1 << 16
_TTL_S = 60.0


@dataclass(frozen=True)
class Location:
    """Where a WARC was found: a local ``path``, or (``bucket``, ``key``) on our S3."""

    path: Path | None = None
    bucket: str | None = None
    key: str | None = None

    def __str__(self) -> str:
        return str(self.path) if self.path else f"s3://{self.bucket}/{self.key}"


class WarcLocator:
    """File name → :class:`Location`, from the index manifest and the preservation records."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.engine = get_engine(settings.harvest_db_url)
        self._cache: dict[str, tuple[float, Location | None]] = {}
        self._lock = threading.Lock()
        self._s3: Any = None

    def s3(self) -> Any:
        if self._s3 is None:
            # a reader is waiting: short connect timeout, a few inner retries
            self._s3 = s3_client(
                self.settings,
                connect_timeout=5,
                read_timeout=60,
                retries={"max_attempts": 4, "mode": "standard"},
            )
        return self._s3

    def locate(self, name: str) -> Location | None:
        now = time.monotonic()
        with self._lock:
            hit = self._cache.get(name)
        if hit and now - hit[0] < _TTL_S and (hit[1] is None or self._still_there(hit[1])):
            return hit[1]
        found = self._lookup(name)
        with self._lock:
            self._cache[name] = (now, found)
        return found

    @staticmethod
    def _still_there(loc: Location) -> bool:
        return loc.path is None or loc.path.is_file()

    def _lookup(self, name: str) -> Location | None:
        entry = manifest.get(self.engine, name)
        if entry is not None:
            if entry.final_path and Path(entry.final_path).is_file():
                return Location(path=Path(entry.final_path))
            backup = entry.backup_location or ""
            if backup.startswith("s3://"):
                bucket, _, key = backup[5:].partition("/")
                return Location(bucket=bucket, key=key)
            if backup and Path(backup).is_file():
                return Location(path=Path(backup))
        with self.engine.connect() as conn:
            preserved = preserved_key(conn, name)
        if preserved:
            return Location(bucket=self.settings.s3.bucket, key=preserved)
        live = live_dir(self.settings) / "warcs" / name
        if live.is_file():
            return Location(path=live)
        return None


class RangeError(AccessError, ValueError):
    """A ``Range`` header this server does not satisfy (answered 416, never a wrong 206)."""


@dataclass(frozen=True)
class ByteRange:
    """One range of a ``Range: bytes=…`` header: ``first-last``, ``first-`` or ``-suffix``.

    ``first`` None: the last ``last`` bytes (a suffix range); ``last`` None: to the end.
    """

    first: int | None
    last: int | None

    def span(self, size: int) -> tuple[int, int]:
        """(first, last) byte of a file of ``size`` bytes; RangeError if none of it exists."""
        if self.first is None:
            assert self.last is not None
            if self.last == 0 or size == 0:
                raise RangeError(f"range -{self.last} of a {size}-byte file")
            return max(0, size - self.last), size - 1
        if self.first >= size:
            raise RangeError(f"range starts at {self.first}, past the end ({size} bytes)")
        return self.first, size - 1 if self.last is None else min(self.last, size - 1)

    def header(self) -> str:
        """The same range for an S3 ``GetObject``."""
        first = "" if self.first is None else str(self.first)
        return f"bytes={first}-{'' if self.last is None else self.last}"


def _parse_range(header: str | None) -> ByteRange | None:
    """The one range of a ``Range`` header; None for the whole file.

    Why refuse so much (416): pywb asks for one ``first-last`` range of a record; anything else
    (several ranges, another unit, ``last`` before ``first``) would otherwise be answered with a
    wrong or negative length. A refusal names the header.
    """
    if not header:
        return None
    match = _RANGE.match(header.strip())
    if not match:
        raise RangeError(f"unsupported Range {header!r}: want one range, bytes=FIRST-[LAST]")
    first, last = match.group(1), match.group(2)
    if not first and not last:
        raise RangeError(f"unsupported Range {header!r}: want bytes=FIRST-[LAST] or bytes=-N")
    rng = ByteRange(int(first) if first else None, int(last) if last else None)
    if rng.first is not None and rng.last is not None and rng.last < rng.first:
        raise RangeError(f"Range {header!r}: the last byte comes before the first")
    return rng


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        log.info("resolver %s " + format, self.client_address[0], *args)

    def do_HEAD(self) -> None:
        self._serve(body=False)

    def do_GET(self) -> None:
        self._serve(body=True)

    def _serve(self, body: bool) -> None:
        if self.path == "/health":
            self._reply(200, b"ok\n", body)
            return
        if not self.path.startswith("/warc/"):
            self._reply(404, b"not found\n", body)
            return
        name = unquote(self.path[len("/warc/") :])
        if not _NAME.match(name):
            self._reply(400, f"bad WARC name {name!r}\n".encode(), body)
            return
        try:
            rng = _parse_range(self.headers.get("Range"))
        except RangeError as exc:
            self._reply(416, f"{exc}\n".encode(), body)
            return
        try:
            loc = self.server.locator.locate(name)
        except Exception as exc:  # the database is down: say so, pywb tries no further
            log.exception("resolver: looking up %s failed", name)
            self._reply(503, f"{name}: lookup failed: {exc}\n".encode(), body)
            return
        if loc is None:
            self._reply(404, f"{name}: no copy known\n".encode(), body)
            return
        try:
            if loc.path is not None:
                self._send_file(loc.path, rng, body)
            else:
                self._send_s3(loc, rng, body)
        except (BrokenPipeError, ConnectionResetError):
            pass
        except RangeError as exc:
            self._reply(416, f"{name}: {exc}\n".encode(), body)
        except Exception as exc:
            log.warning("resolver: %s from %s failed: %s", name, loc, exc)
            self._reply(502, f"{name}: reading {loc} failed: {exc}\n".encode(), body)

    def _reply(self, status: int, text: bytes, body: bool) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        if body:
            self.wfile.write(text)

    def _send_file(self, path: Path, rng: ByteRange | None, body: bool) -> None:
        size = path.stat().st_size
        first, last = (0, size - 1) if rng is None else rng.span(size)
        length = last - first + 1
        with open(path, "rb") as fh:
            self._headers(rng is not None, first, last, length, size)
            if body:
                fh.seek(first)
                remaining = length
                while remaining > 0:
                    chunk = fh.read(min(_CHUNK, remaining))
                    if not chunk:
                        break
                    self.wfile.write(chunk)
                    remaining -= len(chunk)

    def _send_s3(self, loc: Location, rng: ByteRange | None, body: bool) -> None:
        client = self.server.locator.s3()
        args: dict[str, Any] = {"Bucket": loc.bucket, "Key": loc.key}
        if rng is not None:
            args["Range"] = rng.header()
        try:
            obj = client.get_object(**args)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "InvalidRange":
                raise RangeError(f"{rng.header() if rng else ''}: past the end") from exc
            raise
        length = int(obj["ContentLength"])
        size = length
        first, last = 0, length - 1
        if rng is not None and obj.get("ContentRange"):
            span, _, total = str(obj["ContentRange"]).removeprefix("bytes ").partition("/")
            first, last = (int(x) for x in span.split("-"))
            size = int(total) if total.isdigit() else -1
        self._headers(rng is not None, first, last, length, size)
        if body:
            shutil.copyfileobj(obj["Body"], self.wfile, _CHUNK)
        obj["Body"].close()

    def _headers(self, partial: bool, first: int, last: int, length: int, size: int) -> None:
        self.send_response(206 if partial else 200)
        self.send_header("Content-Type", "application/warc")
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Length", str(length))
        if partial:
            self.send_header("Content-Range", f"bytes {first}-{last}/{size if size >= 0 else '*'}")
        self.end_headers()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    locator: WarcLocator


def make_server(settings: Settings, host: str, port: int) -> _Server:
    """The resolver bound to ``host:port`` (call ``serve_forever`` in a thread)."""
    server = _Server((host, port), _Handler)
    server.locator = WarcLocator(settings)
    return server
