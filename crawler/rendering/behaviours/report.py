"""The job's ``reports/behaviours-report.txt``: what the behaviours did on each rendered page,
one line per action (page, behaviour, action, count, detail), ``none`` for a page where none
acted — so a curator can see which pages had a consent wall answered, buttons clicked, media
fetched, and by what (autoconsent's rule name, ``wording``, a site behaviour's name).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from harvestflow.formats.fields import clean_field

if TYPE_CHECKING:
    from crawler.rendering.model import Action

BEHAVIOUR_REPORT = "behaviours-report.txt"
BEHAVIOUR_HEADER = "[page] [behaviour] [action] [count] [detail]"


def write_behaviours(report_dir: Path, url: str, actions: list[Action]) -> None:
    """A rendered page's lines, appended (the header first in a new report)."""
    report = report_dir / BEHAVIOUR_REPORT
    new = not report.exists()
    page = clean_field(url)
    lines = [
        f"{page} {a.behaviour} {a.action} {a.count} {clean_field(a.detail)}" for a in actions
    ] or [f"{page} none - 0 -"]
    with report.open("a", encoding="utf-8") as fh:
        if new:
            fh.write(BEHAVIOUR_HEADER + "\n")
        fh.write("\n".join(lines) + "\n")


def merge_reports(sources: list[Path], target: Path, header: str) -> None:
    """One report from a partitioned job's children's (one header), when any has lines."""
    lines: list[str] = []
    for src in sources:
        if src.exists():
            lines += src.read_text(encoding="utf-8").splitlines()[1:]
    if lines:
        target.write_text("\n".join([header, *lines]) + "\n", encoding="utf-8")
