"""The PostgreSQL search backend on crafted captures extracted by the chain's text module.

Words and phrases find the expected pages (French stemming included), snippets highlight the
words, ``-exclusion``, ``site:`` and ``domain:`` filter, facets count payloads, identical
payloads collapse into one hit with "n other captures", paging is stable, and a blocked or
embargoed capture is never returned, not even through its snippet or a facet count.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from indexing.fulltext import extract_file
from search.model import AccessRules, SearchResult
from search.query import parse_query

pytestmark = pytest.mark.services


def _search(backend, text: str, **kw) -> SearchResult:  # type: ignore[no-untyped-def]
    return backend.search(parse_query(text, **kw))


def _urls(result: SearchResult) -> list[str]:
    return [h.url for h in result.hits]


def test_words_phrases_exclusion_and_stemming(indexed) -> None:  # type: ignore[no-untyped-def]
    backend, results = indexed
    # counts per file: 5 texts; then 1 text + 1 duplicate payload + 1 revisit, 404 skipped
    assert [(r["extracted"], r["duplicates"], r["skipped"], r["failed"]) for r in results] == [
        (5, 0, 0, 0),
        (1, 2, 1, 0),
    ]
    # French stemming (bibliothèques ~ bibliothèque), and the latin-1 page decoded
    assert set(_urls(_search(backend, "bibliothèques"))) == {
        "http://www.bnf-test.fr/depot-legal.html",
        "http://www.bnf-test.fr/sevres.html",
    }
    assert _urls(_search(backend, '"salles de recherche"')) == [
        "http://www.bnf-test.fr/depot-legal.html"
    ]
    assert _search(backend, '"recherche de salles"').total == 0  # a phrase, not two words
    assert _urls(_search(backend, "harvests websites")) == [
        "https://news.example.org/web/preserving.html"
    ]
    assert _urls(_search(backend, "dirigible")) == ["http://news.example.org/report.pdf"]
    assert _urls(_search(backend, "quetzalcoatl")) == ["http://news.example.org/contact"]
    # boilerplate is not indexed where there is a main text; nor are the 404 page and the image
    assert _search(backend, "cookies").total == 0
    assert _search(backend, "zeppelin").total == 1  # only the calendar text, collapsed
    assert _search(backend, "bibliothèque -sèvres").total == 1


def test_snippets_highlight_the_words(indexed) -> None:  # type: ignore[no-untyped-def]
    backend, _ = indexed
    hit = _search(backend, "municipale").hits[0]
    assert hit.title == "Bibliothèque municipale"
    assert "[municipale]" in hit.snippet_text()
    assert "<mark>municipale</mark>" in hit.snippet_html()
    assert hit.captured_at == datetime(2025, 6, 1, 10, 0, tzinfo=UTC)


def test_duplicates_collapse_and_facets_count_payloads(indexed) -> None:  # type: ignore[no-untyped-def]
    backend, _ = indexed
    result = _search(backend, "harvest calendar")
    assert result.total == 1
    (hit,) = result.hits
    # three captures of one payload: two URLs on 2026-11-22, a revisit on 2026-11-23 (shown)
    assert hit.other_captures == 2
    assert hit.captured_at == datetime(2026, 11, 23, 3, 15, tzinfo=UTC)
    assert dict(result.facets["host"]) == {"news.example.org": 1, "mirror.example.net": 1}
    everything = _search(backend, "")
    assert everything.total == 6
    assert dict(everything.facets["year"]) == {"2026": 5, "2025": 1}
    assert dict(everything.facets["mime"]) == {"text/html": 5, "application/pdf": 1}
    assert dict(everything.facets["lang"]) == {"en": 4, "fr": 2}
    assert dict(everything.facets["domain"]) == {
        "example.org": 4,
        "bnf-test.fr": 2,
        "example.net": 1,
    }
    # a facet value's count is the number of hits its filter gives
    for host, count in everything.facets["host"]:
        assert _search(backend, "", hosts=(host,)).total == count


def test_site_and_domain_filters(indexed) -> None:  # type: ignore[no-untyped-def]
    backend, _ = indexed
    assert _urls(_search(backend, "calendar site:mirror.example.net")) == [
        "http://mirror.example.net/calendar"
    ]
    assert _search(backend, "site:example.org").total == 4  # subdomains of the site included
    assert _urls(_search(backend, "site:news.example.org/web")) == [
        "https://news.example.org/web/preserving.html"
    ]
    assert _search(backend, "domain:bnf-test.fr").total == 2
    assert _search(backend, "domain:www.bnf-test.fr bibliothèque").total == 2


def test_paging_is_stable(indexed) -> None:  # type: ignore[no-untyped-def]
    backend, _ = indexed
    seen = []
    for page in (1, 2, 3):
        result = _search(backend, "", page=page, per_page=2)
        assert result.total == 6
        seen += [h.digest for h in result.hits]
    assert len(seen) == len(set(seen)) == 6


def test_blocked_and_embargoed_captures_never_appear(indexed) -> None:  # type: ignore[no-untyped-def]
    backend, _ = indexed
    blocked = AccessRules(blocked=("fr,bnf-test)/depot",))
    result = _search(backend, "bibliothèque", access=blocked)
    assert _urls(result) == ["http://www.bnf-test.fr/sevres.html"]
    assert all("collecte" not in h.snippet for h in result.hits)
    assert _search(backend, '"salles de recherche"', access=blocked).total == 0
    assert dict(_search(backend, "", access=blocked).facets["lang"])["fr"] == 1
    # the shared payload stays visible through its other captures, which are counted alone
    no_news = AccessRules(blocked=("org,example,news)/",))
    (hit,) = _search(backend, "calendar", access=no_news).hits
    assert (hit.url, hit.other_captures) == ("http://mirror.example.net/calendar", 0)
    # an embargo: captures younger than a year are hidden, the 2025 page is old enough
    now = datetime(2026, 11, 25, tzinfo=UTC)
    embargo = AccessRules(embargoes=(("", timedelta(days=365)),), now=now)
    assert _urls(_search(backend, "", access=embargo)) == ["http://www.bnf-test.fr/sevres.html"]


def test_access_rules_in_force_decide_by_the_longest_prefix_as_pywb(indexed) -> None:  # type: ignore[no-untyped-def]
    """Rules as the access module stores them (prefix, policy, embargo days): a longer rule
    decides for its own captures, whatever the shorter one says (pywb's ACL semantics)."""
    backend, _ = indexed
    every = set(_urls(_search(backend, "", per_page=50)))
    news = {u for u in every if "news.example.org" in u}
    assert len(news) >= 3 and "https://news.example.org/web/preserving.html" in news
    rules = AccessRules.from_rules(
        [
            ("org,example,news)/", "block", None),
            ("org,example,news)/web", "allow", None),  # an exception inside the block
            ("fr,bnf-test)/depot", "exclude", None),
        ]
    )
    shown = set(_urls(_search(backend, "", per_page=50, access=rules)))
    # (the shared payload's other capture, on mirror.example.net, now stands for it)
    assert shown == (every - news - {"http://www.bnf-test.fr/depot-legal.html"}) | {
        "https://news.example.org/web/preserving.html",
        "http://mirror.example.net/calendar",
    }
    # a block inside the exception hides again
    deeper = AccessRules.from_rules(
        [
            ("org,example,news)/", "block", None),
            ("org,example,news)/web", "allow", None),
            ("org,example,news)/web/preserving", "block", None),
        ]
    )
    assert not set(_urls(_search(backend, "", per_page=50, access=deeper))) & news
    # an embargo over everything, lifted for one prefix by an allow rule
    now = datetime(2026, 11, 25, tzinfo=UTC)
    embargo = replace(
        AccessRules.from_rules([("", "block", 365), ("fr,bnf-test)/depot", "allow", None)]),
        now=now,
    )
    assert set(_urls(_search(backend, "", per_page=50, access=embargo))) == {
        "http://www.bnf-test.fr/sevres.html",
        "http://www.bnf-test.fr/depot-legal.html",
    }


def test_reextracting_changes_nothing(indexed) -> None:  # type: ignore[no-untyped-def]
    backend, results = indexed
    before = backend.count()
    again = [extract_file(r["file"]) for r in results]
    assert again == results
    assert backend.count() == before == (6, 8)  # 6 texts; 7 responses + 1 revisit
