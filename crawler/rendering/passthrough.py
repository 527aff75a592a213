"""The last resort for a rendering browser's request of a URL the job already has: an
unrecorded fetch.

Why: one capture per URL per job, and a captured URL is served from its WARC record
(crawler/rendering/archive.py). Two cases have no record to serve: a non-GET request of such a URL
(a form posting to a captured page), and a capture written as a revisit whose original lies in
an earlier job's WARC the crawler cannot read (the dedup index names it by file name only). The
page still needs an answer, so it is fetched here with aiohttp through the job's host mapping
(like the crawler's resolver), with the job's User-Agent, and handed to the browser only;
nothing of it is written (the renderer logs it and counts ``harvestflow/render/refetched``).
It asks for the encodings the crawler asks for, and decodes them with the crawler's bounded
inflation (crawler/inflate.py), not aiohttp's: one bound and one budget for every path that
inflates a body in the process.
"""

from __future__ import annotations

import logging
from collections.abc import Collection

import aiohttp

from crawler.inflate import ACCEPT_ENCODING, Inflater, encodings_of
from crawler.rendering.proxy import ProxyRequest, ProxyResponse
from harvestflow.pinned_resolver import PinnedResolver

log = logging.getLogger(__name__)


class MappedResolver(PinnedResolver):
    """The job's host → address map first (like the crawler's resolver), then the system's."""

    def __init__(self, mapping: dict[str, str]) -> None:
        super().__init__()
        self.mapping = {k.lower(): v for k, v in mapping.items()}

    def pinned(self, host: str, port: int) -> tuple[str, int] | None:
        ip = self.mapping.get(host.lower())
        return None if ip is None else (ip, port)


class Passthrough:
    """Unrecorded fetches for the browser (one session per job, opened on first use)."""

    def __init__(
        self,
        resolve: dict[str, str],
        timeout_s: float,
        max_bytes: int,
        user_agent: str,
        drop_headers: Collection[str],
        inflater: Inflater | None = None,
    ) -> None:
        self.resolve = resolve
        self.timeout_s = timeout_s
        self.max_bytes = max_bytes
        self.user_agent = user_agent
        self.drop = {h.lower() for h in drop_headers} | {"accept-encoding"}
        self.inflater = inflater or Inflater()
        self._session: aiohttp.ClientSession | None = None

    async def fetch(self, req: ProxyRequest, url: str) -> ProxyResponse:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(resolver=MappedResolver(self.resolve)),
                timeout=aiohttp.ClientTimeout(total=self.timeout_s),
                auto_decompress=False,  # decoded below, within the inflate bounds
            )
        headers = [(k, v) for k, v in req.headers if k.lower() not in self.drop]
        headers.append(("User-Agent", self.user_agent))
        headers.append(("Accept-Encoding", ACCEPT_ENCODING.decode()))
        try:
            async with self._session.request(
                req.method, url, headers=headers, data=req.body or None, allow_redirects=False
            ) as resp:
                chunks: list[bytes] = []
                size = 0
                async for chunk in resp.content.iter_chunked(65536):
                    chunks.append(chunk)
                    size += len(chunk)
                    if size >= self.max_bytes:
                        break
                body = b"".join(chunks)[: self.max_bytes]
                heads = list(resp.headers.items())
                got = self.inflater.inflate(body, encodings_of(heads))
                if got.cut:
                    log.warning(
                        "render: %s inflates past the bounds: the browser gets its first %d"
                        " bytes (limit %d)",
                        url, len(got.body), self.inflater.limit,
                    )  # fmt: skip
                response = ProxyResponse(
                    resp.status, got.headers(heads), got.body, resp.reason or ""
                )
                if got.token is not None:
                    got.token.held_by(response)
                return response
        except (aiohttp.ClientError, TimeoutError) as exc:
            return ProxyResponse(502, [("Content-Type", "text/plain")], str(exc).encode(), "Error")

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
