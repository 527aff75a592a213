"""Searches that match more captures than the backend reads: the count is labelled an estimate.

The crafted corpus has 6 payloads (one with 3 captures). A backend reading at most 2 or 3
matches gives, for a query matching more, a result marked inexact whose total is the estimate
(here the whole corpus fits in the estimating sample, so it is the true count), whose pages and
facets cover what was read, and whose page and CLI say "about". Under the bound nothing changes,
and a phrase still finds only the words side by side.
"""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from search import pg_query
from search.model import SearchResult
from search.pg import PgSearchBackend
from search.query import parse_query
from search.webapp import create_app

pytestmark = pytest.mark.services


def _bounded(indexed, limit: int) -> PgSearchBackend:  # type: ignore[no-untyped-def]
    backend, _ = indexed
    return PgSearchBackend(backend.engine, count_limit=limit)


def _search(backend: PgSearchBackend, text: str, **kw) -> SearchResult:  # type: ignore[no-untyped-def]
    return backend.search(parse_query(text, **kw))


def test_more_matches_than_read_give_a_labelled_estimate(indexed) -> None:  # type: ignore[no-untyped-def]
    small = _bounded(indexed, 2)
    result = _search(small, "")
    assert not result.exact
    assert result.total == 6  # estimated from a sample that holds the whole corpus
    assert result.counted is not None and 1 <= result.counted <= 3
    assert result.pageable == result.counted
    assert result.approximation().startswith("about 6 results")
    assert sum(n for _, n in result.facets["year"]) == result.counted  # facets of what was read
    # with a filter on captures, the bound is on the visible captures read
    site = _search(small, "site:example.org")
    assert not site.exact and site.total == 4 and 1 <= (site.counted or 0) <= 3
    assert {h.url.split("/")[2] for h in site.hits} <= {"news.example.org", "www.example.org"}


def test_under_the_bound_everything_is_exact(indexed) -> None:  # type: ignore[no-untyped-def]
    backend, _ = indexed
    for limit in (6, 10_000):
        result = _search(_bounded(indexed, limit), "")
        assert result.exact and result.total == result.counted == 6
        assert result.approximation() == ""
        assert dict(result.facets["year"]) == dict(_search(backend, "").facets["year"])


def test_pages_of_an_estimate_are_stable_and_distinct(indexed) -> None:  # type: ignore[no-untyped-def]
    small = _bounded(indexed, 4)
    runs = []
    for _ in range(2):
        seen = []
        for page in (1, 2, 3):
            seen += [h.digest for h in _search(small, "", page=page, per_page=2).hits]
        runs.append(seen)
    assert runs[0] == runs[1]
    assert len(runs[0]) == len(set(runs[0])) == _search(small, "").counted


def test_a_phrase_finds_only_the_words_side_by_side(indexed) -> None:  # type: ignore[no-untyped-def]
    backend, _ = indexed
    together = _search(backend, '"salles de recherche"')
    assert [h.url for h in together.hits] == ["http://www.bnf-test.fr/depot-legal.html"]
    assert _search(backend, '"recherche salles"').total == 0  # same words, other order


def test_the_page_says_about(indexed) -> None:  # type: ignore[no-untyped-def]
    small = _bounded(indexed, 2)
    app = create_app(lambda: small, replay_url="http://replay.test:8090/", per_page=1)
    html = TestClient(app).get("/", params={"q": ""} | {"year": "2026"}).text
    assert re.search(r"about 5 results: too many to count.*the \d first found; page 1 of \d", html)


def test_estimates_are_shown_to_two_significant_figures() -> None:
    assert [pg_query.round2(n) for n in (7, 42, 12_345, 987_654)] == [7, 42, 12_000, 990_000]
