"""Host, registrable domain and TLD of the authorities seen in crawl logs.

Why: QA figures are per domain (the unit of budgets and of NetarchiveSuite's history) and per
top-level domain (the BnF's ".fr vs .com" shares). The crawl-log pass keeps the raw authority
(``user@Host:port``, or ``dns:host`` for DNS lines); this module cleans the *distinct* values
only, so the public-suffix look-up runs once per host, not once per line. tldextract is used
with its bundled public-suffix snapshot and no network (ARCHITECTURE §2: nothing is downloaded
at run time). Names under a suffix the list does not know (``.test``, ``.local``, intranet
names) fall back to "last label = TLD, last two labels = domain", so test crawls on loopback
still group sensibly.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from functools import lru_cache

import tldextract

_EXTRACT = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)
IP_TLD = "(ip)"
NO_TLD = "(none)"


@dataclass(frozen=True)
class HostInfo:
    host: str
    domain: str
    tld: str


def host_of(auth: str) -> str:
    """Lower-case host of a URI authority: no scheme remnant, user info, port or final dot."""
    text = (auth or "").strip().lower()
    if text.startswith("dns:"):
        text = text[4:]
    if "@" in text:
        text = text.rsplit("@", 1)[1]
    if text.startswith("["):  # IPv6 literal
        end = text.find("]")
        return text[: end + 1] if end > 0 else text
    if ":" in text:
        text = text.split(":", 1)[0]
    return text.rstrip(".")


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


@lru_cache(maxsize=200_000)
def classify_host(host: str) -> HostInfo:
    """Registrable domain and TLD of a cleaned host name."""
    if not host:
        return HostInfo(host, "(none)", NO_TLD)
    if _is_ip(host):
        return HostInfo(host, host, IP_TLD)
    parts = _EXTRACT(host)
    if parts.suffix and parts.domain:
        tld = parts.suffix.rsplit(".", 1)[-1]
        return HostInfo(host, f"{parts.domain}.{parts.suffix}", tld)
    labels = [label for label in host.split(".") if label]
    if len(labels) >= 2:
        return HostInfo(host, ".".join(labels[-2:]), labels[-1])
    return HostInfo(host, host, NO_TLD)


def domain_of_url(url: str) -> str:
    """Registrable domain of a URL (seed lists, selection records)."""
    rest = url.split("://", 1)[-1]
    auth = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    return classify_host(host_of(auth)).domain
