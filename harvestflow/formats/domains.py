"""Public suffixes and registrable domains, from tldextract's bundled public-suffix snapshot.

Why one home: the crawler, harvest, full text, the daily QA and the preload all cut a host to
its *registrable domain*; copies with different matchers would put one site in two domains.
ICANN rules only (private suffixes ignored, as NetarchiveSuite does), from the snapshot in
tldextract's wheel: nothing is fetched at run time.

Why the file is read here, not through ``tldextract``: importing it pulls requests, urllib3 and
filelock (~0.1 CPU-s per process) for a file of text; the file is found with
``importlib.util.find_spec`` and parsed with tldextract's own rule. Why not tldextract per host:
~50 µs a name, ~50x a set look-up, and QA classifies every distinct host of a crawl. Rules are
loaded once, Unicode and punycode spellings, matched with the PSL algorithm (exceptions,
wildcards, longest match). tests/formats/test_domains.py checks the rules equal
``TLDExtract(...).tlds``; tests/harvest/preload/test_normalise.py the matches, on every rule.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from urllib.parse import urlsplit

__all__ = [
    "SuffixList",
    "bundled_rules",
    "is_ip",
    "public_suffix_length",
    "registrable_domain",
    "registrable_domains",
    "suffix_list",
]

# tldextract's bundled copy of the list, its section markers and its rule pattern
# (tldextract/suffix_list.py: PUBLIC_SUFFIX_RE, PUBLIC_PRIVATE_SUFFIX_SEPARATOR)
_SNAPSHOT = ".tld_set_snapshot"
_PRIVATE_PART = "// ===BEGIN PRIVATE DOMAINS==="
_RULE = re.compile(r"^(?P<suffix>[.*!]*\w[\S]*)", re.UNICODE | re.MULTILINE)

# a host registrable_domains matches directly: lower-case ASCII labels, two or more, none empty
# (no IP address, no character strip() or lower() would change, no empty label to drop)
_PLAIN_HOST = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)+")

# a host of digits and dots is an IPv4 address in one of its spellings (``1.2.3``, ``3232235777``)
_NUMERIC_HOST = re.compile(r"[\d.]+")


def _ascii_rule(rule: str) -> str:
    """The punycode spelling of a rule: each non-ASCII label as ``xn--`` + its punycode.

    Why not ``idna.encode(rule, uts46=True)``: the rules are already in the list's normalised
    form (lower case, NFC), on which UTS #46 maps nothing and encodes each label so; loading
    idna's UTS #46 table and checking 444 rules cost ~0.1 CPU-s per process (cProfile, daily
    QA). tests/formats/test_domains.py checks every bundled rule against idna's spelling.
    """
    if rule.isascii():
        return rule
    return ".".join(
        label if label.isascii() else "xn--" + label.encode("punycode").decode("ascii")
        for label in rule.split(".")
    )


class SuffixList:
    """ICANN public-suffix rules matched on the labels of a lower-case host name."""

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
            target.add(rule)  # the Unicode spelling (hosts written in Unicode)
            target.add(_ascii_rule(rule))  # the punycode one (hosts from URLs, crawl logs)

    def suffix_length(self, labels: list[str]) -> int:
        """Number of trailing labels that form the public suffix (0: no rule matches)."""
        return self.name_suffix_length(".".join(labels))

    def name_suffix_length(self, name: str) -> int:
        """:meth:`suffix_length` of the labels of ``name`` (joined by single dots).

        Why on the string: each candidate suffix is a slice after the next dot (its hash
        computed once, by the first set it is looked up in), where joining label lists for
        every candidate and the wildcard's rest cost most of a look-up (~10 µs a host, and
        the daily QA looks up every distinct host of a day, ~50,000).
        """
        count = name.count(".") + 1
        start = 0  # labels before the candidate ``name``, longest candidate first
        while True:
            dot = name.find(".")
            if name in self.exception:
                return count - start - 1
            if name in self.exact or (dot >= 0 and name[dot + 1 :] in self.wildcard):
                return count - start
            if dot < 0:
                return 0
            name = name[dot + 1 :]
            start += 1


def bundled_rules() -> list[str]:
    """The ICANN rules of the public-suffix snapshot in tldextract's wheel, as tldextract reads
    them (``TLDExtract(suffix_list_urls=(), include_psl_private_domains=False).tlds``), without
    importing tldextract (find_spec locates a package without running it)."""
    spec = importlib.util.find_spec("tldextract")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("tldextract (its bundled public-suffix list) is not installed")
    folder = Path(next(iter(spec.submodule_search_locations)))
    text = (folder / _SNAPSHOT).read_text(encoding="utf-8")
    public, _, _ = text.partition(_PRIVATE_PART)
    return list(dict.fromkeys(m.group("suffix") for m in _RULE.finditer(public)))


@lru_cache(maxsize=1)
def suffix_list() -> SuffixList:
    """The bundled ICANN rules, loaded once per process."""
    return SuffixList(bundled_rules())


def public_suffix_length(labels: list[str]) -> int:
    """How many trailing ``labels`` form the public suffix (0 when no rule matches)."""
    return suffix_list().suffix_length(labels)


def is_ip(text: str) -> bool:
    """Whether ``text`` is an IPv4 or IPv6 address (IPv6 with or without its brackets)."""
    try:
        ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return False
    return True


@lru_cache(maxsize=65536)  # hosts repeat (every link of a site, every record of a WARC)
def registrable_domain(host_or_url: str) -> str:
    """The registrable domain of a host or URL (``www.bbc.co.uk`` → ``bbc.co.uk``).

    Lenient, for grouping: an IP address (or a host of digits and dots) is its own domain, and
    names under a suffix the list does not know (``example-a.test``, ``localhost``, intranet
    names) or that are a public suffix themselves keep their last two labels, which is what a
    curator means by "the domain" of a test or intranet site. The preload, which must refuse
    such names, uses :class:`SuffixList` with its own rules.
    """
    host = host_or_url
    if "://" in host_or_url:
        host = urlsplit(host_or_url).hostname or ""
    host = host.strip().strip(".").lower()
    # an IP address is digits and dots (IPv4) or holds a colon (IPv6): only those try
    # ipaddress, whose ValueError on every other name cost ~half of a look-up (measured)
    if not host or _NUMERIC_HOST.fullmatch(host) or ((":" in host or "[" in host) and is_ip(host)):
        return host
    if ".." in host:  # empty labels are dropped
        host = ".".join(label for label in host.split(".") if label)
    count = host.count(".") + 1
    suffix = suffix_list().name_suffix_length(host)
    return _last_labels(host, suffix + 1 if 0 < suffix < count else 2)


def _last_labels(name: str, n: int) -> str:
    """The last ``n`` labels of ``name`` (all of them when it has fewer)."""
    end = len(name)
    for _ in range(n):
        end = name.rfind(".", 0, end)
        if end < 0:
            return name
    return name[end + 1 :]


def registrable_domains(hosts: Iterable[str]) -> list[str]:
    """:func:`registrable_domain` of every value of ``hosts``, in order, without its cache.

    Why: the daily QA classifies every distinct host of a day (~50,000, each once): the cache
    in front of :func:`registrable_domain` only costs there, as do its URL, IP and clean-up
    checks on names that need none. A plain name (lower-case ASCII labels, two or more, none
    empty: nearly all of a crawl's) is matched here directly; any other value (URL, IP
    address, Unicode, capitals, one label, empty labels) through :func:`registrable_domain`.
    tests/formats/test_domains.py checks it against tldextract on every rule.
    """
    rules = suffix_list()
    plain = _PLAIN_HOST.fullmatch
    numeric = _NUMERIC_HOST.fullmatch
    out = []
    for host in hosts:
        if plain(host) is None or numeric(host) is not None:
            out.append(registrable_domain(host))
            continue
        suffix = rules.name_suffix_length(host)
        keep = suffix + 1 if 0 < suffix <= host.count(".") else 2
        out.append(_last_labels(host, keep))
    return out
