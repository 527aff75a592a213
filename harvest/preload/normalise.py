"""Domain normalisation for the broad-crawl preload.

Why: the preload merges millions of lines from registries, the harvest DB, curators' selections
and URL lists written by other workflows. They disagree on case, trailing dots, Unicode vs
punycode and subdomains, so every line is reduced to one canonical *registrable* domain (what a
NetarchiveSuite ``domains`` row is) before de-duplication. Anything that cannot be a crawlable
registrable domain is rejected with a reason, never silently dropped.

The public-suffix rules are the platform's one matcher (:mod:`harvestflow.formats.domains`:
tldextract's bundled snapshot, ICANN part only, as NetarchiveSuite's list); unlike the lenient
``registrable_domain`` used for grouping, the preload refuses a name under no known suffix.
IDN handling is IDNA 2008 with UTS 46 mapping (``idna`` package).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

import idna

from harvest.errors import HarvestError
from harvestflow.formats.domains import is_ip, public_suffix_length

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


class RejectedDomain(HarvestError, ValueError):
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


_IPV4 = re.compile(r"^\d+(\.\d+){3}$")
_FORBIDDEN = re.compile(r"[\s/:@\[\]]")


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
    if _IPV4.match(host) or (":" in host and is_ip(host)):
        raise RejectedDomain(IP_LITERAL, raw.strip())
    if _FORBIDDEN.search(host):
        raise RejectedDomain(BAD_LABEL, raw.strip())
    host = _to_ascii(host)
    if len(host) > 253:
        raise RejectedDomain(TOO_LONG, f"{len(host)} characters")
    labels = host.split(".")
    for label in labels:
        if not _LDH.match(label):
            raise RejectedDomain(BAD_LABEL, repr(label) if label else "empty label")
    suffix = public_suffix_length(labels)
    if not suffix:
        if labels[-1] in extra_suffixes:
            if len(labels) < 2:
                raise RejectedDomain(PUBLIC_SUFFIX, host)
            return Normalised(domain=".".join(labels[-2:]), host=host)
        raise RejectedDomain(UNKNOWN_SUFFIX, host)
    if suffix >= len(labels):
        raise RejectedDomain(PUBLIC_SUFFIX, host)
    return Normalised(domain=".".join(labels[-suffix - 1 :]), host=host)


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
