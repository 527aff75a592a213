"""The search page: results with replay links and snippets, facets, paging, access rules."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from access.config import AccessConfig
from access.searchapp import app_from_settings
from search.model import AccessRules
from search.webapp import create_app

pytestmark = pytest.mark.services


def _client(backend, rules=AccessRules, per_page: int = 10) -> TestClient:  # type: ignore[no-untyped-def]
    app = create_app(
        lambda: backend, replay_url="http://replay.test:8090/", rules=rules, per_page=per_page
    )
    return TestClient(app)


def test_results_link_into_replay_with_highlighted_snippets(indexed) -> None:  # type: ignore[no-untyped-def]
    backend, _ = indexed
    page = _client(backend).get("/", params={"q": '"salles de recherche"'})
    assert page.status_code == 200
    html = page.text
    assert "1 result, page 1 of 1" in html
    assert (
        'href="http://replay.test:8090/all/20261122031500/http://www.bnf-test.fr/depot-legal.html"'
        in html
    )
    assert 'href="http://replay.test:8090/all/*/http://www.bnf-test.fr/depot-legal.html"' in html
    assert "<mark>salles</mark>" in html and "Le dépôt légal de l&#39;internet" in html


def test_collapsed_hit_and_facet_links(indexed) -> None:  # type: ignore[no-untyped-def]
    backend, _ = indexed
    client = _client(backend)
    html = client.get("/", params={"q": "calendar"}).text
    assert "2 other captures of the same content" in html
    assert re.search(
        r'href="\?q=calendar&amp;host=mirror.example.net">mirror.example.net</a> \(1\)', html
    )
    filtered = client.get("/", params={"q": "calendar", "host": "mirror.example.net"}).text
    assert "1 result, page 1 of 1" in filtered
    assert "/all/20261122031500/http://mirror.example.net/calendar" in filtered


def test_paging_links(indexed) -> None:  # type: ignore[no-untyped-def]
    backend, _ = indexed
    client = _client(backend, per_page=2)
    first = client.get("/", params={"year": "2026"}).text
    assert "5 results, page 1 of 3" in first
    assert 'href="?year=2026&amp;page=2">next' in first and "previous" not in first
    last = client.get("/", params={"year": "2026", "page": "3"}).text
    assert 'href="?year=2026&amp;page=2">← previous' in last and "next" not in last
    assert last.count('class="hit"') == 1
    empty = client.get("/", params={"q": "nothing-like-this-word"}).text
    assert "No archived page matches." in empty


def test_blocked_captures_never_shown_and_bad_parameters_refused(indexed) -> None:  # type: ignore[no-untyped-def]
    backend, _ = indexed
    client = _client(backend, rules=lambda: AccessRules(blocked=("fr,bnf-test)/",)))
    html = client.get("/", params={"q": "bibliothèque"}).text
    assert "No archived page matches." in html and "Sèvres" not in html
    assert client.get("/", params={"q": "x", "page": "0"}).status_code == 422
    assert client.get("/", params={"q": "x", "year": "abc"}).status_code == 422
    assert client.get("/", params={"q": "x" * 2000}).status_code == 422
    assert client.get("/", params={"q": "x", "host": "a\x00b"}).status_code == 400
    assert client.get("/", params={"q": "a\x00b"}).status_code == 200


def test_the_configured_app_links_to_the_access_service(indexed) -> None:  # type: ignore[no-untyped-def]
    from harvestflow.settings import Settings, get_settings

    real = get_settings()
    default = TestClient(app_from_settings(real)).get("/", params={"q": "dirigible"}).text
    # the replay site of the session's free port (tests/conftest.py): [access] url's gateway as
    # readers' browsers reach it, on a host name of its own (never Airflow's)
    configured = AccessConfig.from_settings(real).url.rstrip("/")
    assert configured != real["access"]["url"].rstrip("/")
    assert f'href="{configured}/all/20261122031500/http://news.example.org/' in default
    # the access service's [access] url moves the links with it
    moved = Settings(
        {**real.data, "access": {**real["access"], "url": "http://access.test:9000/"}}, real.source
    )
    html = TestClient(app_from_settings(moved)).get("/", params={"q": "dirigible"}).text
    assert 'href="http://access.test:9000/all/20261122031500/http://news.example.org/' in html
