"""Scope and trap decisions, in Heritrix's order (traps, hops, seed scope, transclusion)."""

from __future__ import annotations

from crawler.jobspec import from_dict
from crawler.scope import Scope
from harvestflow.formats.fetch_status import FetchStatus


def scope(kind: str, seeds: list[str], **template) -> Scope:
    spec = from_dict({"job_id": 1, "seeds": seeds, "template": {"scope": kind, **template}})
    return Scope(spec, global_traps=[])


def test_host_domain_and_path_scopes():
    host = scope("host", ["http://www.a.org/"])
    assert host.decide("http://www.a.org/x", "L").accepted
    assert host.decide("http://img.a.org/x", "L").status == FetchStatus.OUT_OF_SCOPE
    dom = scope("domain", ["http://www.a.org/"])
    assert dom.decide("http://img.a.org/x", "L").accepted
    assert dom.decide("http://a.org/x", "L").accepted
    assert not dom.decide("http://b.org/", "L").accepted
    uk = scope("domain", ["http://www.bbc.co.uk/"])
    assert uk.decide("http://news.bbc.co.uk/", "L").accepted
    assert not uk.decide("http://www.other.co.uk/", "L").accepted
    path = scope("path", ["http://www.a.org/dir/index.html"])
    assert path.decide("http://www.a.org/dir/sub/x.html", "L").accepted
    assert not path.decide("http://www.a.org/other/", "L").accepted


def test_transclusion_fetches_embeds_off_site_and_past_the_hop_limit():
    s = scope("host", ["http://www.a.org/"], max_hops=2, max_transclusion_hops=2)
    assert s.decide("http://cdn.b.net/i.png", "LE").accepted  # embed on another host
    assert s.decide("http://cdn.b.net/bg.png", "LEE").accepted  # CSS → image
    assert s.decide("http://cdn.b.net/x.png", "LEEE").status == FetchStatus.TOO_MANY_EMBED_HOPS
    assert s.decide("http://www.a.org/i.png", "LLE").accepted  # beyond max hops: still embed
    assert s.decide("http://www.a.org/deep", "LLL").status == FetchStatus.TOO_MANY_LINK_HOPS
    # redirect ≠ embed
    assert s.decide("http://other.org/", "LR").status == FetchStatus.OUT_OF_SCOPE
    # a page at the hop limit that redirects: followed within scope, not off-site
    assert s.decide("http://www.a.org/moved-here", "LLR").accepted
    assert s.decide("http://other.org/", "LLR").status == FetchStatus.OUT_OF_SCOPE
    assert s.decide("http://www.a.org/x", "LLRRR").status == FetchStatus.TOO_MANY_LINK_HOPS
    # an image that redirects to a CDN is still an embed
    assert s.decide("http://cdn.b.net/real.png", "LLER").accepted
    # sitemap hops are navigation: no pass past the limit
    assert s.decide("http://www.a.org/from-sitemap", "LLM").status == FetchStatus.TOO_MANY_LINK_HOPS


def test_traps_and_bad_urls():
    s = scope(
        "domain",
        ["http://www.a.org/"],
        max_path_depth=3,
        max_repeated_path_segments=2,
        max_calendar_pages=2,
    )
    assert s.decide("http://www.a.org/1/2/3/4", "L").reason == "trap:path-depth"
    assert s.decide("http://www.a.org/x/x/x/", "L").reason == "trap:repeated-path-segments"
    assert s.decide("http://www.a.org/x/x/", "L").accepted
    assert s.decide("http://www.a.org/cal/2099/01/", "L").reason == "trap:calendar-future"
    assert s.decide("http://www.a.org/cal/2020/01/", "L").accepted
    assert s.decide("http://www.a.org/cal/2020/02/", "L").accepted
    assert s.decide("http://www.a.org/cal/2020/03/", "L").status == FetchStatus.DEEMED_CHAFF
    assert s.decide("ftp://www.a.org/f", "L").status == FetchStatus.UNFETCHABLE_URI
    assert s.decide("http://www.a.org/" + "a" * 3000, "L").reason == "err=url-too-long"
    assert s.decide("http://[bad/", "L").reason == "err=invalid-url"
    assert s.decide("http://www.a.org:99999/", "L").reason == "err=invalid-url"
    assert s.decide("http://exa mple.a.org/", "L").reason == "err=invalid-host"
    assert s.decide("http:///no-host", "L").reason == "err=no-host"
    assert s.decide("http://bücher.a.org/", "L").accepted  # IDN hosts are fine
    traps = Scope(
        from_dict({"job_id": 1, "seeds": ["http://www.a.org/"], "crawler_traps": [r"\?print=1"]}),
        global_traps=[r"/wp-json/"],
    )
    assert traps.decide("http://www.a.org/p?print=1", "L").reason == "trap:regex"
    assert traps.decide("http://www.a.org/wp-json/x", "L").reason == "trap:regex"


def test_redirect_chain_is_bounded():
    s = scope("domain", ["http://www.a.org/"], max_redirects=2)
    assert s.decide("http://www.a.org/r", "LRR").accepted
    assert s.decide("http://www.a.org/r", "LRRR").reason == "err=too-many-redirects"
