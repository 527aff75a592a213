"""The curator pages' writes: who may make them, and the CSRF check every form goes through.

Why one place: every write (an operator's action on a running crawl, a selection record saved,
a bulk edit) must be a POST from a user the auth dependency named (``request.state.user``)
whose role (``request.state.role``, a :class:`Role` the dependency took from Airflow's auth
manager: see plugins/harvestflow_curator.py) is at least the one the write needs, and carry the
page's CSRF token: ``HMAC(key, session cookie + user)``, where the session cookie (``hf_csrf``,
random, HttpOnly, SameSite=Strict) is set by the pages with forms and the key is kept under the
data directory. A page of another site can make a browser send the cookies, never read the
token: a forged post without it is refused (403). :func:`check_write` does both checks.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from fastapi import HTTPException, Request, Response
from sqlalchemy.engine import Connection

from harvest import rights
from harvest.office.office_rights import Needed
from harvestflow.formats.integers import BIGINT_MAX, NumberError, parse_int

log = logging.getLogger(__name__)

CSRF_COOKIE = "hf_csrf"
CSRF_FIELD = "csrf_token"
MAX_FORM_BYTES = 16_384


def load_key(data_dir: Path) -> bytes:
    """The app's CSRF key (``<data_dir>/curator/csrf.key``, made once, mode 0600): the same
    for every worker of the API server, so a token from one is good at another."""
    path = Path(data_dir) / "curator" / "csrf.key"
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_bytes()
    with os.fdopen(fd, "wb") as fh:
        fh.write(secrets.token_bytes(32))
    return path.read_bytes()


def user_of(request: Request) -> str | None:
    """The user the auth dependency named (None: no authentication configured)."""
    user = getattr(request.state, "user", None)
    return str(user) if user else None


# one vocabulary of roles, the rights' (harvest.rights): the plugin takes the global one from
# Airflow's auth manager (a crawl engineer may edit pools: the simple auth manager's OP, FAB's
# Op; a curator may edit DAGs: USER, FAB's User; an administrator is ADMIN, FAB's Admin; a viewer
# may only see the pages), and a collection may give a user another one (rights.role_in).
Role = rights.Role


def role_of(request: Request) -> Role:
    """The user's role as the auth dependency set it (viewer when unnamed or unset)."""
    role = getattr(request.state, "role", None)
    if user_of(request) is None or role is None:
        return Role.VIEWER
    return Role(int(role))


def has_role(request: Request, role: Role) -> bool:
    return user_of(request) is not None and role_of(request) >= role


def csrf_token(key: bytes, session: str, user: str) -> str:
    return hmac.new(key, f"{session}\0{user}".encode(), hashlib.sha256).hexdigest()


def session_of(request: Request) -> tuple[str, bool]:
    """The CSRF session cookie's value, and whether it is new (to be set on the answer)."""
    found = request.cookies.get(CSRF_COOKIE)
    if found and 20 <= len(found) <= 100:
        return found, False
    return secrets.token_urlsafe(32), True


async def read_form_lists(
    request: Request, max_bytes: int = MAX_FORM_BYTES
) -> dict[str, list[str]]:
    """An urlencoded form, every value of each field; too large a body is refused (413)."""
    body = await request.body()
    if len(body) > max_bytes:
        raise HTTPException(413, "form too large")
    return parse_qs(body.decode("utf-8", errors="replace"), keep_blank_values=True)


async def read_form(request: Request, max_bytes: int = MAX_FORM_BYTES) -> dict[str, str]:
    """An urlencoded form (the first value of each field); too large a body is refused."""
    fields = await read_form_lists(request, max_bytes)
    return {k: v[0] for k, v in fields.items()}


def check_write(request: Request, form: dict[str, str], key: bytes, *, role: Role) -> str:
    """The user allowed to write, after the CSRF check and the check that their role is at
    least ``role`` (HTTPException 403 otherwise)."""
    user = user_of(request)
    if user is None:
        raise HTTPException(403, "writes need an authenticated user")
    session = request.cookies.get(CSRF_COOKIE, "")
    given = form.get(CSRF_FIELD, "")
    if not session or not given or not hmac.compare_digest(given, csrf_token(key, session, user)):
        log.warning("curator: write refused for %s: missing or wrong CSRF token", user)
        raise HTTPException(403, "missing or wrong CSRF token (reload the page)")
    if role_of(request) < role:
        log.warning("curator: write refused for %s: needs role %s", user, role.label)
        raise HTTPException(
            403, f"{user} is a {role_of(request).label}: this needs the {role.label} role"
        )
    return user


def check_collection_write(
    request: Request,
    form: dict[str, str],
    key: bytes,
    conn: Connection,
    collections: Iterable[str],
    *,
    role: Role = Role.CURATOR,
    what: str = "edit records",
) -> str:
    """The user allowed to write in every one of ``collections``: the CSRF check of
    :func:`check_write`, then their role in each collection (:func:`harvest.rights.check`,
    the one the CLI calls too: a collection's own users, or the global role where a
    collection gives nobody a role); 403 naming the collection otherwise."""
    user = check_write(request, form, key, role=Role.VIEWER)
    try:
        return rights.check(conn, user, collections, role, role_of(request), what=what)
    except rights.Forbidden as exc:
        raise HTTPException(403, str(exc)) from None
    except rights.RightsError as exc:  # a form's collection no collection can be named
        raise HTTPException(400, str(exc)) from None


def check_needed(
    request: Request, form: dict[str, str], key: bytes, conn: Connection, needed: Needed
) -> str:
    """The user allowed to make a back-office write (:mod:`harvest.office.office_rights`: its
    collections, role and name): the CSRF check of :func:`check_write`, then their roles there
    (403 naming the collection; 400 for a collection no collection can be named)."""
    user = check_write(request, form, key, role=Role.VIEWER)
    try:
        return needed.check(conn, user, role_of(request))
    except rights.Forbidden as exc:
        raise HTTPException(403, str(exc)) from None
    except rights.RightsError as exc:
        raise HTTPException(400, str(exc)) from None


def allows(request: Request, conn: Connection, needed: Needed) -> bool:
    """Whether the user may make a write needing ``needed`` (the page shows its form)."""
    return needed.allows(conn, user_of(request), role_of(request))


def may_edit(request: Request, conn: Connection) -> bool:
    """Whether the page shows the curator's forms: a curator globally, or in a collection."""
    user = user_of(request)
    if user is None:
        return False
    return has_role(request, Role.CURATOR) or any(
        g.role >= Role.CURATOR for g in rights.grants(conn, username=user)
    )


def form_token(request: Request, key: bytes) -> tuple[str, str, bool]:
    """(session cookie value, CSRF token for the page's forms, whether the cookie is new)."""
    session, new = session_of(request)
    user = user_of(request)
    return session, (csrf_token(key, session, user) if user else ""), new


def root_path(request: Request) -> str:
    """Where the curator app is mounted ('' at the root; no trailing slash): links and
    redirects are made under it."""
    return str(request.scope.get("root_path", "")).rstrip("/")


def set_session(request: Request, response: Response, session: str, new: bool) -> None:
    """Set the CSRF session cookie on a page with forms (when it is new)."""
    if not new or user_of(request) is None:
        return
    response.set_cookie(
        CSRF_COOKIE,
        session,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path=root_path(request) + "/",
    )


def form_int(
    form: dict[str, str],
    name: str,
    *,
    grouped: bool = False,
    minimum: int = -BIGINT_MAX,
    maximum: int = BIGINT_MAX,
) -> int | None:
    """A form's integer field (None when empty; 400 when not ASCII digits or outside
    ``minimum``..``maximum``, by default the bigint columns'); ``grouped``: digit group
    separators (``1,000,000``, ``1_000_000``) allowed."""
    raw = form.get(name, "").strip()
    if grouped:
        raw = raw.replace(",", "").replace("_", "")
    if not raw:
        return None
    try:
        return parse_int(raw, name, minimum=minimum, maximum=maximum)
    except NumberError as exc:
        raise HTTPException(400, str(exc)) from None


def action_arguments(action: str, form: dict[str, str]) -> dict[str, Any]:
    """The action's arguments from the job page's forms."""
    if action == "filter":
        args: dict[str, Any] = {
            "kind": form.get("kind", "regex"),
            "pattern": form.get("pattern", "").strip(),
        }
        for name in ("name", "save", "domain"):
            value = form.get(name, "").strip()
            if value:
                args[name] = value
        return args
    if action == "limits":
        given = {k: form_int(form, k) for k in ("max_objects", "max_bytes", "max_time_s")}
        return {k: v for k, v in given.items() if v is not None}
    return {}
