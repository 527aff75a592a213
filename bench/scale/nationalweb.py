"""A synthetic national web, deterministic from a seed: the domains, their sizes and every page.

Why a model apart from the server: the day's driver (bench/scale/day.py), the tests and the
server (bench/scale/webserve.py) must agree on the same web without sharing a process; each
rebuilds it from (seed, domains, urls) in well under a second.

Shape (the BnF's 2011 size classes, as bench/jobgen and docs/scaling.md use them): 57 % of the
domains under 10 URLs, 42 % between 10 and 10,000, 1 % above, log-uniform inside a class, then
scaled so the whole web holds about ``urls`` URLs (robots.txt, pages, embeds, redirects). Pages
of a domain form a tree of fan-out 10 (every page within 5 hops of the root at 100,000 pages),
each page links one other domain's home page (out of a domain-scoped crawl: not fetched), larger
domains have a stylesheet and one image per page, some answer the bare name with a 301 to
``www.``, some robots.txt disallow ``/private/`` (linked from every page: never to be fetched),
a few are dead (no DNS answer, or an address nobody listens on), a few hold a calendar trap
(``/cal/<n>`` linking ``/cal/<n+1>`` for ever: bounded by the crawl's budget, not by the web).
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass

# (share of domains, smallest, largest pages) — the BnF's size classes
SIZE_CLASSES = ((0.57, 1, 9), (0.42, 10, 10_000), (0.01, 10_000, 100_000))
FANOUT = 10
WORDS = (
    "archive", "patrimoine", "web", "national", "bibliothèque", "dépôt", "légal", "collecte",
    "site", "page", "récolte", "mémoire", "numérique", "presse", "culture", "région", "commune",
    "association", "entreprise", "musée", "histoire",
)  # fmt: skip


@dataclass(frozen=True)
class Domain:
    name: str
    pages: int
    embeds: bool  # a stylesheet and one image per page
    www_redirect: bool  # http://name/ answers 301 to http://www.name/
    robots_private: bool  # robots.txt disallows /private/
    dead: str  # "" (alive), "nxdomain" (no DNS answer) or "refused" (nobody listens)
    trap: bool  # /cal/<n> links /cal/<n+1> without end

    @property
    def home_host(self) -> str:
        return f"www.{self.name}" if self.www_redirect else self.name

    def urls(self) -> int:
        """URLs a complete crawl of this domain fetches (trap excluded)."""
        if self.dead:
            return 0
        # robots.txt and the pages, a stylesheet and images; a redirected domain's bare name
        # answers its robots.txt and home page with a 301 to www.
        redirects = 2 if self.www_redirect else 0
        return 1 + redirects + self.pages * (2 if self.embeds else 1) + (1 if self.embeds else 0)


def _size(rng: random.Random) -> float:
    u = rng.random()
    for share, low, high in SIZE_CLASSES:
        if u < share:
            return math.exp(rng.uniform(math.log(low), math.log(high)))
        u -= share
    return float(SIZE_CLASSES[-1][2])


class NationalWeb:
    """The web of ``domains`` domains and about ``urls`` URLs drawn from ``seed``."""

    def __init__(self, seed: int, domains: int, urls: int) -> None:
        if domains < 10 or urls < domains:
            raise ValueError(f"a national web needs >= 10 domains and >= 1 URL per domain, got "
                             f"{domains} domains, {urls} URLs")  # fmt: skip
        self.seed = seed
        rng = random.Random(seed)
        raw = [_size(rng) for _ in range(domains)]
        flags = [
            (rng.random() < 0.2, rng.random() < 0.15, rng.random(), rng.random() < 0.002)
            for _ in range(domains)
        ]
        # every kind at least once, so a small web (a test's, the CI's day) has them all
        flags[1] = (flags[1][0], flags[1][1], 0.001, False)  # no DNS answer
        flags[2] = (flags[2][0], flags[2][1], 0.004, False)  # an address nobody listens on
        flags[3] = (flags[3][0], flags[3][1], 0.5, True)  # a calendar trap
        flags[4] = (True, True, 0.5, False)  # 301 to www., robots.txt disallowing /private/
        scale = self._scale(raw, flags, urls)
        self.domains: list[Domain] = []
        for i, (size, (redirect, robots, dead_draw, trap)) in enumerate(
            zip(raw, flags, strict=True)
        ):
            self.domains.append(self._domain(i, max(1, round(size * scale)), redirect, robots,
                                             dead_draw, trap))  # fmt: skip
        self.by_host: dict[str, Domain] = {}
        for d in self.domains:
            self.by_host[d.name] = d
            self.by_host[f"www.{d.name}"] = d

    @staticmethod
    def _domain(
        i: int, pages: int, redirect: bool, robots: bool, dead_draw: float, trap: bool
    ) -> Domain:
        dead = "nxdomain" if dead_draw < 0.003 else "refused" if dead_draw < 0.006 else ""
        return Domain(f"site{i:06d}.fr", pages, pages >= 3, redirect, robots, dead, trap)

    @staticmethod
    def _scale(raw: list[float], flags: list[tuple[bool, bool, float, bool]], urls: int) -> float:
        """The factor on the drawn sizes that makes the web hold about ``urls`` URLs."""
        alive = [(s, 1 + (2 if fl[0] else 0)) for s, fl in zip(raw, flags, strict=True)
                 if fl[2] >= 0.006]  # fmt: skip

        def total(f: float) -> int:
            n = 0
            for size, fixed in alive:  # Domain.urls without building the domains
                pages = max(1, round(size * f))
                n += fixed + (2 * pages + 1 if pages >= 3 else pages)
            return n

        low, high = 1e-6, 10.0
        for _ in range(30):
            mid = math.sqrt(low * high)
            low, high = (mid, high) if total(mid) < urls else (low, mid)
        return high

    # --- what the crawl should find ----------------------------------------------------------
    def total_urls(self) -> int:
        return sum(d.urls() for d in self.domains)

    def zone(self, address: str, dead_address: str) -> dict[str, str]:
        """Host name → IPv4 address for the DNS server (dead "nxdomain" domains left out)."""
        out = {}
        for d in self.domains:
            if d.dead == "nxdomain":
                continue
            addr = dead_address if d.dead == "refused" else address
            out[d.name] = out[f"www.{d.name}"] = addr
        return out

    # --- the pages ---------------------------------------------------------------------------
    def answer(self, host: str, path: str) -> tuple[int, str, bytes, dict[str, str]]:
        """(status, content type, body, extra headers) of GET http://host/path."""
        d = self.by_host.get(host.lower().split(":")[0])
        if d is None or d.dead:
            return 404, "text/plain", b"no such site\n", {}
        if d.www_redirect and host.lower().split(":")[0] == d.name:
            return (
                301,
                "text/html",
                b"<a href='/'>moved</a>",
                {"Location": f"http://www.{d.name}{path}"},
            )
        if path == "/robots.txt":
            rules = "Disallow: /private/\n" if d.robots_private else "Disallow:\n"
            return 200, "text/plain", f"User-agent: *\n{rules}".encode(), {}
        if path == "/style.css" and d.embeds:
            return 200, "text/css", f"body {{ color: #{d.pages % 4096:03x}; }}\n".encode(), {}
        if path.startswith("/img/") and path.endswith(".png") and d.embeds:
            return 200, "image/png", _png(d.name, path), {}
        if path == "/":
            return 200, "text/html; charset=utf-8", self._page(d, 0), {}
        if path.startswith("/p/") and path.endswith(".html"):
            k = path[3:-5]
            if k.isdigit() and 0 < int(k) < d.pages:
                return 200, "text/html; charset=utf-8", self._page(d, int(k)), {}
        if d.trap and path.startswith("/cal/") and path[5:].isdigit():
            n = int(path[5:])
            body = f"<html><body><a href='/cal/{n + 1}'>next month</a></body></html>"
            return 200, "text/html; charset=utf-8", body.encode(), {}
        return 404, "text/html", b"<html><body>not found</body></html>", {}

    def _page(self, d: Domain, k: int) -> bytes:
        rng = random.Random(f"{self.seed}:{d.name}:{k}")
        other = self.domains[rng.randrange(len(self.domains))]
        children = range(FANOUT * k + 1, min(d.pages, FANOUT * k + FANOUT + 1))
        links = [f"<a href='/p/{c}.html'>page {c}</a>" for c in children]
        links.append(f"<a href='http://{other.home_host}/'>{other.name}</a>")
        if d.robots_private:
            links.append("<a href='/private/secret.html'>private</a>")
        if d.trap and k == 0:
            links.append("<a href='/cal/1'>calendar</a>")
        head = "<link rel='stylesheet' href='/style.css'>" if d.embeds else ""
        img = f"<img src='/img/{k}.png' alt=''>" if d.embeds else ""
        text = " ".join(rng.choice(WORDS) for _ in range(40 + rng.randrange(200)))
        return (
            f"<!DOCTYPE html><html lang='fr'><head><title>{d.name} page {k}</title>{head}</head>"
            f"<body><h1>{d.name} {k}</h1><p>{text}</p>{img}<ul><li>"
            + "</li><li>".join(links)
            + "</li></ul></body></html>"
        ).encode()


def _png(name: str, path: str) -> bytes:
    """A small valid-looking PNG signature plus seeded bytes (never compressed by the server)."""
    digest = hashlib.sha256(f"{name}{path}".encode()).digest()
    return b"\x89PNG\r\n\x1a\n" + digest * 8
