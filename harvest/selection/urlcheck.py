"""Online check of a curator's new seed URLs before they are accepted.

Why these verdicts: a URL answering 4xx/5xx, or whose host has no DNS, would give an empty
harvest, so it is refused with the reason; a redirect (3xx) is accepted but reported with its
target, so the curator can pick the better URL. Redirects are not followed (the curator decides).
``resolve`` (host -> address) lets tests and the demo reach loopback servers without DNS.
"""

from __future__ import annotations

import http.client
import logging
import socket
import ssl
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from harvestflow.progress import Progress

log = logging.getLogger(__name__)

USER_AGENT = "harvestflow-selection-check/0.1"


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


def _request(method: str, url: str, address: str, timeout: float) -> tuple[int, str | None]:
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    conn: http.client.HTTPConnection
    if parts.scheme == "https":
        context = ssl.create_default_context()
        context.check_hostname = False  # archives harvest sites with broken certificates too
        context.verify_mode = ssl.CERT_NONE
        conn = http.client.HTTPSConnection(host, port, timeout=timeout, context=context)
    else:
        conn = http.client.HTTPConnection(host, port, timeout=timeout)

    def connect(
        addr: tuple[str, int], timeout: float = timeout, source: object = None
    ) -> socket.socket:
        return socket.create_connection((address, addr[1]), timeout)

    conn._create_connection = connect  # type: ignore[attr-defined]  # connect to the resolved address
    try:
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        conn.request(method, path, headers={"User-Agent": USER_AGENT, "Accept": "*/*"})
        resp = conn.getresponse()
        resp.read(65536)
        return resp.status, resp.getheader("Location")
    finally:
        conn.close()


def check_url(url: str, *, timeout: float = 10.0, resolver: Resolver | None = None) -> UrlCheck:
    """The verdict on one URL (never raises for network trouble: that is a verdict)."""
    host = urlsplit(url).hostname or ""
    try:
        address = (resolver or system_resolver)(host)
    except (OSError, KeyError, LookupError) as exc:
        return UrlCheck(url, "invalid", reason=f"no DNS for {host} ({exc})")
    try:
        status, location = _request("HEAD", url, address, timeout)
        if status in (405, 501):  # HEAD not supported: ask for the page
            status, location = _request("GET", url, address, timeout)
    except (OSError, http.client.HTTPException, ssl.SSLError) as exc:
        return UrlCheck(
            url, "invalid", reason=f"no answer from {host} ({exc.__class__.__name__}: {exc})"
        )
    if 300 <= status < 400:
        target = urljoin(url, location) if location else None
        return UrlCheck(url, "redirect", status, target=target)
    if status >= 400:
        return UrlCheck(url, "invalid", status, reason=f"the server answered {status}")
    return UrlCheck(url, "ok", status)


def check_urls(
    urls: Iterable[str],
    *,
    timeout: float = 10.0,
    resolver: Resolver | None = None,
    workers: int = 16,
    progress_interval_s: float = 10.0,
) -> dict[str, UrlCheck]:
    """Verdicts on many URLs, checked in parallel (each URL once)."""
    unique = list(dict.fromkeys(urls))
    results: dict[str, UrlCheck] = {}
    if not unique:
        return results
    with (
        Progress("URL check", len(unique), interval_s=progress_interval_s, unit="URLs") as progress,
        ThreadPoolExecutor(max_workers=min(workers, len(unique))) as pool,
    ):
        for check in pool.map(lambda u: check_url(u, timeout=timeout, resolver=resolver), unique):
            results[check.url] = check
            progress.advance()
    return results
