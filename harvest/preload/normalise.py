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

from harvest.errors import HarvestError

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


class _SuffixList:
    """The ICANN part of tldextract's bundled public-suffix list, matched on ASCII labels.

    Why not call tldextract per line: it parses each name as a URL and decodes punycode label by
    label (about 50 µs a name); a preload normalises millions of lines. The rules are taken from
    the same bundled snapshot (``TLDExtract.tlds``), converted to punycode once, and matched
    with the PSL algorithm (exception rules, wildcards, longest match) on set lookups. The test
    suite checks it against tldextract itself on names built from every rule.
    """

    def __init__(self, rules: list[str]) -> None:
        self.exact: set[str] = set()
        self.wildcard: set[str] = set()  # "*.ck" stored as "ck"
        self.exception: set[str] = set()  # "!www.ck" stored as "www.ck"
        for rule in rules:
            target = self.exact
            if rule.startswith("!"):
                target, rule = self.exception, rule[1:]
            elif rule.startswith("*."):
                target, rule = self.wildcard, rule[2:]
            try:
                ascii_rule = idna.encode(rule, uts46=True, transitional=False).decode("ascii")
            except (idna.IDNAError, UnicodeError):
                ascii_rule = rule.encode("idna").decode("ascii")
            target.add(ascii_rule)

    def suffix_length(self, labels: list[str]) -> int:
        """Number of labels of the public suffix of ``labels`` (0: no rule matches)."""
        count = len(labels)
        for start in range(count):
            name = ".".join(labels[start:])
            if name in self.exception:
                return count - start - 1
            if name in self.exact:
                return count - start
            if start + 1 < count and ".".join(labels[start + 1 :]) in self.wildcard:
                return count - start
        return 0


@lru_cache(maxsize=1)
def _suffixes() -> _SuffixList:
    # suffix_list_urls=() and no cache dir: the snapshot bundled in the wheel, never the network;
    # include_psl_private_domains=False: ICANN suffixes only, as NetarchiveSuite
    extractor = tldextract.TLDExtract(
        suffix_list_urls=(), cache_dir=None, include_psl_private_domains=False
    )
    return _SuffixList(list(extractor.tlds))


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
    if _IPV4.match(host) or (":" in host and _is_ip(host.strip("[]"))):
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
    suffix = _suffixes().suffix_length(labels)
    if not suffix:
        if labels[-1] in extra_suffixes:
            if len(labels) < 2:
                raise RejectedDomain(PUBLIC_SUFFIX, host)
            return Normalised(domain=".".join(labels[-2:]), host=host)
        raise RejectedDomain(UNKNOWN_SUFFIX, host)
    if suffix >= len(labels):
        raise RejectedDomain(PUBLIC_SUFFIX, host)
    return Normalised(domain=".".join(labels[-suffix - 1 :]), host=host)


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


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
