"""QA feedback on a crawled instance (a job): its QA status, curators' comments, and the
directives a comment carries to the next harvest of the selection record it is about.

Why comments carry directives: what a curator sees missing in a capture (a page, a feed, an
embed) or cut short by the budget must change the next crawl without a second tool. A comment
may ask to add URLs to the record's seeds and to raise its budget (max objects / bytes per
domain). They are stored as written (nothing typed is lost) and applied once, by the next
selection transfer (:func:`apply_directives`, called by ``transfer``), in its transaction: each
URL is checked like a seed then; a bad one is named with its comment and left out, the others
are added. The job's QA status is the one its newest comment set (not checked before any).
This module owns ``job_qa_comments`` (sql/031); the curator pages and the CLI call it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from harvest.errors import HarvestError
from harvest.jobgen.model import is_limit
from harvest.selection.annotations import records_of_domains
from harvestflow.audit import record_audit
from harvestflow.errors import NotFoundError
from harvestflow.formats.seeds import SeedError, check_seed_url, check_text
from harvestflow.job_actions import past_limit_max

log = logging.getLogger(__name__)

MAX_URLS = 1000  # URLs one comment may ask to add


class QaStatus(StrEnum):
    """A crawled instance's quality-assurance status."""

    NOT_CHECKED = "not_checked"
    PASSED = "passed"
    ISSUES = "issues"
    FAILED = "failed"


class DirectiveState(StrEnum):
    """Where a comment's directives stand: applied once by the next transfer."""

    PENDING = "pending"
    APPLIED = "applied"
    REFUSED = "refused"
    """Nothing could be applied (every URL bad, or the record gone); the note says why."""


class FeedbackError(HarvestError, ValueError):
    """A comment that cannot be stored; the message names what and why."""


class QaJobMissing(FeedbackError, NotFoundError):
    """The job a QA comment is for does not exist."""


@dataclass
class QaComment:
    comment_id: int
    job_id: int
    record_id: int | None
    author: str
    written_at: datetime
    qa_status: QaStatus | None
    body: str
    add_urls: list[str] = field(default_factory=list)
    max_objects: int | None = None
    max_bytes: int | None = None
    directive_state: DirectiveState | None = None
    applied_at: datetime | None = None
    applied_note: str | None = None

    def url_problems(self) -> list[tuple[str, str]]:
        """(URL, reason) of each URL to add that is no seed (shown before it is applied)."""
        return url_problems(self.add_urls)

    def as_feed(self) -> dict[str, Any]:
        return {
            "id": self.comment_id,
            "job": self.job_id,
            "author": self.author,
            "writtenAt": self.written_at.isoformat(),
            "qaStatus": None if self.qa_status is None else str(self.qa_status),
            "text": self.body,
            "addUrls": list(self.add_urls),
            "maxObjects": self.max_objects,
            "maxBytes": self.max_bytes,
            "directives": None if self.directive_state is None else str(self.directive_state),
            "appliedNote": self.applied_note,
        }


def parse_status(value: str) -> QaStatus:
    word = value.strip().lower().replace(" ", "_").replace("-", "_")
    try:
        return QaStatus(word)
    except ValueError:
        raise FeedbackError(
            f"QA status {value[:40]!r}: expected one of {', '.join(QaStatus)}"
        ) from None


def url_problems(urls: Iterable[str]) -> list[tuple[str, str]]:
    problems = []
    for url in urls:
        try:
            check_seed_url(url)
        except SeedError as exc:
            problems.append((url, str(exc)))
    return problems


def _limit(value: int | None, name: str, key: str) -> int | None:
    """A directive's budget: positive or -1 (no limit), at most the limit a crawl-control
    action may set (:func:`harvestflow.job_actions.past_limit_max`)."""
    if value is None:
        return None
    if not is_limit(value):
        raise FeedbackError(f"{name} {str(value)[:40]}: a positive number, or -1 for no limit")
    too_large = past_limit_max(key, value)
    if too_large:
        raise FeedbackError(too_large)
    return value


def job_records(conn: Connection, job_id: int) -> list[dict[str, Any]]:
    """The selection records of a job's domains (what its comments' directives may change)."""
    domains = conn.execute(
        sa.text(
            "SELECT DISTINCT d.name FROM job_configs jc JOIN configurations c USING (config_id)"
            " JOIN domains d ON d.domain_id = c.domain_id WHERE jc.job_id = :j"
        ),
        {"j": job_id},
    ).scalars()
    return records_of_domains(conn, domains)


def write_comment(
    conn: Connection,
    job_id: int,
    author: str,
    text: str = "",
    *,
    status: str | None = None,
    record_id: int | None = None,
    add_urls: Sequence[str] = (),
    max_objects: int | None = None,
    max_bytes: int | None = None,
) -> QaComment:
    """Store a QA comment (and the status it sets); returns it with its id.

    URLs are kept as typed (blank lines dropped); :meth:`QaComment.url_problems` says which
    would be refused. Directives need a record: the one given, or the job's only one.
    """
    if not author:
        raise FeedbackError("a QA comment needs its author")
    if conn.execute(sa.text("SELECT 1 FROM jobs WHERE job_id = :j"), {"j": job_id}).first() is None:
        raise QaJobMissing(f"no job {job_id}")
    try:
        body = check_text(text or "", "comment").strip()
        urls = [check_text(u, "URL").strip() for u in add_urls]
    except SeedError as exc:
        raise FeedbackError(str(exc)) from None
    urls = list(dict.fromkeys(u for u in urls if u))
    if len(urls) > MAX_URLS:
        raise FeedbackError(f"{len(urls)} URLs to add: at most {MAX_URLS} a comment")
    qa_status = parse_status(status) if status else None
    max_objects = _limit(max_objects, "max objects", "max_objects")
    max_bytes = _limit(max_bytes, "max bytes", "max_bytes")
    directives = bool(urls) or max_objects is not None or max_bytes is not None
    if not (body or qa_status or directives):
        raise FeedbackError("an empty comment: write a text, set a QA status or give a directive")
    if record_id is None:
        records = job_records(conn, job_id)
        if len(records) == 1:
            record_id = int(records[0]["record_id"])
        elif directives:
            ids = ", ".join(str(r["record_id"]) for r in records) or "none"
            raise FeedbackError(
                f"job {job_id} has {len(records)} selection records ({ids}):"
                " name the one the directives are for"
            )
    elif (
        conn.execute(
            sa.text("SELECT 1 FROM selection_records WHERE record_id = :r"), {"r": record_id}
        ).first()
        is None
    ):
        raise FeedbackError(f"no selection record {record_id}")
    row = conn.execute(
        sa.text(
            "INSERT INTO job_qa_comments (job_id, record_id, author, qa_status, body, add_urls,"
            " max_objects, max_bytes, directive_state) VALUES (:j, :r, :a, :s, :b,"
            " CAST(:u AS text[]), :mo, :mb, :d) RETURNING *"
        ),
        {
            "j": job_id,
            "r": record_id,
            "a": author,
            "s": qa_status and str(qa_status),
            "b": body,
            "u": urls,
            "mo": max_objects,
            "mb": max_bytes,
            "d": str(DirectiveState.PENDING) if directives else None,
        },
    ).one()
    log.info("QA comment %s on job %s by %s", row.comment_id, job_id, author)
    record_audit(
        conn,
        author,
        "job.qa_comment",
        f"job {job_id}",
        {
            "comment_id": row.comment_id,
            "record_id": record_id,
            "qa_status": qa_status and str(qa_status),
            "add_urls": urls,
            "max_objects": max_objects,
            "max_bytes": max_bytes,
        },
    )
    return _comment(row)


def _comment(row: Any) -> QaComment:
    return QaComment(
        comment_id=row.comment_id,
        job_id=row.job_id,
        record_id=row.record_id,
        author=row.author,
        written_at=row.written_at,
        qa_status=None if row.qa_status is None else QaStatus(row.qa_status),
        body=row.body,
        add_urls=list(row.add_urls or []),
        max_objects=row.max_objects,
        max_bytes=row.max_bytes,
        directive_state=None
        if row.directive_state is None
        else DirectiveState(row.directive_state),
        applied_at=row.applied_at,
        applied_note=row.applied_note,
    )


def comments(
    conn: Connection,
    *,
    job_id: int | None = None,
    record_ids: Sequence[int] = (),
    job_ids: Sequence[int] = (),
) -> list[QaComment]:
    """The comments of a job, of jobs, or of records (newest first)."""
    jobs = [*job_ids, *([job_id] if job_id is not None else [])]
    rows = conn.execute(
        sa.text(
            "SELECT * FROM job_qa_comments WHERE job_id = ANY(CAST(:j AS bigint[]))"
            " OR record_id = ANY(CAST(:r AS integer[])) ORDER BY comment_id DESC"
        ),
        {"j": jobs, "r": list(record_ids)},
    ).all()
    return [_comment(row) for row in rows]


def job_status(conn: Connection, job_id: int) -> QaStatus:
    """The QA status the job's newest status-setting comment set."""
    found = conn.execute(
        sa.text(
            "SELECT qa_status FROM job_qa_comments WHERE job_id = :j AND qa_status IS NOT NULL"
            " ORDER BY comment_id DESC LIMIT 1"
        ),
        {"j": job_id},
    ).scalar()
    return QaStatus(found) if found else QaStatus.NOT_CHECKED


def apply_directives(conn: Connection) -> tuple[list[int], list[str]]:
    """Apply every pending directive to its record, once: (comment ids done, errors).

    Runs inside the transfer's transaction (under its lock): the rows are locked, and a
    directive is marked applied (or refused) in the same transaction that changes the record,
    so a retried transfer finds nothing pending and repeats nothing.
    """
    pending = conn.execute(
        sa.text(
            "SELECT * FROM job_qa_comments WHERE directive_state = :pending"
            " ORDER BY comment_id FOR UPDATE"
        ),
        {"pending": str(DirectiveState.PENDING)},
    ).all()
    done: list[int] = []
    errors: list[str] = []
    for row in pending:
        where = f"QA comment {row.comment_id} (job {row.job_id}, by {row.author})"
        notes: list[str] = []
        applied = 0
        record = None
        if row.record_id is not None:
            record = conn.execute(
                sa.text(
                    "SELECT seed_url, supplementary_urls FROM selection_records"
                    " WHERE record_id = :r FOR UPDATE"
                ),
                {"r": row.record_id},
            ).first()
        if record is None:
            notes.append("its selection record is gone: nothing applied")
        else:
            have = [record.seed_url, *(record.supplementary_urls or [])]
            added = []
            for raw in row.add_urls or []:
                try:
                    url = check_seed_url(raw)
                except SeedError as exc:
                    notes.append(f"URL {raw[:200]!r} not added: {exc}")
                    continue
                if url not in have and url not in added:
                    added.append(url)
                applied += 1
            budget = row.max_objects is not None or row.max_bytes is not None
            conn.execute(
                sa.text(
                    "UPDATE selection_records SET supplementary_urls = supplementary_urls"
                    " || CAST(:u AS text[]), max_objects = COALESCE(:mo, max_objects),"
                    " max_bytes = COALESCE(:mb, max_bytes), modified_at = now(),"
                    " modified_by = :a, transferred_at = NULL WHERE record_id = :r"
                ),
                {
                    "u": added,
                    "mo": row.max_objects,
                    "mb": row.max_bytes,
                    "a": row.author,
                    "r": row.record_id,
                },
            )
            applied += int(budget)
            notes.insert(
                0,
                f"{len(added)} URL(s) added to record {row.record_id}"
                + (
                    f"; budget max objects {row.max_objects}, max bytes {row.max_bytes}"
                    if budget
                    else ""
                ),
            )
        errors += [f"{where}: {n}" for n in notes[1 if record is not None else 0 :]]
        state = DirectiveState.APPLIED if applied else DirectiveState.REFUSED
        conn.execute(
            sa.text(
                "UPDATE job_qa_comments SET directive_state = :s, applied_at = now(),"
                " applied_note = :n WHERE comment_id = :c"
            ),
            {"s": str(state), "n": "; ".join(notes), "c": row.comment_id},
        )
        done.append(row.comment_id)
    return done, errors
