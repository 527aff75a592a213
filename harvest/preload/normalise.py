"""Domain normalisation for the broad-crawl preload.

Why: the preload merges millions of lines from registries, the harvest DB, curators' selections
and URL lists written by other workflows. They disagree on case, trailing dots, Unicode vs
punycode and subdomains, so every line is reduced to one canonical *registrable* domain (what a
NetarchiveSuite ``domains`` row is) before de-duplication. Anything that cannot be a crawlable
registrable domain is rejected with a reason, never silently dropped.

The public-suffix list is tldextract's bundled snapshot only (nothing fetched at run time) and
private suffixes (blogspot.com...) are ignored, as NetarchiveSuite does with its ICANN list.
IDN handling is IDNA 2008 with UTS 46 mapping (``idna`` package).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlsplit

import idna
import tldextract

# Reasons written to the rejects file (stable words, curators grep them).
EMPTY = "empty"
TOO_LONG = "too-long"
WILDCARD = "wildcard"
IP_LITERAL = "ip-literal"
BAD_LABEL = "bad-label"
BAD_IDN = "bad-idn"
UNKNOWN_SUFFIX = "unknown-suffix"
PUBLIC_SUFFIX = "public-suffix-only"
BAD_URL = "bad-url"

_LDH = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")


class RejectedDomain(ValueError):
    """A line that is not a usable domain; ``reason`` is one of the module's reason words."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class Normalised:
    """A normalised line: the registrable domain and the host it was taken from."""

    domain: str
    host: str


@lru_cache(maxsize=1)
def _extractor() -> tldextract.TLDExtract:
    # suffix_list_urls=() and no cache dir: the snapshot bundled in the wheel, never the network.
    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)


def _to_ascii(host: str) -> str:
    if host.isascii() and "xn--" not in host:
        return host  # plain ASCII: the LDH check below says what is wrong with it
    try:
        # uts46 maps case/width (Bücher.DE -> xn--bcher-kva.de); IDNA 2008 rejects what it must
        return idna.encode(host, uts46=True, transitional=False).decode("ascii")
    except (idna.IDNAError, UnicodeError) as exc:
        raise RejectedDomain(BAD_IDN, str(exc)) from exc


def normalise_host(raw: str, extra_suffixes: frozenset[str] = frozenset()) -> Normalised:
    """Turn one host name (as written in a list) into its registrable domain.

    Trim, lowercase, drop one trailing dot, IDN to punycode, reject what cannot be a domain,
    then cut to the registrable domain via the public-suffix list. ``extra_suffixes`` are
    one-label suffixes accepted although not in the list (``test`` for the loopback demo).
    """
    host = raw.strip().lower()
    if host.endswith("."):
        host = host[:-1]
    if not host:
        raise RejectedDomain(EMPTY)
    if "*" in host:
        raise RejectedDomain(WILDCARD, raw.strip())
    bracketless = host.strip("[]")
    try:
        ipaddress.ip_address(bracketless)
    except ValueError:
        pass
    else:
        raise RejectedDomain(IP_LITERAL, raw.strip())
    if any(ch.isspace() for ch in host) or "/" in host or ":" in host or "@" in host:
        raise RejectedDomain(BAD_LABEL, raw.strip())
    host = _to_ascii(host)
    if len(host) > 253:
        raise RejectedDomain(TOO_LONG, f"{len(host)} characters")
    labels = host.split(".")
    for label in labels:
        if not _LDH.match(label):
            raise RejectedDomain(BAD_LABEL, repr(label) if label else "empty label")
    if len(labels) == 4 and all(label.isdigit() for label in labels):
        raise RejectedDomain(IP_LITERAL, raw.strip())
    parts = _extractor()(host)
    if not parts.suffix:
        if labels[-1] in extra_suffixes:
            if len(labels) < 2:
                raise RejectedDomain(PUBLIC_SUFFIX, host)
            return Normalised(domain=".".join(labels[-2:]), host=host)
        raise RejectedDomain(UNKNOWN_SUFFIX, host)
    if not parts.domain:
        raise RejectedDomain(PUBLIC_SUFFIX, host)
    return Normalised(domain=f"{parts.domain}.{parts.suffix}", host=host)


def normalise_domain(raw: str, extra_suffixes: frozenset[str] = frozenset()) -> str:
    """The registrable domain of ``raw`` (a host name); raises :class:`RejectedDomain`."""
    return normalise_host(raw, extra_suffixes).domain


def host_of_url(raw: str) -> str:
    """The host part of a URL from a URL list (a bare ``host/path`` gets an implicit http://)."""
    text = raw.strip()
    if not text:
        raise RejectedDomain(EMPTY)
    if "://" not in text:
        text = "http://" + text
    try:
        parts = urlsplit(text)
        host = parts.hostname
        if parts.scheme.lower() not in ("http", "https"):
            raise RejectedDomain(BAD_URL, f"scheme {parts.scheme!r}")
        _ = parts.port  # raises ValueError on a bad port
    except ValueError as exc:
        raise RejectedDomain(BAD_URL, str(exc)) from exc
    if not host:
        raise RejectedDomain(BAD_URL, "no host")
    return host


def domain_of_url(raw: str, extra_suffixes: frozenset[str] = frozenset()) -> Normalised:
    """Registrable domain of a URL (raises :class:`RejectedDomain`)."""
    return normalise_host(host_of_url(raw), extra_suffixes)
