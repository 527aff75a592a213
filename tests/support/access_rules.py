"""Access rules in tests: the rules CLI run as a subprocess, and a page with a word to find."""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime

from tests.support.corpus import Page


def page(url: str, word: str, when: datetime) -> Page:
    body = f"<html><head><title>{word}</title></head><body><h1>{word}</h1>{PROSE}</body></html>"
    return Page(url, body.encode(), "text/html", date=when.strftime("%Y-%m-%dT%H:%M:%SZ"))


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli.main", *args], capture_output=True, text=True
    )


PROSE = (
    "<p>The reading room of the national library keeps the quokka collection of web pages,"
    " harvested under legal deposit and consulted by researchers every day of the year.</p>"
    "<p>Curators select the sites; crawlers capture them; the archive keeps every version.</p>"
)
