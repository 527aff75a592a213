"""The curator pages' one kind of write: an operator's action on a running crawl job.

Why its own module: every other page only reads. A write must be a POST from a user the auth
dependency named (``request.state.user``) and allowed to edit (``request.state.can_edit``,
from Airflow's auth manager: see plugins/harvestflow_curator.py), and carry the page's CSRF
token: ``HMAC(key, session cookie + user)``, where the session cookie (``hf_csrf``, random,
HttpOnly, SameSite=Strict) is set by the job page and the key is kept under the data directory.
A page of another site can make a browser send the cookies, never read the token: a forged
post without it is refused (403). The action itself goes through harvest.control (the same as
the CLI), which records who asked in ``job_actions``.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from fastapi import HTTPException, Request

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


def can_edit(request: Request) -> bool:
    return bool(getattr(request.state, "can_edit", False)) and user_of(request) is not None


def csrf_token(key: bytes, session: str, user: str) -> str:
    return hmac.new(key, f"{session}\0{user}".encode(), hashlib.sha256).hexdigest()


def session_of(request: Request) -> tuple[str, bool]:
    """The CSRF session cookie's value, and whether it is new (to be set on the answer)."""
    found = request.cookies.get(CSRF_COOKIE)
    if found and 20 <= len(found) <= 100:
        return found, False
    return secrets.token_urlsafe(32), True


async def read_form(request: Request) -> dict[str, str]:
    """An urlencoded form (the first value of each field); too large a body is refused."""
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        raise HTTPException(413, "form too large")
    fields = parse_qs(body.decode("utf-8", errors="replace"), keep_blank_values=True)
    return {k: v[0] for k, v in fields.items()}


def check_write(request: Request, form: dict[str, str], key: bytes) -> str:
    """The user allowed to write, after the CSRF check (HTTPException 403 otherwise)."""
    user = user_of(request)
    if user is None:
        raise HTTPException(403, "writes need an authenticated user")
    session = request.cookies.get(CSRF_COOKIE, "")
    given = form.get(CSRF_FIELD, "")
    if not session or not given or not hmac.compare_digest(given, csrf_token(key, session, user)):
        log.warning("curator: write refused for %s: missing or wrong CSRF token", user)
        raise HTTPException(403, "missing or wrong CSRF token (reload the page)")
    if not can_edit(request):
        raise HTTPException(403, f"{user} may not control crawls (needs DAG edit permission)")
    return user


def _int(form: dict[str, str], name: str) -> int | None:
    raw = form.get(name, "").strip()
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError:
        raise HTTPException(400, f"{name}: {raw[:40]!r} is not an integer") from None


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
        given = {k: _int(form, k) for k in ("max_objects", "max_bytes", "max_time_s")}
        return {k: v for k, v in given.items() if v is not None}
    return {}
