"""The harvest definitions' forms (as NetarchiveSuite's GUI): create a selective or one-off
definition with its seeds, template, budget and schedule, edit it, deactivate and reactivate it,
and see its versions.

Why only routes here: harvest.office owns the definitions, checks a form field by field
(:mod:`harvest.office.definition_form`) and says who may write (:mod:`harvest.office.office_rights`:
a curator in the definition's collections, a crawl engineer for a cron schedule); this module
reads the form, checks the writer through :func:`actions.check_needed` (403 naming the
collection) and renders the answer. A refused form comes back with the values and the reason.
"""

from __future__ import annotations

import logging
from typing import Annotated

from fastapi import FastAPI, HTTPException, Request
from fastapi import Path as PathParam
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from app.curator import actions
from app.curator.form_pages import FormPages
from harvest.office.definition_edits import (
    definition_history,
    form_values,
    read_definition,
    save_definition,
    set_active,
)
from harvest.office.definition_form import (
    SCHEDULE_KINDS,
    UNITS,
    WEEKDAYS,
    OfficeError,
)
from harvest.office.office_rights import definition_switch, definition_write
from harvest.selection.record_search import collections
from harvest.templates import template_names
from harvestflow.formats.integers import INTEGER_MAX

log = logging.getLogger(__name__)

MAX_DEFINITION_FORM = 1_048_576  # a seed list may be long
DefinitionId = Annotated[int, PathParam(ge=1, le=INTEGER_MAX)]
NEW = {"schedule": "every", "every": "1", "unit": "day", "template": "default_selective",
       "max_objects": "-1", "max_bytes": "1000000000"}  # fmt: skip


def add_definition_routes(app: FastAPI, forms: FormPages) -> None:
    """Add /definitions/new and /definitions/{id} (with their POSTs) to the curator app."""
    page, connect, engine_factory, csrf_key = forms

    def form_page(
        request: Request, harvest_id: int | None, values: dict[str, str], status: int = 200,
        error: str = "",
    ) -> Response:  # fmt: skip
        with connect() as conn:
            found = read_definition(conn, harvest_id) if harvest_id else None
            if harvest_id and found is None:
                raise HTTPException(404, f"no harvest definition {harvest_id}")
            history = definition_history(conn, harvest_id) if harvest_id else []
            templates = template_names(conn)
            known = collections(conn)
            if harvest_id:  # the forms of those who may change it
                can_edit = actions.allows(request, conn, definition_switch(conn, harvest_id))
            else:
                can_edit = actions.may_edit(request, conn)
        title = f"Definition {harvest_id}: {found['name']}" if found else "New harvest definition"
        response = page(
            request, "definition.html", title=title, d=found, values=values, history=history,
            templates=templates, kinds=SCHEDULE_KINDS, units=list(UNITS), weekdays=WEEKDAYS,
            error=error, saved=request.query_params.get("saved") == "1",
            role=actions.role_of(request).label, collections=known, can_edit=can_edit,
        )  # fmt: skip
        response.status_code = status
        return response

    @app.get("/definitions/new", response_class=HTMLResponse)
    def new_definition(request: Request) -> Response:
        return form_page(request, None, dict(NEW))

    @app.post("/definitions/new")
    async def create_definition(request: Request) -> Response:
        form = await actions.read_form(request, MAX_DEFINITION_FORM)
        with connect() as conn:
            user = actions.check_needed(
                request, form, csrf_key, conn, definition_write(conn, None, form)
            )
        try:
            hid = save_definition(_fields(form), user, engine=engine_factory())
        except OfficeError as exc:
            return form_page(request, None, form, 400, str(exc))
        return RedirectResponse(f"{actions.root_path(request)}/definitions/{hid}?saved=1", 303)

    @app.get("/definitions/{harvest_id}", response_class=HTMLResponse)
    def definition(request: Request, harvest_id: DefinitionId) -> Response:
        with connect() as conn:
            found = read_definition(conn, harvest_id)
        if found is None:
            raise HTTPException(404, f"no harvest definition {harvest_id}")
        return form_page(request, harvest_id, form_values(found))

    @app.post("/definitions/{harvest_id}")
    async def edit_definition(request: Request, harvest_id: DefinitionId) -> Response:
        form = await actions.read_form(request, MAX_DEFINITION_FORM)
        with connect() as conn:
            user = actions.check_needed(
                request, form, csrf_key, conn, definition_write(conn, harvest_id, form)
            )
        try:
            save_definition(_fields(form), user, harvest_id, engine=engine_factory())
        except OfficeError as exc:
            if str(exc).startswith(f"no harvest definition {harvest_id}"):
                raise HTTPException(404, str(exc)) from None
            return form_page(request, harvest_id, form, 400, str(exc))
        root = actions.root_path(request)
        return RedirectResponse(f"{root}/definitions/{harvest_id}?saved=1", 303)

    @app.post("/definitions/{harvest_id}/active")
    async def switch_definition(request: Request, harvest_id: DefinitionId) -> Response:
        """Deactivate (``active=no``, with a reason) or reactivate (``active=yes``)."""
        form = await actions.read_form(request)
        with connect() as conn:
            user = actions.check_needed(
                request, form, csrf_key, conn, definition_switch(conn, harvest_id)
            )
        if form.get("active") not in ("yes", "no"):
            raise HTTPException(400, "active: yes (reactivate) or no (deactivate)")
        try:
            set_active(harvest_id, form["active"] == "yes", user, form.get("reason", ""),
                       engine=engine_factory())  # fmt: skip
        except OfficeError as exc:
            if str(exc).startswith(f"no harvest definition {harvest_id}"):
                raise HTTPException(404, str(exc)) from None
            with connect() as conn:
                found = read_definition(conn, harvest_id)
            assert found is not None
            return form_page(request, harvest_id, form_values(found), 400, str(exc))
        root = actions.root_path(request)
        return RedirectResponse(f"{root}/definitions/{harvest_id}?saved=1", 303)


def _fields(form: dict[str, str]) -> dict[str, str]:
    """The definition's fields of a posted form (the CSRF token is the page's)."""
    return {k: v for k, v in form.items() if k != actions.CSRF_FIELD}
