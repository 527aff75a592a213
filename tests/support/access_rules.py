"""Access rules in tests: a page with a word to find (the ``harvestflow`` command: tests/support/command.py)."""

from __future__ import annotations

from datetime import datetime

from tests.support.corpus import Page


def page(url: str, word: str, when: datetime) -> Page:
    body = f"<html><head><title>{word}</title></head><body><h1>{word}</h1>{PROSE}</body></html>"
    return Page(url, body.encode(), "text/html", date=when.strftime("%Y-%m-%dT%H:%M:%SZ"))


PROSE = (
    "<p>The reading room of the national library keeps the quokka collection of web pages,"
    " harvested under legal deposit and consulted by researchers every day of the year.</p>"
    "<p>Curators select the sites; crawlers capture them; the archive keeps every version.</p>"
)
