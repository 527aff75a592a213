"""The job's capture-vs-replay QA reports: written by the crawler's QA pass, read by the crawl
task's log, the curator pages and harvest's results.

Why two text reports (``reports/qa-report.txt``, ``reports/qa-missing-report.txt``) in the
Heritrix style: like every report of the job they are stored with it (``job_reports``) and read
with ``awk``; a page has one line per check (``1``: after its capture; ``2``: once more after
its missing URLs were fetched by the QA patch), and its missing URLs one line each. The last
check of a page is its score. The screenshots the check compared (the capture's and the
replay's viewport) lie in ``reports/qa-shots/`` under the names the line gives.

    qa-report.txt          [page] [check] [score] [pixel-diff] [text-similarity] [requests]
                           [missing] [new-js-errors] [patched] [seconds] [shots]
    qa-missing-report.txt  [page] [check] [url] [what]   what: missing | patched:<status>
                           | not-patched:<why>
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from harvestflow.contracts.jobdir import JobDir
from harvestflow.formats.fields import clean_field

log = logging.getLogger(__name__)

QA_REPORT = "qa-report.txt"
QA_MISSING_REPORT = "qa-missing-report.txt"
QA_SHOTS = "qa-shots"
QA_HEADER = (
    "[page] [check] [score] [pixel-diff] [text-similarity] [requests] [missing]"
    " [new-js-errors] [patched] [seconds] [shots]"
)
QA_MISSING_HEADER = "[page] [check] [url] [what]"
MAX_MISSING_PER_PAGE = 200  # a page asking for more is listed cut (its count stays whole)


@dataclass
class PageCheck:
    """One check of one page: what the replay showed against what the capture saw."""

    page: str
    check: int
    score: float
    pixel_diff: float
    text_similarity: float
    requests: int
    missing: list[str] = field(default_factory=list)
    new_js_errors: int = 0  # errors the replay raised that the capture did not
    # what the QA patch did with its missing URLs (read back; written by write_patches):
    # URL → patched:<status> | not-patched:<why>
    patched: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    shots: str = "-"
    patched_count: int = 0  # URLs the QA patch fetched before this check

    def below(self, min_score: float) -> bool:
        return self.score < min_score


@dataclass(frozen=True)
class QaSummary:
    """What a job's QA pass found, for the task log and the pages."""

    pages: int
    median_score: float | None
    below: int
    patched: int
    still_missing: int
    min_score: float
    max_below_share: float

    @property
    def below_share(self) -> float:
        return self.below / self.pages if self.pages else 0.0

    @property
    def flagged(self) -> bool:
        """More pages below the page threshold than the template allows."""
        return self.pages > 0 and self.below_share > self.max_below_share

    def lines(self) -> list[str]:
        if not self.pages:
            return ["QA: no page checked"]
        median = f"{self.median_score:.1f}" if self.median_score is not None else "-"
        out = [
            f"QA: {self.pages} pages checked, median score {median},"
            f" {self.below} below {self.min_score:g},"
            f" {self.patched} URLs patched, {self.still_missing} URLs still missing"
        ]
        if self.flagged:
            out.append(
                f"QA: {self.below_share:.0%} of the pages scored below {self.min_score:g}"
                f" (more than the {self.max_below_share:.0%} allowed): look at the job's QA"
            )
        return out


def shot_names(page: str, check: int) -> tuple[str, str]:
    """The capture's and the replay's screenshot of a page's check, in ``qa-shots/``."""
    stem = hashlib.sha1(page.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return f"{stem}-capture.png", f"{stem}-replay-{check}.png"


def _append(path: Path, header: str, lines: list[str]) -> None:
    new = not path.exists()
    with path.open("a", encoding="utf-8") as fh:
        if new:
            fh.write(header + "\n")
        fh.write("".join(line + "\n" for line in lines))


def write_check(report_dir: Path, c: PageCheck) -> None:
    """One page check's line, and its missing and patched URLs' lines."""
    page = clean_field(c.page)
    _append(
        report_dir / QA_REPORT,
        QA_HEADER,
        [
            f"{page} {c.check} {c.score:.1f} {c.pixel_diff:.4f} {c.text_similarity:.4f}"
            f" {c.requests} {len(c.missing)} {c.new_js_errors} {c.patched_count}"
            f" {c.seconds:.2f} {clean_field(c.shots)}"
        ],
    )
    lines = [f"{page} {c.check} {clean_field(u)} missing" for u in c.missing[:MAX_MISSING_PER_PAGE]]
    if lines:
        _append(report_dir / QA_MISSING_REPORT, QA_MISSING_HEADER, lines)


def write_patches(report_dir: Path, page: str, check: int, patched: dict[str, str]) -> None:
    """What the QA patch did with the missing URLs check ``check`` of ``page`` found."""
    p = clean_field(page)
    lines = [f"{p} {check} {clean_field(u)} {clean_field(w)}" for u, w in patched.items()]
    if lines:
        _append(report_dir / QA_MISSING_REPORT, QA_MISSING_HEADER, lines)


def parse_checks(text: str) -> list[PageCheck]:
    """Every page's last check in a ``qa-report.txt`` (report order), without its URLs; a
    torn or malformed line (a running job's last) is left out."""
    last: dict[str, PageCheck] = {}
    for line in text.splitlines()[1:]:
        f = line.split()
        if len(f) != 11 or not all(x.isdigit() for x in (f[1], f[5], f[6], f[7], f[8])):
            continue
        try:
            score, pixel, similarity, seconds = float(f[2]), float(f[3]), float(f[4]), float(f[9])
        except ValueError:
            continue
        last[f[0]] = PageCheck(
            f[0], int(f[1]), score, pixel, similarity, int(f[5]),
            new_js_errors=int(f[7]), seconds=seconds, shots=f[10],
            patched_count=int(f[8]),
        )  # fmt: skip
    return list(last.values())


def read_checks(job_dir: Path | None) -> list[PageCheck]:
    """Every page's last check (report order), with that check's missing URLs and the
    patch's outcomes; [] without a report."""
    if job_dir is None:
        return []
    jd = JobDir(job_dir)
    try:
        text = jd.report(QA_REPORT).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    checks = parse_checks(text)
    try:
        missing = jd.report(QA_MISSING_REPORT).read_text(encoding="utf-8", errors="replace")
    except OSError:
        missing = ""
    add_missing(checks, missing)
    return checks


def add_missing(checks: list[PageCheck], text: str) -> None:
    """Each page's URLs still missing at its last check, and what the patch did with its
    missing URLs, from a ``qa-missing-report.txt``."""
    last = {c.page: c for c in checks}
    for line in text.splitlines()[1:]:
        f = line.split()
        if len(f) != 4 or f[0] not in last or not f[1].isdigit():
            continue
        check = last[f[0]]
        if f[3] != "missing":
            check.patched[f[2]] = f[3]  # the patch of any check of the page
        elif int(f[1]) == check.check:  # an earlier check's misses: the last says what is left
            check.missing.append(f[2])


def summarise(checks: list[PageCheck], min_score: float, max_below_share: float) -> QaSummary:
    """Pages checked, their median score, how many fell below ``min_score``, URLs patched
    (fetched with a 2xx/3xx answer) and URLs still missing after the last check."""
    scores = [c.score for c in checks]
    patched = sum(1 for c in checks for w in c.patched.values() if w.startswith("patched:"))
    return QaSummary(
        len(checks),
        statistics.median(scores) if scores else None,
        sum(1 for c in checks if c.below(min_score)),
        patched,
        sum(len(c.missing) for c in checks),
        min_score,
        max_below_share,
    )


def merge_qa_reports(sources: list[Path], target_dir: Path) -> None:
    """A partitioned job's children's QA reports and screenshots, in the job's reports."""
    for name, header in ((QA_REPORT, QA_HEADER), (QA_MISSING_REPORT, QA_MISSING_HEADER)):
        lines: list[str] = []
        for src in sources:
            path = src / name
            if path.exists():
                lines += path.read_text(encoding="utf-8").splitlines()[1:]
        if lines:
            (target_dir / name).write_text("\n".join([header, *lines]) + "\n", encoding="utf-8")
    for src in sources:
        shots = src / QA_SHOTS
        if shots.is_dir():
            (target_dir / QA_SHOTS).mkdir(parents=True, exist_ok=True)
            for png in shots.glob("*.png"):
                shutil.copyfile(png, target_dir / QA_SHOTS / png.name)
