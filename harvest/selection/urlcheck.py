"""Online check of a curator's new seed URLs before they are accepted.

Why: a URL answering 4xx/5xx or without DNS would give an empty harvest (refused with the
reason); a redirect is accepted and reported with its target, not followed. Why it refuses what
the crawler refuses: a check that connects anywhere is a scanner of the internal network, so the
address goes through :func:`harvestflow.addresses.address_allowed` and a failure is reported
only as "not reachable". ``[harvest] url_check_timeout_s`` bounds the whole check.
"""

from __future__ import annotations

import contextlib
import http.client
import logging
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from harvestflow.addresses import address_allowed
from harvestflow.progress import Progress
from harvestflow.settings import get_settings

log = logging.getLogger(__name__)

USER_AGENT = "harvestflow-selection-check/0.1"
NOT_REACHABLE = "not reachable"
REFUSED_ADDRESS = (
    "not reachable: the crawler does not fetch loopback, private, link-local or reserved addresses"
)
DEFAULT_TIMEOUT_S = 8.0


@dataclass(frozen=True)
class UrlCheck:
    url: str
    verdict: str  # "ok", "redirect", "invalid"
    status: int | None = None
    target: str | None = None
    reason: str | None = None

    @property
    def message(self) -> str:
        if self.verdict == "redirect":
            return f"{self.url} redirects ({self.status}) to {self.target}"
        if self.verdict == "invalid":
            return f"{self.url}: {self.reason}"
        return f"{self.url}: {self.status}"


Resolver = Callable[[str], str]


def system_resolver(host: str) -> str:
    return socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)[0][4][0]  # type: ignore[return-value]


def time_limit_s() -> float:
    """The total time one URL's check may take (``[harvest] url_check_timeout_s``)."""
    return float(get_settings().get("harvest", "url_check_timeout_s", DEFAULT_TIMEOUT_S))


def private_allowed() -> bool:
    """Whether the check may reach non-public addresses (``[harvest] url_check_allow_private``)."""
    return get_settings().get("harvest", "url_check_allow_private", False) is True


def _cut(conn: http.client.HTTPConnection) -> None:
    """At the deadline: shut the connection's socket, so a blocked read or write returns."""
    sock = conn.sock
    if sock is None:
        return
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def _request(method: str, url: str, address: str, deadline: float) -> tuple[int, str | None]:
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError("time limit reached")
    conn: http.client.HTTPConnection
    if parts.scheme == "https":
        context = ssl.create_default_context()
        context.check_hostname = False  # archives harvest sites with broken certificates too
        context.verify_mode = ssl.CERT_NONE
        conn = http.client.HTTPSConnection(host, port, timeout=remaining, context=context)
    else:
        conn = http.client.HTTPConnection(host, port, timeout=remaining)

    def connect(
        addr: tuple[str, int], timeout: float = remaining, source: object = None
    ) -> socket.socket:
        return socket.create_connection((address, addr[1]), timeout)

    conn._create_connection = connect  # type: ignore[attr-defined]  # connect to the resolved address
    timer = threading.Timer(remaining, _cut, args=(conn,))
    timer.daemon = True
    timer.start()
    try:
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        conn.request(method, path, headers={"User-Agent": USER_AGENT, "Accept": "*/*"})
        resp = conn.getresponse()
        resp.read(65536)
        if time.monotonic() >= deadline:
            raise TimeoutError("time limit reached")  # the answer was cut, not complete
        return resp.status, resp.getheader("Location")
    finally:
        timer.cancel()
        conn.close()


def _resolve(host: str, resolver: Resolver, deadline: float) -> str:
    """``resolver(host)`` within the deadline (a stalled DNS lookup cannot be interrupted:
    its thread is left to end on its own)."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="urlcheck-dns")
    try:
        return pool.submit(resolver, host).result(timeout=max(deadline - time.monotonic(), 0))
    except FutureTimeout:
        raise TimeoutError(f"no DNS answer for {host} in time") from None
    finally:
        pool.shutdown(wait=False)


def check_url(
    url: str,
    *,
    timeout: float | None = None,
    resolver: Resolver | None = None,
    allow_private: bool | None = None,
) -> UrlCheck:
    """The verdict on one URL (never raises for network trouble: that is a verdict).

    ``timeout``: the total time the check may take (default: the setting); ``resolver``: an
    explicit host -> address map, trusted as the crawler trusts ``--resolve``;
    ``allow_private`` (default: the setting): reach loopback and private addresses.
    """
    deadline = time.monotonic() + (time_limit_s() if timeout is None else timeout)
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return UrlCheck(url, "invalid", reason="not a URL")
    trusted = resolver is not None or (
        private_allowed() if allow_private is None else allow_private
    )
    try:
        address = _resolve(host, resolver or system_resolver, deadline)
    except (OSError, KeyError, LookupError, UnicodeError) as exc:
        log.info("URL check %s: no DNS for %s (%s)", url, host, exc)
        return UrlCheck(url, "invalid", reason=f"no DNS for {host}")
    if not trusted and not address_allowed(address):
        log.warning("URL check %s: refused, %s resolves to non-public %s", url, host, address)
        return UrlCheck(url, "invalid", reason=REFUSED_ADDRESS)
    try:
        status, location = _request("HEAD", url, address, deadline)
        if status in (405, 501):  # HEAD not supported: ask for the page
            status, location = _request("GET", url, address, deadline)
    except (OSError, http.client.HTTPException, ssl.SSLError, ValueError) as exc:
        log.info("URL check %s: no answer (%s: %s)", url, exc.__class__.__name__, exc)
        return UrlCheck(url, "invalid", reason=NOT_REACHABLE)
    if 300 <= status < 400:
        target = urljoin(url, location) if location else None
        return UrlCheck(url, "redirect", status, target=target)
    if status >= 400:
        return UrlCheck(url, "invalid", status, reason=f"the server answered {status}")
    return UrlCheck(url, "ok", status)


def check_urls(
    urls: Iterable[str],
    *,
    timeout: float | None = None,
    resolver: Resolver | None = None,
    allow_private: bool | None = None,
    workers: int = 16,
    progress_interval_s: float = 10.0,
) -> dict[str, UrlCheck]:
    """Verdicts on many URLs, checked in parallel (each URL once; arguments: :func:`check_url`)."""
    unique = list(dict.fromkeys(urls))
    results: dict[str, UrlCheck] = {}
    if not unique:
        return results
    with (
        Progress("URL check", len(unique), interval_s=progress_interval_s, unit="URLs") as progress,
        ThreadPoolExecutor(max_workers=min(workers, len(unique))) as pool,
    ):
        for check in pool.map(
            lambda u: check_url(u, timeout=timeout, resolver=resolver, allow_private=allow_private),
            unique,
        ):
            results[check.url] = check
            progress.advance()
    return results
