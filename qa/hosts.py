"""Host, registrable domain and TLD of the authorities seen in crawl logs.

Why: QA figures are per domain (the unit of budgets and of NetarchiveSuite's history) and per
top-level domain (the BnF's ".fr vs .com" shares). The crawl-log pass keeps the raw authority
(``user@Host:port``, or ``dns:host`` for DNS lines); this module cleans the *distinct* values
only, so the public-suffix look-up runs once per host, not once per line. The registrable
domain is the platform's one (:func:`harvestflow.formats.domains.registrable_domain`: the
bundled public-suffix snapshot, never the network); names under a suffix the list does not know
(``.test``, ``.local``, intranet names) get "last label = TLD, last two labels = domain", so
test crawls on loopback still group sensibly.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

from harvestflow.formats.domains import is_ip, registrable_domain, registrable_domains

IP_TLD = "(ip)"
NO_TLD = "(none)"


class HostInfo(NamedTuple):
    """A host's registrable domain and TLD (a tuple: built once per distinct host of a day,
    ~10^5 of them, where a frozen dataclass cost three times as much to make)."""

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


@lru_cache(maxsize=200_000)
def classify_host(host: str) -> HostInfo:
    """Registrable domain and TLD of a cleaned host name."""
    if not host:
        return HostInfo(host, "(none)", NO_TLD)
    if (host[0].isdigit() or host[0] == "[" or ":" in host) and is_ip(host):
        return HostInfo(host, host, IP_TLD)
    labels = [label for label in host.split(".") if label]
    tld = labels[-1] if len(labels) >= 2 else NO_TLD
    return HostInfo(host, registrable_domain(host), tld)


def classify_hosts(hosts: list[str]) -> tuple[list[str], list[str]]:
    """The domains and TLDs of ``hosts`` (distinct, cleaned by :func:`host_of`), as
    :func:`classify_host` gives them, as two lists in the order of ``hosts``.

    Why: the daily QA classifies the ~50,000 distinct hosts of a day once each: the per-call
    caches in front of classify_host and registrable_domain, and a tuple per host, only cost
    there (~0.2 CPU-s a run); the domains come from the batch matcher
    (harvestflow.formats.domains.registrable_domains). An empty host, one that may be an IP
    address or holds an empty label takes classify_host's rules.
    """
    domains = registrable_domains(hosts)
    tlds = [host[host.rfind(".") + 1 :] if "." in host else NO_TLD for host in hosts]
    for i, host in enumerate(hosts):
        if not host or host[0].isdigit() or host[0] in "[." or host[-1] == "." or ":" in host:
            _, domains[i], tlds[i] = classify_host(host)  # empty, an IP address, empty labels
        elif ".." in host:
            _, domains[i], tlds[i] = classify_host(host)
    return domains, tlds


def domain_of_url(url: str) -> str:
    """Registrable domain of a URL (seed lists, selection records)."""
    rest = url.split("://", 1)[-1]
    auth = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    return classify_host(host_of(auth)).domain
