"""The gateway's answers that are pages of our own, in the reader's language.

Why apart from :mod:`access.gateway`: the gateway decides and forwards; these methods only
render (:mod:`access.pages`, strings from :mod:`access.i18n`) the home page, the URL box's
answer, the tours' thumbnails, the reading room's refusal and the error pages. Mixed into the
gateway's request handler, they use its ``gateway``, ``_send`` and ``_redirect``.
"""

from __future__ import annotations

import http.client
import logging
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import parse_qs, urlencode, urlsplit

from access import i18n, lookup, pages
from access.config import INTERNAL_HOST, AccessConfig
from access.home import HomeFile
from access.lookup import QUERY_TIMEOUT_S
from access.rules import Rule

log = logging.getLogger(__name__)


class Served(Protocol):
    """What these pages need of the gateway (:class:`access.gateway.Gateway`)."""

    cfg: AccessConfig
    home: HomeFile
    search_port: int | None

    def rules(self) -> list[Rule]: ...


class ReaderPages:
    """Our pages, for the gateway's request handler (a BaseHTTPRequestHandler)."""

    gateway: Served
    headers: Any
    path: str

    if TYPE_CHECKING:  # the handler's own

        def _send(self, status: int, ctype: str, body: bytes, cache: str = "no-store") -> None: ...

        def _redirect(self, location: str, status: int = 301, cookie: str = "") -> None: ...

    def _home(self) -> None:
        """``/``: the readers' home page, as last published (:mod:`access.home`)."""
        gw = self.gateway
        body = pages.home(gw.home.content(), self._lang(), search=gw.search_port is not None)
        self._send(200, "text/html; charset=utf-8", body.encode())

    def _lang(self) -> str:
        """The reader's language for our own pages (the browser's ``Accept-Language``)."""
        return i18n.language(self.headers.get("Accept-Language"))

    def _refuse(self, reason: str, next_path: str) -> None:
        """The reading room's refusal page; with a link to sign in and come back to
        ``next_path`` when signing in may open it."""
        cfg = self.gateway.cfg
        login = ""
        if cfg.reading_room_login and cfg.signin_url:
            login = cfg.signin_url + "?" + urlencode({"next": next_path})
        lang = self._lang()
        t = i18n.texts(lang)
        page = pages.message(
            lang, t["restricted_title"], t["restricted"], detail=reason, sign_in=login
        )
        self._send(403, "text/html; charset=utf-8", page.encode())

    def _restricted_capture(self, url: str) -> None:
        """pywb refused the capture of ``url`` by an access rule (451): our page, in the
        reader's language and the reader pages' style (the rule stays in the refusal log)."""
        lang = self._lang()
        t = i18n.texts(lang)
        text = t["capture_restricted"].format(url=url or "?")
        page = pages.message(lang, t["restricted_title"], text, lookup=url or None)
        self._send(451, "text/html; charset=utf-8", page.encode())

    def _lookup(self) -> None:
        """``/_lookup?url=…``: the home page's URL box (:func:`access.lookup.answer`)."""
        query = parse_qs(urlsplit(self.path).query)
        typed = (query.get("url") or [""])[0]
        status, where, page = lookup.answer(
            typed, self._lang(), (INTERNAL_HOST, self.gateway.cfg.pywb_port), QUERY_TIMEOUT_S
        )
        if where:
            self._redirect(where, status)
        else:
            self._send(status, "text/html; charset=utf-8", page.encode())

    def _thumbnail(self) -> None:
        """``/_thumb/<coll>/<timestamp>/<url>``: the capture's screenshot record (a tour's
        thumbnail), or 404; never for a URL an access rule restricts."""
        gw = self.gateway
        cfg = gw.cfg
        try:
            shot = lookup.screenshot(
                INTERNAL_HOST, cfg.pywb_port, self.path, gw.rules(), QUERY_TIMEOUT_S
            )
        except (OSError, http.client.HTTPException) as exc:
            log.info("gateway: thumbnail %s: %s", self.path, exc)
            shot = None
        if shot is None:
            self._send(404, "text/plain; charset=utf-8", b"no screenshot of this capture\n")
            return
        self._send(200, "image/png", shot, cache="max-age=3600")  # a capture never changes

    def _page(self, status: int, title: str, message: str) -> None:
        """Our error page (never pywb's traceback), saying what went wrong: ``title`` and
        ``message`` are keys of the catalogue (:mod:`access.i18n`), or ``message`` the
        gateway's own words (a limit, a query pywb cannot read)."""
        lang = self._lang()
        t = i18n.texts(lang)
        page = pages.message(lang, t[title], t.get(message, message))
        self._send(status, "text/html; charset=utf-8", page.encode())
