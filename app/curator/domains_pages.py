"""The domain page's forms (as NetarchiveSuite's domain page): change or add a configuration
(template, budgets, seed list, default), make the domain an alias of another, renew or remove
its alias.

Why only routes here: harvest.office.domain_edits checks and writes (and audits) each change;
this module reads the form, checks the writer (a crawl engineer, globally or in every collection:
:data:`harvest.office.office_rights.DOMAINS`) through :func:`actions.check_needed` and sends
them back to the domain's page, with the reason when the change is refused.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlencode

import sqlalchemy as sa
from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import RedirectResponse, Response

from app.curator import actions
from harvest.office.definition_form import OfficeError
from harvest.office.domain_edits import (
    alias_expiry,
    remove_alias,
    save_configuration,
    set_alias,
)
from harvest.office.office_rights import DOMAINS
from harvest.templates import template_names
from harvestflow.audit import audit_entries

log = logging.getLogger(__name__)

MAX_CONFIG_FORM = 1_048_576  # a seed list may be long


def domain_context(request: Request, conn: sa.Connection, domain: dict[str, Any]) -> dict[str, Any]:
    """What the domain page's forms need beside the domain: whether the user may change it, the
    templates to choose from, its alias's expiry, and the changes made to it (newest first)."""
    return {
        "can_configure": actions.allows(request, conn, DOMAINS),
        "templates": template_names(conn),
        "alias_expires": alias_expiry(domain.get("lastaliasupdate")) if domain["alias"] else None,
        "changes": audit_entries(conn, target=f"domain {domain['name']}", limit=50),
    }


def add_domain_routes(
    app: FastAPI, *, engine_factory: Callable[[], sa.Engine], csrf_key: bytes
) -> None:
    """Add the POSTs of /domains/{name}/configurations and /domains/{name}/alias."""

    def back(request: Request, name: str, anchor: str, **query: str) -> Response:
        url = f"{actions.root_path(request)}/domains/{quote(name, safe='')}"
        if query:
            url += "?" + urlencode(query)
        return RedirectResponse(f"{url}#{anchor}", 303)

    @app.post("/domains/{name}/configurations")
    async def configure(request: Request, name: str) -> Response:
        form = await actions.read_form(request, MAX_CONFIG_FORM)
        with engine_factory().connect() as conn:
            user = actions.check_needed(request, form, csrf_key, conn, DOMAINS)
        values = {k: v for k, v in form.items() if k != actions.CSRF_FIELD}
        try:
            save_configuration(name, values, user, engine=engine_factory())
        except OfficeError as exc:
            if str(exc).startswith("no domain "):
                raise HTTPException(404, str(exc)) from None
            return back(request, name, "configurations", refused=str(exc)[:2000])
        return back(request, name, "configurations", saved="configuration")

    @app.post("/domains/{name}/alias")
    async def alias(request: Request, name: str) -> Response:
        """``op=set`` (with ``alias_of``; on the same domain it renews the alias) or
        ``op=remove``."""
        form = await actions.read_form(request)
        with engine_factory().connect() as conn:
            user = actions.check_needed(request, form, csrf_key, conn, DOMAINS)
        op = form.get("op", "")
        try:
            if op == "set":
                set_alias(name, form.get("alias_of", ""), user, engine=engine_factory())
            elif op == "remove":
                remove_alias(name, user, engine=engine_factory())
            else:
                raise HTTPException(400, "op: set or remove")
        except OfficeError as exc:
            if str(exc) == f"no domain {name.strip().lower()!r} in the harvest database":
                raise HTTPException(404, str(exc)) from None
            return back(request, name, "alias", refused=str(exc)[:2000])
        return back(request, name, "alias", saved="alias")
