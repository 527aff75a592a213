"""The home page's URL box and the tours' thumbnails, answered by the gateway with pywb's help.

Why the gateway looks first: pywb's calendar of an address it never captured is an empty page
in English; the gateway asks pywb's URL-search API (on loopback) whether anything is archived,
sends the reader to the calendar (``/all/*/<url>``) or the URL search of a site
(``/all/*/<url>*``, a prefix query) when something is, and says so in the reader's language
when nothing is. A tour's thumbnail is the capture's screenshot record
(``urn:screenshot:<url>``, written by the crawler when it rendered the page), read from pywb in
``id_`` mode and passed on only when it is that record, a PNG, of a URL no access rule
restricts.
"""

from __future__ import annotations

import http.client
import json
import logging
import re
from dataclasses import dataclass
from urllib.parse import quote, unquote, urlsplit

from access import i18n, pages
from access.config import ALL
from access.errors import AccessError
from access.rules import Rule, deciding
from harvestflow.formats.surt import surt

log = logging.getLogger(__name__)

LOOKUP = "/_lookup"
THUMB = "/_thumb/"
SCREENSHOT = "urn:screenshot:"  # the crawler's viewport screenshot record of a page
QUERY_TIMEOUT_S = 60  # pywb's answer to a URL search (and each audit query), between reads
MAX_URL = 2000
MAX_ANSWER = 64 * 1024  # the URL-search answer read: one line is enough
MAX_PNG = 8 * 1024 * 1024
_THUMB = re.compile(r"^/_thumb/([A-Za-z0-9][A-Za-z0-9_.-]*)/(\d{4,14})/(https?://\S+)$")
_ORIGINAL = re.compile(r'<([^>]*)>\s*;\s*rel="?original"?', re.I)


class LookupInputError(AccessError, ValueError):
    """What the reader typed is not an address: ``key`` names the catalogue's message."""

    def __init__(self, key: str, value: str) -> None:
        super().__init__(f"{key}: {value!r}")
        self.key, self.value = key, value


@dataclass(frozen=True)
class Wanted:
    url: str  # the address looked up (with its scheme; a prefix without the '*')
    prefix: bool  # a site followed by '*': every archived address under it

    @property
    def target(self) -> str:
        """pywb's calendar of the URL, or its URL search of the prefix."""
        return f"/{ALL}/*/{self.url}{'*' if self.prefix else ''}"


def parse(typed: str) -> Wanted:
    """The address a reader typed: ``example.org/page``, ``https://…``, ``example.org/*``."""
    text = typed.strip()
    if not text:
        raise LookupInputError("empty_address", "")
    if len(text) > MAX_URL or any(c.isspace() or ord(c) < 32 for c in text):
        raise LookupInputError("bad_address", text[:100])
    prefix = text.endswith("*")
    text = text.rstrip("*")
    if "://" not in text:
        text = "http://" + text
    parts = urlsplit(text)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise LookupInputError("bad_address", typed.strip()[:100])
    if prefix and not parts.path:
        text += "/"  # a host alone: everything under its root
    return Wanted(text, prefix)


def _get(host: str, port: int, path: str, timeout: float) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    conn.request("GET", path)
    return conn.getresponse()


def archived(host: str, port: int, wanted: Wanted, timeout: float) -> bool:
    """Whether pywb's URL search (``all``) finds at least one capture of ``wanted``."""
    query = f"url={quote(wanted.url, safe='')}&limit=1&output=json"
    if wanted.prefix:
        query += "&matchType=prefix"
    resp = _get(host, port, f"/{ALL}/cdx?{query}", timeout)
    try:
        body = resp.read(MAX_ANSWER)
    finally:
        resp.close()
    if resp.status == 404:
        return False  # pywb: "No Captures found"
    if resp.status != 200:
        raise ValueError(f"URL search answered {resp.status}")
    for line in body.splitlines():
        if line.strip():
            json.loads(line)  # a capture line, not an error page
            return True
    return False


def answer(typed: str, lang: str, pywb: tuple[str, int], timeout: float) -> tuple[int, str, str]:
    """The URL box's answer to ``typed``: (302, where, '') to the calendar or URL search, or
    (status, '', page) saying in ``lang`` that nothing is archived (404), that it is not an
    address (400) or that replay did not answer (502)."""
    t = i18n.texts(lang)
    try:
        wanted = parse(typed)
    except LookupInputError as exc:
        text = t[exc.key].format(url=exc.value)
        return 400, "", pages.message(lang, t["bad_request"], text, lookup=typed)
    try:
        found = archived(pywb[0], pywb[1], wanted, timeout)
    except (OSError, http.client.HTTPException, ValueError) as exc:
        log.warning("lookup of %s: replay service unavailable (%s)", wanted.url, exc)
        text = t["replay_unavailable_text"]
        return 502, "", pages.message(lang, t["replay_unavailable"], text, lookup=typed)
    if found:
        return 302, wanted.target, ""
    key = "not_archived_prefix" if wanted.prefix else "not_archived"
    text = t[key].format(url=wanted.url)
    return 404, "", pages.message(lang, t["not_archived_title"], text, lookup=typed)


def screenshot(host: str, port: int, path: str, rules: list[Rule], timeout: float) -> bytes | None:
    """The PNG of ``/_thumb/<coll>/<timestamp>/<url>``'s screenshot record, or None."""
    found = _THUMB.match(path)
    if not found:
        return None
    coll, when, url = found.group(1), found.group(2), found.group(3)
    try:
        rule = deciding(rules, surt(unquote(url)))
    except Exception:  # an address we cannot key gets no thumbnail
        return None
    if rule is not None and rule.policy not in ("allow", "open"):
        return None
    resp = _get(host, port, f"/{coll}/{when}id_/{SCREENSHOT}{url}", timeout)
    try:
        original = _ORIGINAL.search(resp.getheader("Link") or "")
        if (
            resp.status != 200
            or resp.getheader("Memento-Datetime") is None
            or (resp.getheader("Content-Type") or "").split(";")[0].strip() != "image/png"
            or not original
            or not original.group(1).startswith(SCREENSHOT)
        ):
            return None
        data = resp.read(MAX_PNG + 1)
    finally:
        resp.close()
    return data if 0 < len(data) <= MAX_PNG else None
