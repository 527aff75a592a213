"""The documents pages: watched targets' publications, across targets or per target, and each
document's page where a curator corrects its metadata, catalogues or rejects it.

Why only routes here: every query and write is the document step's own
(:mod:`indexing.documents.store`, which keeps each correction and decision as a version); this
module reads the forms, checks the writer's role (curator) and CSRF token through
:func:`actions.check_write`, and renders the answer with replay links into the archive.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import FastAPI, HTTPException, Request
from fastapi import Path as PathParam
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from app.curator import actions
from app.curator.form_pages import FormPages
from harvestflow.formats.integers import BIGINT_MAX, INTEGER_MAX, NumberError, parse_int
from indexing.documents import store
from indexing.documents.export import archive_url

DocumentId = Annotated[int, PathParam(ge=1, le=BIGINT_MAX)]
MAX_DOCUMENT_FORM = 65_536


def _target(value: str) -> int | None:
    if not value.strip():
        return None
    try:
        return parse_int(value, "target", minimum=1, maximum=INTEGER_MAX)
    except NumberError as exc:
        raise HTTPException(400, str(exc)) from None


def _links(doc: dict[str, Any], replay: str) -> dict[str, Any]:
    first = doc["captures"][0] if doc["captures"] else {"url": doc["url"], "captured_at": None}
    doc["archive_url"] = archive_url(replay, first["captured_at"] or doc["captured_at"],
                                     first["url"])  # fmt: skip
    doc["landing_archive_url"] = archive_url(replay, doc["landing_captured_at"], doc["landing_url"])
    return doc


def correction(form: dict[str, str]) -> dict[str, Any]:
    """store.correct's fields from the document form (authors: one per line)."""
    fields: dict[str, Any] = {k: form.get(k, "") for k in store.EDITABLE if k != "authors"}
    fields["authors"] = form.get("authors", "").splitlines()
    return fields


def add_document_routes(app: FastAPI, forms: FormPages, *, replay: str) -> None:
    """Add ``/documents`` (list), ``/documents/{id}`` (page, correction) and
    ``/documents/{id}/decision`` (catalogue or reject) to the curator app."""
    page, connect, engine_factory, csrf_key = forms

    @app.get("/documents", response_class=HTMLResponse)
    def documents(request: Request, target: str = "", state: str = "") -> Response:
        record_id = _target(target)
        if state and state not in store.STATES:
            raise HTTPException(
                400, f"state: {state[:20]!r} is not one of {', '.join(store.STATES)}"
            )
        with connect() as conn:
            docs = store.list_documents(conn, record_id=record_id,
                                        states=(state,) if state else None)  # fmt: skip
            counts = store.counts_by_target(conn)
        title = f"Documents of target {record_id}" if record_id else "Documents"
        return page(request, "documents.html", title=title, docs=[_links(d, replay) for d in docs],
                    target=record_id, state=state, states=store.STATES, counts=counts)  # fmt: skip

    def document_page(request: Request, document_id: int, status: int = 200,
                      error: str = "", saved: str = "") -> Response:  # fmt: skip
        with connect() as conn:
            docs = store.list_documents(conn, document_id=document_id)
            if not docs:
                raise HTTPException(404, f"no document {document_id}")
            history = store.history(conn, document_id)
        response = page(request, "document.html", title=f"Document {document_id}",
                        d=_links(docs[0], replay), history=history, error=error, saved=saved,
                        role=actions.role_of(request).label)  # fmt: skip
        response.status_code = status
        return response

    @app.get("/documents/{document_id}", response_class=HTMLResponse)
    def document(request: Request, document_id: DocumentId, saved: str = "") -> Response:
        return document_page(request, document_id, saved=saved[:100])

    @app.post("/documents/{document_id}")
    async def correct(request: Request, document_id: DocumentId) -> Response:
        form = await actions.read_form(request, MAX_DOCUMENT_FORM)
        user = actions.check_write(request, form, csrf_key, role=actions.Role.CURATOR)
        try:
            with engine_factory().begin() as conn:
                changed = store.correct(conn, document_id, user, correction(form))
        except store.DocumentError as exc:
            return document_page(request, document_id, 400, error=str(exc))
        done = "corrected: " + ", ".join(changed) if changed else "nothing changed"
        return RedirectResponse(
            f"{actions.root_path(request)}/documents/{document_id}?saved={done}", 303
        )

    @app.post("/documents/{document_id}/decision")
    async def decide(request: Request, document_id: DocumentId) -> Response:
        form = await actions.read_form(request)
        user = actions.check_write(request, form, csrf_key, role=actions.Role.CURATOR)
        try:
            with engine_factory().begin() as conn:
                state = store.decide(conn, document_id, user, form.get("decision", ""))
        except store.DocumentError as exc:
            return document_page(request, document_id, 400, error=str(exc))
        return RedirectResponse(
            f"{actions.root_path(request)}/documents/{document_id}?saved={state}", 303
        )
