"""Scope and crawler-trap decisions: which discovered URLs are crawled, and why not.

Why one place: every refusal must land in crawl.log with a reason a curator understands
(Heritrix's negative codes plus an annotation), and the order of the rules matters the way it
does in Heritrix's decide-rule sequence: traps first, then the hop limit, then the seed scope,
and transclusion last so that a page's images, CSS and scripts are fetched even past the hop
limit and on other hosts (within ``max_transclusion_hops`` trailing non-link hops); a redirect
is followed past the hop limit too, but only within the seed scope.
"""

from __future__ import annotations

import datetime as dt
import itertools
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from crawler.jobspec import JobSpec
from harvestflow.formats.domains import registrable_domain
from harvestflow.formats.fetch_status import FetchStatus
from harvestflow.formats.urls import canonical_key, host_of


def global_traps_file() -> Path:
    """config/traps/global.txt: the reviewed global trap list every crawl applies.

    Why in config/ and not in the package: it is reviewed, versioned configuration like the
    templates (the DB's global trap lists, loaded with ``harvestflow traps load``, add to it).
    """
    from harvestflow.package_data import data_path

    return data_path("config", "traps", "global.txt")


# characters no host name can hold (IDN letters are fine: they are IDNA-encoded to fetch)
_BAD_HOST_CHARS = re.compile(r"[\x00-\x20\x7f\"#/<>?@\[\\\]^`{|}]")
_CALENDAR = re.compile(r"(?<!\d)((?:19|20)\d\d)[-/_.]?(0[1-9]|1[0-2])(?!\d)")


@dataclass(frozen=True)
class Decision:
    accepted: bool
    status: int = 0
    reason: str = ""


ACCEPT = Decision(True)


def load_trap_file(path: Path) -> list[str]:
    """Regexes of a trap list file (one per line, ``#`` comments); bad lines are named."""
    patterns: list[str] = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            re.compile(line)
        except re.error as exc:
            raise ValueError(f"{path}:{lineno}: bad crawler-trap regex {line!r}: {exc}") from exc
        patterns.append(line)
    return patterns


def trailing_non_link(hops: str) -> str:
    """The hops after the last ``L`` (what transclusion rules count)."""
    idx = hops.rfind("L")
    return hops[idx + 1 :]


class Scope:
    """Seed scope + trap rules of one job."""

    def __init__(self, spec: JobSpec, global_traps: list[str] | None = None) -> None:
        self.spec = spec
        self.t = spec.template
        traps = list(
            global_traps if global_traps is not None else load_trap_file(global_traps_file())
        )
        traps += spec.crawler_traps
        self.trap_re = re.compile("|".join(f"(?:{p})" for p in traps)) if traps else None
        self.seed_hosts: set[str] = set()
        self.seed_domains: set[str] = {d.domain.lower() for d in spec.domains}
        self.seed_prefixes: list[tuple[str, str]] = []
        self.calendar_seen: dict[str, set[str]] = defaultdict(set)
        self.max_year = dt.datetime.now(dt.UTC).year + self.t.max_future_years
        for seed in spec.seeds:
            self.add_seed(seed)

    def add_seed(self, url: str) -> None:
        """Widen the scope with a seed (also used when a seed redirects)."""
        host = host_of(url)
        if not host:
            return
        self.seed_hosts.add(host)
        self.seed_domains.add(registrable_domain(host))
        path = urlsplit(url).path or "/"
        self.seed_prefixes.append((host, path[: path.rfind("/") + 1]))

    def in_seed_scope(self, url: str) -> bool:
        host = host_of(url)
        if self.t.scope == "host":
            return host in self.seed_hosts
        if self.t.scope == "path":
            path = urlsplit(url).path or "/"
            return any(host == h and path.startswith(p) for h, p in self.seed_prefixes)
        return registrable_domain(host) in self.seed_domains

    def trap(self, url: str) -> str:
        """The trap rule a URL falls into, '' if none."""
        if self.trap_re is not None and self.trap_re.search(url):
            return "trap:regex"
        parts = urlsplit(url)
        segments = [s for s in parts.path.split("/") if s]
        if len(segments) > self.t.max_path_depth:
            return "trap:path-depth"
        limit = self.t.max_repeated_path_segments
        run = 1
        for prev, cur in itertools.pairwise(segments):
            run = run + 1 if cur == prev else 1
            if run > limit:
                return "trap:repeated-path-segments"
        match = _CALENDAR.search(parts.path + "?" + parts.query)
        if match:
            if int(match.group(1)) > self.max_year:
                return "trap:calendar-future"
            seen = self.calendar_seen[parts.hostname or ""]
            key = canonical_key(url)
            if key not in seen:
                if len(seen) >= self.t.max_calendar_pages:
                    return "trap:calendar-pages"
                seen.add(key)
        return ""

    def decide(self, url: str, hops: str) -> Decision:
        """Accept or refuse a discovered URL reached by ``hops`` from its seed."""
        scheme = url.split(":", 1)[0].lower()
        if scheme not in ("http", "https"):
            return Decision(False, FetchStatus.UNFETCHABLE_URI, "err=unsupported-scheme")
        if len(url) > self.t.max_url_length:
            return Decision(False, FetchStatus.UNFETCHABLE_URI, "err=url-too-long")
        try:
            parts = urlsplit(url)
            host = parts.hostname
            parts.port  # noqa: B018 - raises ValueError for a port out of range
        except ValueError:
            return Decision(False, FetchStatus.UNFETCHABLE_URI, "err=invalid-url")
        if not host:
            return Decision(False, FetchStatus.UNFETCHABLE_URI, "err=no-host")
        if _BAD_HOST_CHARS.search(host):
            return Decision(False, FetchStatus.UNFETCHABLE_URI, "err=invalid-host")
        tail = trailing_non_link(hops)
        if len(tail) - len(tail.rstrip("R")) > self.t.max_redirects:
            return Decision(False, FetchStatus.TOO_MANY_LINK_HOPS, "err=too-many-redirects")
        trap = self.trap(url)
        if trap:
            return Decision(False, FetchStatus.DEEMED_CHAFF, trap)
        # a few trailing embed/redirect hops pass the hop limit (Heritrix's transclusion rule:
        # a page at the limit keeps its images, and its redirect is followed); only embeds
        # also pass the seed scope (an image on a CDN, not a redirect to another site)
        # (at most one speculative hop: a guess from a guessed script is not fetched off-scope,
        # Heritrix's max-speculative-hops)
        past_limit_ok = (
            bool(tail)
            and len(tail) <= self.t.max_transclusion_hops
            and set(tail) <= {"E", "X", "R"}
            and tail.count("X") <= 1
        )
        embedded = past_limit_ok and ("E" in tail or "X" in tail)
        if len(hops) > self.t.max_hops and not past_limit_ok:
            # Heritrix's codes: an embed (E/X) refused past its transclusion allowance is
            # -4002, a link or redirect past the hop limit -4001 (the continuous crawl reads
            # both, in a max_hops 0 run, as the links and embeds a page has)
            if hops[-1:] in ("E", "X"):
                return Decision(False, FetchStatus.TOO_MANY_EMBED_HOPS, "err=too-many-embed-hops")
            return Decision(False, FetchStatus.TOO_MANY_LINK_HOPS, "err=too-many-hops")
        if self.in_seed_scope(url) or embedded:
            return ACCEPT
        return Decision(False, FetchStatus.OUT_OF_SCOPE, "err=out-of-scope")
