"""Access rules in tests: the ``harvestflow`` command run by its entry point, and a page with a
word to find."""

from __future__ import annotations

import contextlib
import io
import subprocess
from datetime import datetime

from tests.support.corpus import Page


def page(url: str, word: str, when: datetime) -> Page:
    body = f"<html><head><title>{word}</title></head><body><h1>{word}</h1>{PROSE}</body></html>"
    return Page(url, body.encode(), "text/html", date=when.strftime("%Y-%m-%dT%H:%M:%SZ"))


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``harvestflow ARGS`` through the command's entry point (``app.cli.main.main``: its
    parser, the command, what it prints on each stream and its exit status), in this process.

    Why not a subprocess: the tests ask what the commands do and say, not how an interpreter
    starts; a start with the command's imports cost ~1 CPU-s, and these tests run ~30.
    The environment is the process's own, as a child's would be (the settings read it)."""
    from app.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse refusing the arguments, as the shell would see it
            code = exc.code if isinstance(exc.code, int) else 1
    return subprocess.CompletedProcess(["harvestflow", *args], code, out.getvalue(), err.getvalue())


PROSE = (
    "<p>The reading room of the national library keeps the quokka collection of web pages,"
    " harvested under legal deposit and consulted by researchers every day of the year.</p>"
    "<p>Curators select the sites; crawlers capture them; the archive keeps every version.</p>"
)
