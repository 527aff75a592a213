"""The selection records pages (as BCWeb's or W3ACT's): list and search, create and edit a
record, bulk edit and move a selection, export the search as CSV, each record's history.

Why only routes here: every query and write is made by harvest.selection, the owner of the
records (``record_search`` reads, ``editing`` writes and checks a form exactly as an import
checks a CSV row); this module reads the forms, checks the writer's role (curator) and CSRF
token through :func:`actions.check_write`, and renders the answer. A record is saved in a
worker thread: its URL check waits on other servers (up to ``[harvest] url_check_timeout_s``),
and the app runs in the event loop of Airflow's api-server, which serves every other request.
"""

from __future__ import annotations

import logging
from datetime import date
from typing import Annotated, Any
from urllib.parse import parse_qsl, urlencode

from fastapi import FastAPI, HTTPException, Request
from fastapi import Path as PathParam
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from app.curator import actions, feedback
from app.curator.form_pages import FormPages
from harvest.page_qa import latest_scores
from harvest.selection import editing, record_search, saved_searches
from harvest.selection.mapping import load_mapping
from harvest.selection.records import CSV_COLUMNS
from harvest.views import Page
from harvestflow.audit import audit_entries
from harvestflow.formats.integers import INTEGER_MAX, NumberError, parse_int
from harvestflow.formats.urls import host_of

log = logging.getLogger(__name__)

PAGE_SIZE = 50
MAX_RECORD_FORM = 1_048_576  # a record's notes may be long (each field at most 128 KiB)
RecordId = Annotated[int, PathParam(ge=1, le=INTEGER_MAX)]
FILTERS = (*saved_searches.FILTERS, "page_no")


def _filter(request: Request) -> record_search.RecordFilter:
    get = request.query_params.get
    return record_search.RecordFilter(
        q=get("q", "")[:2000],
        collection=get("collection", "")[:500],
        frequency=get("frequency", "")[:100],
        status=get("status", ""),
        validation=get("validation", ""),
        curator=get("curator", "")[:200],
        theme=get("theme", "")[:200],
        keyword=get("keyword", "")[:200],
    )


def _ids(values: list[str]) -> list[int]:
    ids = []
    for value in values:
        try:
            ids.append(parse_int(value, "ids", minimum=1, maximum=INTEGER_MAX))
        except NumberError:
            raise HTTPException(400, f"ids: {value[:20]!r} is not a record id") from None
    if not ids:
        raise HTTPException(400, "no record chosen: tick the records to change")
    return ids


def _date(value: str) -> date | None:
    if not value.strip():
        return None
    try:
        return date.fromisoformat(value.strip())
    except ValueError:
        raise HTTPException(400, f"end_date: {value[:20]!r} is not a date (YYYY-MM-DD)") from None


def add_record_routes(app: FastAPI, forms: FormPages) -> None:
    """Add the /records pages to the curator app (its renderer of pages with forms, ``page``,
    which sets the CSRF token and ``can_edit``, and its read-only ``connect``)."""
    page, connect, engine_factory, csrf_key = forms

    def allowed(request: Request, form: dict[str, str], collections: list[str]) -> str:
        """The writer, when a curator in every collection the write touches (else 403)."""
        with connect() as conn:
            return actions.check_collection_write(request, form, csrf_key, conn, collections)

    def form_page(request: Request, name: str, status: int = 200, **context: Any) -> Response:
        with connect() as conn:
            can_edit = actions.may_edit(request, conn)
        if name == "record.html":
            values = context.get("values") or {}
            context["choices"] = load_mapping().choices(
                *(str(values.get(k, "") or "") for k in ("budget", "frequency", "depth"))
            )
        response = page(
            request, name, role=actions.role_of(request).label, columns=CSV_COLUMNS,
            can_edit=can_edit, **context,
        )  # fmt: skip
        response.status_code = status
        return response

    @app.get("/records", response_class=HTMLResponse)
    def records(request: Request, page_no: int = 1, done: str = "") -> Response:
        flt = _filter(request)
        page_no = min(max(page_no, 1), 1_000_000)
        with connect() as conn:
            rows, total = record_search.search_records(conn, flt, page_no, PAGE_SIZE)
            known = record_search.collections(conn)
            user = actions.user_of(request)
            mine = saved_searches.saved(conn, user) if user else []
        query = {k: v for k, v in vars(flt).items() if v}
        return form_page(
            request,
            "records.html",
            title="Selection records",
            p=Page(rows, total, page_no, PAGE_SIZE),
            f=flt,
            collections=known,
            export_url=f"{actions.root_path(request)}/records/export.csv?{urlencode(query)}",
            back="?" + urlencode(query),
            done=done[:2000],
            saved_searches=mine,
        )

    @app.post("/records/searches")
    async def save_search(request: Request) -> Response:
        """Save the list's search under a name (``op=delete``: forget the one named)."""
        form = await actions.read_form(request)
        user = actions.check_write(request, form, csrf_key, role=actions.Role.VIEWER)
        try:
            with engine_factory().begin() as conn:
                if form.get("op") == "delete":
                    saved_searches.delete(conn, user, form.get("name", ""))
                    query = ""
                else:
                    query = saved_searches.save(
                        conn, user, form.get("name", ""), form.get("back", "")
                    ).query
        except saved_searches.SavedSearchError as exc:
            raise HTTPException(400, str(exc)) from None
        return RedirectResponse(f"{actions.root_path(request)}/records?{query}", 303)

    @app.get("/records/choices")
    def choices(budget: str = "", frequency: str = "", depth: str = "") -> dict[str, Any]:
        """Each budget, frequency and depth and why it is refused with the other two as chosen
        (null: allowed): the save's own check (the selection mapping), for the form."""
        return load_mapping().choices(budget[:100], frequency[:100], depth[:100])

    @app.get("/records/export.csv")
    def export(request: Request) -> Response:
        with connect() as conn:
            text = record_search.export_csv(conn, _filter(request))
        return Response(
            text,
            media_type="text/csv; charset=utf-8",
            headers={"Content-Disposition": 'attachment; filename="selection-records.csv"'},
        )

    @app.get("/records/new", response_class=HTMLResponse)
    def new_record(request: Request) -> Response:
        return form_page(request, "record.html", title="New selection record", record=None,
                         values={"active": "yes", "ignore_robots": "no", "watched": "no"}, history=[], audit=[],
                         result=None)  # fmt: skip

    @app.post("/records/new")
    async def create_record(request: Request) -> Response:
        form = await actions.read_form(request, MAX_RECORD_FORM)
        user = allowed(request, form, [form.get("collection", "")])
        # in a thread: the URL check waits on the network, the api-server's loop must not
        result = await run_in_threadpool(editing.save_record, form, user, engine=engine_factory())
        if result.refused or result.record_id is None:
            return form_page(request, "record.html", 400, title="New selection record",
                             record=None, values=form, history=[], audit=[], result=result)  # fmt: skip
        return RedirectResponse(
            f"{actions.root_path(request)}/records/{result.record_id}?saved=1", 303
        )

    @app.post("/records/bulk")
    async def bulk(request: Request) -> Response:
        lists = await actions.read_form_lists(request)
        form = {k: v[0] for k, v in lists.items()}
        ids = _ids(lists.get("ids", []))
        with connect() as conn:
            touched = list(record_search.collections_of(conn, ids).values())
        moved_to = form.get("move_to" if form.get("op") == "move" else "collection", "")
        user = allowed(request, form, [*touched, *([moved_to] if moved_to.strip() else [])])
        try:
            if form.get("op") == "move":
                result = editing.move_records(
                    ids, form.get("move_to", ""), user, engine=engine_factory()
                )
            else:
                change = editing.BulkChange(
                    frequency=form.get("frequency", "").strip() or None,
                    collection=form.get("collection", "").strip() or None,
                    end_date=_date(form.get("end_date", "")),
                    deactivate=form.get("deactivate") == "yes",
                    curator=form.get("curator", "").strip() or None,
                )
                result = editing.bulk_edit(ids, change, user, engine=engine_factory())
        except editing.EditError as exc:
            raise HTTPException(400, str(exc)) from None
        # back to the search the records were ticked in (its filters only)
        search = [(k, v) for k, v in parse_qsl(form.get("back", "").lstrip("?")) if k in FILTERS]
        done = urlencode([*search, ("done", editing.bulk_detail(result))])
        return RedirectResponse(f"{actions.root_path(request)}/records?{done}", 303)

    @app.get("/records/{record_id}", response_class=HTMLResponse)
    def record(request: Request, record_id: RecordId, saved: str = "") -> Response:
        with connect() as conn:
            row = record_search.get_record(conn, record_id)
            if row is None:
                raise HTTPException(404, f"no selection record {record_id}")
            history = record_search.record_history(conn, record_id)
            audit = audit_entries(conn, target=f"record {record_id}", limit=50)
            qa = feedback.record_feedback(conn, record_id, row["seed_url"])
            # the QA pass's latest scores of the record's pages (its seed's host)
            seed_host = host_of(row["seed_url"])
            scores = [
                s for s in latest_scores(conn, [qa["domain"]]) if host_of(s["page"]) == seed_host
            ]
        return form_page(request, "record.html", title=f"Selection record {record_id}",
                         record=row, values=record_search.as_row(row), history=history, audit=audit,
                         result=None, saved=bool(saved), qa=qa, page_scores=scores)  # fmt: skip

    @app.post("/records/{record_id}")
    async def edit_record(request: Request, record_id: RecordId) -> Response:
        form = await actions.read_form(request, MAX_RECORD_FORM)
        with connect() as conn:
            was = record_search.collections_of(conn, [record_id])
        if record_id not in was:
            raise HTTPException(404, f"no selection record {record_id}")
        user = allowed(request, form, [was[record_id], form.get("collection", "")])
        try:
            result = await run_in_threadpool(
                editing.save_record, form, user, record_id, engine=engine_factory()
            )
        except editing.EditError as exc:
            raise HTTPException(404, str(exc)) from None
        if result.refused:
            with connect() as conn:
                row = record_search.get_record(conn, record_id)
                history = record_search.record_history(conn, record_id)
            return form_page(request, "record.html", 400, title=f"Selection record {record_id}",
                             record=row, values=form, history=history, audit=[], result=result)  # fmt: skip
        return RedirectResponse(f"{actions.root_path(request)}/records/{record_id}?saved=1", 303)
