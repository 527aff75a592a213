"""The curator pages' annotations and QA feedback: what the job and domain pages show, and the
two forms that write (a QA comment on a job, a target's annotation).

Why a module apart from the web app: the pages only call the harvest stage's owners
(:mod:`harvest.selection.annotations`, :mod:`harvest.selection.qa_feedback`); this module turns
their answers into page data and the forms' fields into their arguments. Writes go through
:func:`app.curator.actions.check_collection_write` (a POST with the page's CSRF token from a
curator of the collections the write touches: :mod:`harvest.office.office_rights`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Annotated, Any
from urllib.parse import quote

import sqlalchemy as sa
from fastapi import FastAPI, HTTPException, Request
from fastapi import Path as PathParam
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from app.curator import actions
from harvest.office import office_rights
from harvest.selection import qa_feedback
from harvest.selection.annotations import (
    Annotation,
    AnnotationError,
    LicenceStatus,
    ScopeEvidence,
    annotate,
    current,
    histories,
    records_of_domains,
)
from harvest.selection.record_search import collections_of
from harvestflow.errors import NotFoundError
from harvestflow.formats.domains import registrable_domain
from harvestflow.formats.integers import BIGINT_MAX, INTEGER_MAX

log = logging.getLogger(__name__)

RecordId = Annotated[int, PathParam(ge=0, le=INTEGER_MAX)]
JobNo = Annotated[int, PathParam(ge=0, le=BIGINT_MAX)]
VOCABULARY = {
    "qa_statuses": list(qa_feedback.QaStatus),
    "licence_statuses": list(LicenceStatus),
    "evidence_kinds": list(ScopeEvidence),
}


def job_feedback(conn: sa.Connection, job_id: int) -> dict[str, Any]:
    """The job page's QA section: status, comments (newest first), the job's records."""
    return {
        "status": qa_feedback.job_status(conn, job_id),
        "comments": qa_feedback.comments(conn, job_id=job_id),
        "records": qa_feedback.job_records(conn, job_id),
        **VOCABULARY,
    }


def domain_feedback(conn: sa.Connection, name: str, job_ids: Sequence[int] = ()) -> dict[str, Any]:
    """The domain page's targets: each record with its annotation and history, and the QA
    comments about them or about the domain's jobs shown (``job_ids``: a job that crawled the
    domain for no selection record, a snapshot's, has its comments here too)."""
    records = records_of_domains(conn, [name])
    ids = [int(r["record_id"]) for r in records]
    versions = histories(conn, ids)
    for record in records:
        now, *older = versions[record["record_id"]] or [Annotation(record_id=record["record_id"])]
        record["annotation"], record["history"] = now, older
        record["evidence"] = {e["kind"]: e["text"] for e in record["annotation"].scope_evidence}
    return {
        "records": records,
        "comments": qa_feedback.comments(conn, record_ids=ids, job_ids=job_ids),
        **VOCABULARY,
    }


def record_feedback(conn: sa.Connection, record_id: int, seed_url: str) -> dict[str, Any]:
    """The selection record page's part: its annotation now (the form is on its domain's page,
    beside the domain's other records) and the QA comments about it, newest first."""
    return {
        "annotation": current(conn, [record_id])[record_id],
        "comments": qa_feedback.comments(conn, record_ids=[record_id]),
        "domain": registrable_domain(seed_url),
    }


def comment_arguments(form: dict[str, str]) -> dict[str, Any]:
    """write_comment's arguments from the job page's QA form."""
    return {
        "text": form.get("text", ""),
        "status": form.get("status", "").strip() or None,
        "record_id": actions.form_int(form, "record_id", grouped=True, maximum=INTEGER_MAX),
        "add_urls": form.get("add_urls", "").splitlines(),
        "max_objects": actions.form_int(form, "max_objects", grouped=True),
        "max_bytes": actions.form_int(form, "max_bytes", grouped=True),
    }


def annotation_arguments(form: dict[str, str]) -> dict[str, Any]:
    """annotate's arguments from the domain page's form (a whole annotation: every field)."""
    evidence = [
        {"kind": kind, "text": form.get(f"evidence_{kind}_text", "")}
        for kind in ScopeEvidence
        if form.get(f"evidence_{kind}")
    ]
    return {
        "scope_evidence": evidence,
        "licence_status": form.get("licence_status", LicenceStatus.NOT_REQUESTED),
        "licence_date": form.get("licence_date", ""),
        "licence_note": form.get("licence_note", ""),
        "notes": form.get("notes", ""),
    }


def licence_rules(engine: sa.Engine) -> None:
    """The access rules the licences want, in force now (:func:`access.licences.sync`; the
    replay service's refresh applies them, and would make them if this failed)."""
    from access import licences
    from harvestflow.errors import HarvestflowError

    try:
        licences.sync(engine)
    except (HarvestflowError, sa.exc.SQLAlchemyError):
        log.exception("licence rules not brought up to date now: the next refresh will")


def _status_of(exc: Exception) -> int:
    """404 when what the page's path names does not exist, 400 for a form that is refused."""
    return 404 if isinstance(exc, NotFoundError) else 400


def add_routes(app: FastAPI, engine_factory: Callable[[], sa.Engine], csrf_key: bytes) -> None:
    """The two writes: ``POST /jobs/{id}/qa`` and ``POST /records/{id}/annotations``."""

    @app.post("/jobs/{job_id}/qa")
    async def job_qa(request: Request, job_id: JobNo) -> Response:
        """A QA comment on a job (its status, text, directives for the next harvest)."""
        form = await actions.read_form(request)
        args = comment_arguments(form)
        limits = (args["max_objects"], args["max_bytes"])
        directives = any(u.strip() for u in args["add_urls"]) or limits != (None, None)
        with engine_factory().connect() as conn:
            needed = office_rights.job_write(
                conn, job_id, "comment jobs", record_id=args["record_id"], directives=directives
            )
            user = actions.check_needed(request, form, csrf_key, conn, needed)
        try:
            with engine_factory().begin() as conn:
                comment = qa_feedback.write_comment(conn, job_id, user, **args)
        except qa_feedback.FeedbackError as exc:
            raise HTTPException(_status_of(exc), str(exc)) from None
        target = f"{actions.root_path(request)}/jobs/{job_id}?qa={comment.comment_id}#qa"
        return RedirectResponse(target, 303)

    @app.post("/records/{record_id}/annotations")
    async def record_annotations(request: Request, record_id: RecordId) -> Response:
        """A target's annotation (scope evidence, licence, notes), from the domain page."""
        form = await actions.read_form(request)
        with engine_factory().connect() as conn:
            where = collections_of(conn, [record_id])
            if record_id not in where:
                raise HTTPException(404, f"no selection record {record_id}")
            user = actions.check_collection_write(
                request, form, csrf_key, conn, [where[record_id]], what="annotate targets"
            )
        try:
            with engine_factory().begin() as conn:
                annotate(conn, record_id, user, **annotation_arguments(form))
        except AnnotationError as exc:
            raise HTTPException(_status_of(exc), str(exc)) from None
        await run_in_threadpool(licence_rules, engine_factory())
        back = form.get("domain", "")
        target = f"/domains/{quote(back, safe='')}#targets" if back else "/domains"
        return RedirectResponse(actions.root_path(request) + target, 303)
