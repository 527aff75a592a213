"""The rendered-capture fixture sites crawled in one job (for the replay tests): the
script-built news page whose app script and JSON API are compressed (``scriptsite``), the
OneTrust wall autoconsent's rule accepts, the two consent walls answered by their wording (a
plain French banner, a German dialog in a cross-site iframe) and the "Load more" list
(``behavioursite``), and the page whose images a media query chooses (``phonesite``, its phone
pass on). One loopback server serves every host,
every text type compressed by Accept-Encoding; it is stopped when the crawl ends."""

from __future__ import annotations

from pathlib import Path

from tests.support import behavioursite as bs
from tests.support import phonesite, scriptsite
from tests.support.crawl import FAST_TEMPLATE, CrawlResult, run_crawl
from tests.support.rawsite import Raw, serve
from tests.support.scriptsite import compressed

# each site's seed, by the host it is on
SEEDS = {
    "news": (scriptsite.HOST, "/"),
    "onetrust": (bs.HOST, "/onetrust.html"),
    "mot": (bs.MOT_HOST, "/mot.html"),
    "cadre": (bs.CADRE_HOST, "/cadre.html"),
    "more": (bs.HOST, "/more.html"),
    "phone": (phonesite.HOST, "/"),
}
HOSTS = (scriptsite.HOST, scriptsite.CDN_HOST, bs.HOST, bs.MOT_HOST, bs.CADRE_HOST, bs.CMP_HOST)


def route(host: str, path: str) -> Raw | None:
    """Each host answered by the site it belongs to."""
    if host in (scriptsite.HOST, scriptsite.CDN_HOST):
        return scriptsite.route(host, path)
    if host == phonesite.HOST:
        return phonesite.route(host, path)
    return bs.route(host, path)


def crawl(out: Path, job_id: int, harvest_id: int) -> tuple[CrawlResult, dict[str, str]]:
    """Every site's seed crawled with ``--render html`` (consent accepted, the phone pass on
    the seeds) into ``out``; the result and each site's seed URL."""
    with serve(route, negotiate=compressed) as site:
        seeds = {name: site.url(host, path) for name, (host, path) in SEEDS.items()}
        job = {
            "job_id": job_id,
            "harvest_id": harvest_id,
            "seeds": list(seeds.values()),
            "template": {
                **FAST_TEMPLATE,
                "max_hops": 1,
                "render": "html",
                "render_tabs": 2,
                "render_min_wait_s": 0.5,
                "render_page_timeout_s": 25,
                "render_phone": "seeds",
            },
            "resolve": {h: "127.0.0.1" for h in (*HOSTS, phonesite.HOST)},
        }
        result = run_crawl(job, out, timeout=240)
    return result, seeds
