"""``GET /reading-room?next=…``: a signed-in user's way into the reading room from a browser.

Why a page of the curator pages: they sit behind Airflow's login, and replay is on a site of its
own where Airflow's cookie is never sent, so the gateway cannot see who is signed in. Here the
user is known: the page issues a one-minute, single-use, reader-only pass
(:mod:`access.readerpass`, signed with the key the gateway shares) and sends the browser to
``<replay site>/_signin``, which exchanges it for the gateway's own reader session and goes on to
``next`` (a path on the replay site only). The pass opens consultation, nothing of Airflow's;
any user allowed to see the curator pages (viewer and up) may read the archive.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from urllib.parse import urlencode

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import RedirectResponse

from access import readerpass
from access.config import AccessConfig
from app.curator import actions

log = logging.getLogger(__name__)


def add_routes(app: FastAPI, replay: str, key: Callable[[], bytes] | None = None) -> None:
    """The sign-in route on ``app``; ``replay`` is the replay site's URL (ending in ``/``),
    ``key`` gives the pass key (default: the gateway's, under the settings' access directory,
    read on first use: the pages may start before the access files exist)."""
    loaded: list[bytes] = []

    def pass_key() -> bytes:
        if key is not None:
            return key()
        if not loaded:
            loaded.append(readerpass.load_key(AccessConfig.from_settings().root))
        return loaded[0]

    @app.get("/reading-room")
    def reading_room(request: Request, next: str = "/") -> RedirectResponse:
        user = actions.user_of(request)
        if user is None:
            raise HTTPException(403, "signing in to the reading room needs a signed-in user")
        try:
            target = readerpass.safe_next(next)
        except readerpass.PassError as exc:
            raise HTTPException(400, str(exc)) from None
        token = readerpass.sign(pass_key(), readerpass.PASS, user, readerpass.PASS_TTL_S)
        log.info("reading room: pass issued to %s", user)
        query = urlencode({"pass": token, "next": target})
        return RedirectResponse(
            f"{replay.rstrip('/')}{readerpass.SIGNIN}?{query}",
            status_code=303,
            # the pass is in the address: not cached, not sent on as a Referer
            headers={"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"},
        )
