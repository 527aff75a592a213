"""SURT keys (Sort-friendly URI Reordering Transform) for CDX lines.

Why our own: the reference implementation (the ``surt`` package) is AGPL and may only serve as a
test oracle. Replay tools binary-search CDX files by this key, so ours must give byte-for-byte the
key the reference gives with its defaults (``surt.surt(url)``: canonicalise the way the Internet
Archive's Wayback does, reverse the host, drop the scheme). The behaviour is described by the
Wayback URL key maker: Google-style canonicalisation (unescape repeatedly, normalise dots in the
path, IDNA hosts, numeric IPv4 hosts, escape once), then the Internet Archive's (lower-case, strip
``www``/``www2.``, default ports, session ids, trailing slash, sort the query arguments).

The URL parsing pieces are the standard library's (``urllib.parse`` byte results, ``quote``,
``unquote``, the ``idna`` codec) so that edge cases (bad ports, IPv6 brackets) behave alike.
"""

from __future__ import annotations

import contextlib
import functools
import re
import socket
import struct
from urllib.parse import SplitResultBytes, quote_from_bytes, unquote_to_bytes

from harvestflow.errors import HarvestflowError

__all__ = ["SurtError", "surt", "surt_or_url"]


class SurtError(HarvestflowError, ValueError):
    """The URL cannot be keyed; callers index it under the URL itself (as the reference does)."""


# Authority + path split (RFC 2396 appendix B, scheme restricted to legal characters).
_SPLIT = re.compile(
    rb"^(([a-zA-Z][a-zA-Z0-9+.-]*):)?((//([^/?#]*))?([^?#]*)(\?([^#]*))?)?(#(.*))?$"
)
_HAS_SCHEME = re.compile(rb"^[a-zA-Z][a-zA-Z0-9+\-.]*:")
_REPEATED_HTTP = re.compile(rb"^(https?://)+")
_CONTROL_WS = re.compile(rb"[\n\r\t]")
_WWW = re.compile(rb"www\d*\.")
_DECIMAL_IP = re.compile(rb"^([1-9][0-9]*)(\.[0-9]+)?(\.[0-9]+)?(\.[0-9]+)?$")
_OCTAL_IP = re.compile(rb"^(0[0-7]*)(\.[0-7]+)?(\.[0-7]+)?(\.[0-7]+)?$")
# Everything printable except '%', '#' and space stays as is when escaping.
_SAFE = b"!\"$&'()*+,-./:;<=>?@[\\]^_`{|}~"
_NOTHING_TO_ESCAPE = re.compile(rb"[A-Za-z0-9_.\-~!\"$&'()*+,/:;<=>?@\[\\\]^`{|}]*\Z")
_PATH_SESSION = (
    re.compile(rb"^(.*/)(\((?:[a-z]\([0-9a-z]{24}\))+\)/)([^\?]+\.aspx.*)$", re.I),
    re.compile(rb"^(.*/)(\([0-9a-z]{24}\)/)([^\?]+\.aspx.*)$", re.I),
)
_QUERY_SESSION = (
    re.compile(rb"^(.*)(?:jsessionid=[0-9a-zA-Z]{32})(?:&(.*))?$", re.I),
    re.compile(rb"^(.*)(?:phpsessid=[0-9a-zA-Z]{32})(?:&(.*))?$", re.I),
    re.compile(rb"^(.*)(?:sid=[0-9a-zA-Z]{32})(?:&(.*))?$", re.I),
    re.compile(rb"^(.*)(?:ASPSESSIONID[a-zA-Z]{8}=[a-zA-Z]{24})(?:&(.*))?$", re.I),
    re.compile(rb"^(.*)(?:cfid=[^&]+&cftoken=[^&]+)(?:&(.*))?$", re.I),
)
_DEFAULT_PORTS = {b"http": 80, b"https": 443}
# a netloc with user info, a port, IPv6 brackets or a zone: urllib's parsing is needed
_NETLOC_PARTS = re.compile(rb"[@:\[%]")
# what every _QUERY_SESSION pattern holds (lower-cased): a query without it skips all five
_SESSION_HINT = re.compile(rb"sessionid|sid=|cfid=")
# (these, and find() below, rather than ``b"x" in value``: CPython's bytes.__contains__ first
# tries its operand as an int, and formats and drops a TypeError on each test)


def _unescape_all(value: bytes) -> bytes:
    """%-decode until stable (double-escaped URLs get the same key as plain ones)."""
    if value.find(b"%") < 0:
        return value
    while True:
        decoded = unquote_to_bytes(value)
        if decoded == value:
            return value
        value = decoded


def _escape(value: bytes) -> bytes:
    if not value or _NOTHING_TO_ESCAPE.match(value):
        return value
    return quote_from_bytes(value, safe=_SAFE).encode("ascii")


def _numeric_host(host: bytes) -> bytes | None:
    """Dotted/octal/integer IPv4 forms written as a dotted quad, without any DNS lookup."""
    if host.isdigit():
        return socket.inet_ntoa(struct.pack(">L", int(host) & 0xFFFFFFFF)).encode("ascii")
    if _DECIMAL_IP.match(host) or _OCTAL_IP.match(host):
        try:
            return socket.inet_ntoa(socket.inet_aton(host.decode("ascii"))).encode("ascii")
        except OSError:
            return None
    return None


def _normalize_path(path: bytes | None) -> bytes:
    """Resolve '.' and '..' segments and collapse repeated slashes (keeps a final slash)."""
    if not path:
        return b"/"
    if path[:1] == b"/" and path.find(b"//") < 0 and path.find(b"/.") < 0:
        return path  # no empty, "." or ".." segment: nothing to resolve (the usual path)
    kept: list[bytes] = []
    for segment in path.split(b"/")[1:]:
        if segment == b".":
            continue
        if segment == b".." and kept:
            kept.pop()
        else:
            kept.append(segment)
    if not kept:
        return b"/"
    out = b"/" + b"".join(seg + b"/" for seg in kept[:-1] if seg)
    return out + kept[-1]


@functools.lru_cache(maxsize=4096)  # pure; a crawl's records share few hosts
def _host_key(host: bytes, massage: bool) -> bytes:
    """The canonical host, its labels reversed and joined by commas (empty when nothing is
    left of the host)."""
    return b",".join(reversed(_canonical_host(host, massage).split(b".")))


def _canonical_host(host: bytes, massage: bool) -> bytes:
    host = _unescape_all(host)
    if not host.isascii():
        with contextlib.suppress(ValueError):
            host = host.decode("utf-8", "ignore").encode("idna")
    host = host.replace(b"..", b".").strip(b".")
    numeric = _numeric_host(host)
    host = numeric if numeric else _escape(host.lower())
    host = host.lower()
    match = _WWW.match(host) if massage else None
    return host[match.end() :] if match else host


def _sort_query(query: bytes) -> bytes:
    if query.find(b"&") < 0:
        return query  # one argument: sorted, split and joined again, it is itself
    pairs = sorted(tuple(arg.split(b"=", 1)) for arg in query.split(b"&"))
    return b"&".join(b"=".join(pair) for pair in pairs)


def _canonical_query(query: bytes | None) -> bytes | None:
    if not query:
        return None
    query = _escape(_unescape_all(query))
    lowered = query.lower()
    # every session pattern (case-insensitive) holds one of these: most queries skip all five
    if _SESSION_HINT.search(lowered):
        for pattern in _QUERY_SESSION:
            match = pattern.match(query)
            if match:
                query = match.group(1) + (match.group(2) or b"")
        lowered = query.lower()
    query = _sort_query(lowered)
    return query or None


def _canonical_path(path: bytes | None, has_host: bool) -> bytes | None:
    raw = _unescape_all(path) if path is not None else None
    if has_host:
        raw = _normalize_path(raw)
    path = _escape(raw) if raw else raw
    if not path:
        return path
    path = path.lower()
    if path.find(b"(") >= 0:  # both session patterns start with a parenthesis
        for pattern in _PATH_SESSION:
            match = pattern.match(path)
            if match:
                path = match.group(1) + match.group(3)
    if len(path) > 1 and path.endswith(b"/"):
        path = path[:-1]
    return path


def _surt_bytes(url: bytes) -> bytes:
    if not url:
        return b"-"
    if url.startswith(b"filedesc"):
        return url
    url = url.strip()
    if _CONTROL_WS.search(url):
        url = _CONTROL_WS.sub(b"", url)
    if url and not _HAS_SCHEME.match(url):
        url = b"http://" + url
    repeated = _REPEATED_HTTP.match(url)
    if repeated and repeated.start(1):  # "http://https://x": the last one stays
        url = repeated.group(1) + url[repeated.end() :]
    match = _SPLIT.match(url)
    if not match or not match.group(2):
        raise SurtError(f"no scheme in {url!r}")
    scheme, netloc, path = match.group(2, 5, 6)
    netloc = (netloc or b"").rstrip(b":")
    if _NETLOC_PARTS.search(netloc):
        parts = SplitResultBytes(scheme, netloc, path or b"", b"", b"")
        try:
            port = parts.port or None
        except ValueError as exc:
            raise SurtError(f"bad port in {url!r}: {exc}") from exc
        host = parts.hostname or None
    else:  # urllib's hostname and port of a bare host, without its parsing
        port, host = None, netloc.lower() or None
    path = path or None
    if scheme.startswith(b"http") and host is None and path is not None:
        # "http:////www.example.com" and the like: the host is the first path segment
        head, _, tail = path.lstrip(b"/").partition(b"/")
        host, path = head, b"/" + tail
    if host:
        host = _host_key(host, scheme != b"dns")
    path = _canonical_path(path, bool(host))
    query = _canonical_query(match.group(8) or None)
    if port is not None and port == _DEFAULT_PORTS.get(scheme.lower(), 0):
        port = None

    if host:
        out = host
        if port is not None:
            out += b":%d" % port
        out += b")"
    else:
        out = scheme + b":"
    if path:
        out += path
    elif query is not None:
        out += b"/"
    if query is not None:
        out += b"?" + query
    return out


def surt(url: str) -> str:
    """The SURT key of ``url`` (raises :class:`SurtError` when it cannot be parsed)."""
    return _surt_bytes(url.encode("utf-8")).decode("utf-8")


def surt_or_url(url: str) -> str:
    """The key CDX indexers write: the SURT, or the URL itself when it cannot be keyed."""
    try:
        return surt(url)
    except (SurtError, ValueError, UnicodeError):
        return url
