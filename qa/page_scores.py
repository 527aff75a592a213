"""The capture-vs-replay QA figures of one day, per harvest definition, for ``daily_qa_stats``:
pages checked, median score, pages below threshold, URLs patched and still missing — and the
comparison with the definition's previous run, a drop flagged.

Why per definition: a definition harvests the same targets run after run, so its pages' scores
are comparable from one run to the next; a drop (the median down by more than
``DROP_POINTS``, or the share of pages below threshold up by more than ``DROP_SHARE``) says a
site changed in a way the crawl no longer captures, or the crawl itself regressed. The scores
are read from the jobs' stored QA reports (harvest.page_qa); a run whose pages all replayed as
captured has nothing to flag.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harvestflow.contracts.qa_report import QaSummary, summarise

if TYPE_CHECKING:  # harvest.page_qa (SQLAlchemy) is imported where the DB is read
    from sqlalchemy.engine import Engine

    from harvest.page_qa import JobQa
    from qa.inputs import JobInfo

log = logging.getLogger(__name__)

DROP_POINTS = 5.0  # the median score falling by more than this is a drop
DROP_SHARE = 0.10  # ...or the share of pages below threshold rising by more than this


@dataclass(frozen=True)
class DefinitionScores:
    """One definition's QA on the day, and its previous run's."""

    harvest_id: int
    harvest_name: str
    jobs: int
    now: QaSummary
    before: QaSummary | None

    @property
    def dropped(self) -> bool:
        b, n = self.before, self.now
        if b is None or not b.pages or not n.pages:
            return False
        median_drop = (b.median_score or 0.0) - (n.median_score or 0.0)
        return median_drop > DROP_POINTS or n.below_share - b.below_share > DROP_SHARE


def _merged(jobs: list[JobQa]) -> QaSummary:
    checks = [c for j in jobs for c in j.checks]
    first = jobs[0].summary
    return summarise(checks, first.min_score, first.max_below_share)


def day_scores(engine: Engine, jobs: list[JobInfo]) -> list[DefinitionScores]:
    """The day's figures of each definition whose jobs checked pages (by harvest id)."""
    from harvest.page_qa import jobs_qa, previous_run

    out = []
    with engine.connect() as conn:
        found = jobs_qa(conn, [j.job_id for j in jobs])
        for harvest_id in sorted({found[j].harvest_id for j in found}):
            members = [found[j] for j in sorted(found) if found[j].harvest_id == harvest_id]
            run = min(j.harvest_num for j in jobs if j.harvest_id == harvest_id)
            earlier = previous_run(conn, harvest_id, run)
            before = _merged(earlier) if earlier else None
            name = members[0].harvest_name
            out.append(DefinitionScores(harvest_id, name, len(members), _merged(members), before))
    return out


def stats(scores: list[DefinitionScores]) -> list[tuple[str, str, str, float]]:
    """(scope, family, key, value) rows of ``qa_stats``."""
    rows = []
    for d in scores:
        scope, n = f"harvest:{d.harvest_id}", d.now
        values = {
            "pages": n.pages,
            "median_score": n.median_score if n.median_score is not None else 0.0,
            "below": n.below,
            "below_share": n.below_share,
            "patched": n.patched,
            "still_missing": n.still_missing,
            "dropped": 1.0 if d.dropped else 0.0,
        }
        rows += [(scope, "page_qa", k, float(v)) for k, v in values.items()]
    return rows


def summary(scores: list[DefinitionScores]) -> list[dict[str, Any]]:
    """The day's summary entries (qa_reports.summary, the task log)."""
    return [
        {
            "harvest": d.harvest_name,
            "harvest_id": d.harvest_id,
            "pages": d.now.pages,
            "median_score": d.now.median_score,
            "below": d.now.below,
            "patched": d.now.patched,
            "still_missing": d.now.still_missing,
            "previous_median_score": d.before.median_score if d.before else None,
            "dropped": d.dropped,
        }
        for d in scores
    ]


def _median(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def lines(entries: list[dict[str, Any]]) -> list[str]:
    """One line per definition (from :func:`summary`'s entries), a drop flagged."""
    out = []
    for e in entries:
        line = (
            f"{e['harvest']}: {e['pages']} pages checked, median score"
            f" {_median(e['median_score'])} (previous run {_median(e['previous_median_score'])}),"
            f" {e['below']} below threshold, {e['patched']} URLs patched,"
            f" {e['still_missing']} still missing"
        )
        out.append(line + ("  DROP" if e["dropped"] else ""))
    return out


def text(scores: list[DefinitionScores], day: str) -> str:
    """``page-qa.txt`` of the day's report."""
    head = f"Capture-vs-replay QA of rendered pages, per definition ({day})\n\n"
    body = lines(summary(scores)) or ["no page checked that day"]
    return head + "\n".join(body) + "\n"
