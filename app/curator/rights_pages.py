"""The rights page: who has which role in which collection, and (administrators) giving and
taking roles.

Why here and through :mod:`harvest.rights`: the roles are that module's table, and a role is
given by the same function the CLI's ``harvestflow rights grant`` calls (audited); this module
only reads the form and checks that the writer is an administrator of the collection (or of
every collection, ``*``) through :func:`actions.check_collection_write`, the check every write
of the pages goes through.
"""

from __future__ import annotations

import logging
from urllib.parse import quote

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from app.curator import actions
from app.curator.form_pages import FormPages
from harvest import rights
from harvest.selection.record_search import collections

log = logging.getLogger(__name__)


def add_rights_routes(app: FastAPI, forms: FormPages) -> None:
    """``GET /rights`` and ``POST /rights`` (grant, or ``op=revoke``)."""
    page, connect, engine_factory, csrf_key = forms

    @app.get("/rights", response_class=HTMLResponse)
    def rights_page(request: Request, done: str = "") -> Response:
        with connect() as conn:
            given = rights.grants(conn)
            known = collections(conn)
        return page(request, "rights.html", title="Roles per collection", grants=given,
                    collections=known, roles=[r.label for r in rights.Role],
                    role=actions.role_of(request).label, done=done[:500])  # fmt: skip

    @app.post("/rights")
    async def change(request: Request) -> Response:
        form = await actions.read_form(request)
        collection = form.get("collection", "").strip()
        with engine_factory().begin() as conn:
            user = actions.check_collection_write(
                request, form, csrf_key, conn, [collection or rights.EVERY],
                role=rights.Role.ADMIN, what="give roles",
            )  # fmt: skip
            try:
                if form.get("op") == "revoke":
                    gone = rights.revoke(conn, collection, form.get("username", ""), user)
                    done = f"{gone.username} no longer has a role in {gone.collection}"
                else:
                    role = rights.Role.parse(form.get("role", ""))
                    made = rights.grant(conn, collection, form.get("username", ""), role, user)
                    done = f"{made.username} is a {made.role.label} in {made.collection}"
            except rights.RightsError as exc:
                raise HTTPException(400, str(exc)) from None
        return RedirectResponse(f"{actions.root_path(request)}/rights?done={quote(done)}", 303)
