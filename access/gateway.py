"""The access gateway: the replay service's one public address, in front of pywb.

Why a gateway of ours: pywb has no notion of a reading room (a client's address or login) and
logs a refusal as a bare status code. This proxy lets a request through or refuses it (reading
room, sign-in passes and reader sessions), serves the readers' own pages and the search page,
forwards the rest unchanged to pywb, serves readers web captures only (never a crawl's metadata
records), logs every refusal with the access rule that decided, and records the URLs a job's
view could not serve; every request is size- and time-limited (:mod:`access.gateway_limits`).
"""

from __future__ import annotations

import http.client
import ipaddress
import logging
import queue
import re
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from functools import cached_property
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from access import cdxaudit, home, lookup, readerpass, readerquery
from access import missing as missing_urls
from access.config import INTERNAL_HOST, AccessConfig
from access.definitions import collections_root
from access.gateway_limits import CHUNK, RequestLimits
from access.gateway_pages import ReaderPages
from access.readerlogin import LoginChecker
from access.rules import OPEN, Rule, deciding, opens
from harvestflow.formats.fields import tsv_field
from harvestflow.formats.surt import surt

log = logging.getLogger(__name__)

_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "date",  # ours are sent by send_response
    "server",
    cdxaudit.HEADER.lower(),  # pywb's ACL user: only the gateway's own audit names one
}
# /<coll>/<timestamp><modifier>/<url> (and the calendar /<coll>/*/<url>)
_REPLAY = re.compile(r"^/([A-Za-z0-9][A-Za-z0-9_.-]*)/(\d{0,14})(?:[a-z]{2}_)?/(.+)$")
_CDX_QUERY = re.compile(r"^/([A-Za-z0-9][A-Za-z0-9_.-]*)/cdx\?(.+)$")
_PUBLIC = re.compile(r"^/(?:$|static/|_health$|favicon\.ico$)")
SEARCH = "/search"  # the search page's path (collections: "all", "harvest-<id>": none shadowed)
SEARCH_HOST = "127.0.0.1"  # its server listens on loopback only: readers come through us
_QUERY_TIMEOUT_S = lookup.QUERY_TIMEOUT_S
_REPLAY_TIMEOUT_S = 300  # pywb's answer to a replay (a big record streams from S3), between reads
_AUDITS = 2  # URL-search answers audited at once (cdxaudit: two more queries each)
_AUDIT_BACKLOG = 1000  # answers waiting for their audit; beyond, one is logged as not checked
_ORIGINAL = re.compile(r'<([^>]*)>\s*;\s*rel="?original"?', re.I)
_WEB = ("http://", "https://")


class Gateway:
    """Decides, forwards and logs; :meth:`server` gives the HTTP server to run in a thread."""

    def __init__(
        self,
        cfg: AccessConfig,
        rules: Callable[[], list[Rule]],
        login: Callable[[str], bool] | None = None,
        search_port: int | None = None,
        missing: Callable[[missing_urls.Miss], object] | None = None,
    ) -> None:
        self.cfg = cfg
        self.missing = missing  # records a job view's not-found answers (None: not recorded)
        self.rules = rules
        self.login = login or LoginChecker(cfg.login_check_url)
        self.search_port = search_port  # the search page's server (None: not served)
        self._log_lock = threading.Lock()
        self._audit_queue: queue.Queue[tuple[str, str, str]] = queue.Queue(_AUDIT_BACKLOG)
        self._auditors: list[threading.Thread] = []
        self.used_passes = readerpass.UsedNonces()
        self.home = home.HomeFile(cfg)  # the home page's content, as last published

    @cached_property
    def pass_key(self) -> bytes:
        """The key of sign-in passes and reader sessions (shared with the curator pages)."""
        return readerpass.load_key(self.cfg.root)

    def reader_session(self, headers: Any) -> readerpass.Claims | None:
        """The reader session the request's cookie holds, if signed by us and not expired."""
        value = readerpass.cookie_value(headers.get("Cookie"))
        if not value:
            return None
        try:
            return readerpass.verify(self.pass_key, readerpass.SESSION, value)
        except readerpass.PassError:
            return None

    def refusal(self, client: str, path: str, headers: Any) -> str | None:
        """Why this request may not be served (reading room), or None."""
        if not self.cfg.reading_room:
            return None
        if _PUBLIC.match(path) and ".." not in path and "%2e" not in path.lower():
            return None
        try:
            addr = ipaddress.ip_address(client)
        except ValueError:
            addr = None
        if addr is not None and any(addr in net for net in self.cfg.reading_room_ranges):
            return None
        if self.cfg.reading_room_login:
            token = _token(headers)
            if token and self.login(token):
                return None
            if self.reader_session(headers) is not None:
                return None
        if self.opened(path) is not None:
            return None
        return f"reading room: address {client} is outside the reading room and not signed in"

    def opened(self, path: str) -> Rule | None:
        """The ``open`` rule (a granted licence's: :mod:`access.licences`) that opens this
        replay of one capture outside the reading room, or None. Replay only: the calendar and
        URL search (CDX API) list other captures too, and stay the reading room's."""
        match = _REPLAY.match(path.split("?", 1)[0])
        if not match or match.group(2) == "" or match.group(1) in ("static", "search"):
            return None
        url = unquote(match.group(3))
        if not url.lower().startswith(_WEB):
            return None
        try:
            return opens(self.rules(), surt(url))
        except Exception:  # a URL we cannot key is no rule's
            return None

    def rule_refusal(self, status: int, path: str) -> str | None:
        """The access rule behind pywb's refusal of a capture (451 block; 404 exclude)."""
        if status not in (451, 404):
            return None
        url = replayed_url(path)
        if not url:
            return None
        try:
            key = surt(url if "://" in url else "http://" + url)
        except Exception:  # a URL we cannot key is no rule's
            return None
        rule = deciding(self.rules(), key)
        if rule is None or rule.policy in ("allow", OPEN):
            return None
        if status == 404 and rule.policy != "exclude":
            return None
        return f"access {rule.describe()}"

    def not_found(self, status: int, headers: Any, path: str) -> None:
        """Hand pywb's not-found answer in a job's view to ``missing`` (never raises: the
        reader's answer is sent already, and a lost record must not break replay)."""
        if self.missing is None or status != 404 or headers.get("Memento-Datetime"):
            return
        miss = missing_urls.parse(path)
        if miss is None or not self._has_view(miss.job_id):
            return  # not a job view's capture, or a view not served yet (nothing indexed)
        try:
            self.missing(miss)
        except Exception:
            log.exception("missing URL of job %s not recorded: %s", miss.job_id, miss.url)

    def _has_view(self, job_id: int) -> bool:
        coll = missing_urls.job_collection(job_id)
        return (collections_root(self.cfg) / coll / "indexes").is_dir()

    def queue_audit(self, client: str, method: str, path: str) -> None:
        """Have this URL-search answer audited (:meth:`audit_cdx`) by one of :data:`_AUDITS`
        threads, in turn: readers' queries never start more than that many audits at once."""
        with self._log_lock:
            if not self._auditors:
                for n in range(_AUDITS):
                    worker = threading.Thread(target=self._audit_loop, name=f"cdx-audit-{n}")
                    worker.daemon = True
                    worker.start()
                    self._auditors.append(worker)
        try:
            self._audit_queue.put_nowait((client, method, path))
        except queue.Full:
            log.warning("URL search %s: excluded captures not checked (backlog full)", path)

    def _audit_loop(self) -> None:
        while True:
            client, method, path = self._audit_queue.get()
            try:
                self.audit_cdx(client, method, path)
            except Exception:  # one audit's failure must not end the auditing
                log.exception("URL search %s: audit failed", path)

    def audit_cdx(self, client: str, method: str, path: str) -> None:
        """Log each capture an ``exclude`` rule left out of this URL-search answer, with the
        rule (:mod:`access.cdxaudit`; run after the answer was sent)."""
        match = _CDX_QUERY.match(path)
        if not match:
            return
        try:
            left_out = cdxaudit.excluded(self.cfg, match.group(1), match.group(2), self.rules())
        except (OSError, ValueError, http.client.HTTPException) as exc:
            log.warning("URL search %s: cannot check for excluded captures (%s)", path, exc)
            return
        for cap, rule in left_out:
            why = f"access {rule.describe()}" if rule else "an access rule (not found)"
            capture = f"{cap.get('urlkey')} {cap.get('timestamp')} {cap.get('url')}"
            self.record(client, method, path, 200, f"excluded from the answer: {capture}: {why}")

    def record(self, client: str, method: str, path: str, status: int, reason: str) -> None:
        when = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        line = "\t".join(
            [when, client, str(status), tsv_field(f"{method} {path}"), tsv_field(reason)]
        )
        with self._log_lock:
            self.cfg.log_dir.mkdir(parents=True, exist_ok=True)
            with open(self.cfg.refused_log, "a", encoding="utf-8") as out:
                out.write(line + "\n")
        log.info("refused %s %s from %s: %s", method, path, client, reason)

    def server(self) -> ThreadingHTTPServer:
        handler = type(
            "GatewayHandler", (_Handler,), {"gateway": self, "timeout": self.cfg.client_timeout_s}
        )
        srv = ThreadingHTTPServer((self.cfg.host, self.cfg.port), handler)
        srv.daemon_threads = True
        return srv


def replayed_url(path: str) -> str | None:
    """The archived URL a replay path asks for (``/<coll>/<timestamp><mod>/<url>``), or None."""
    match = _REPLAY.match(path.split("?", 1)[0])
    return unquote(match.group(3)) if match else None


def _token(headers: Any) -> str | None:
    auth = headers.get("Authorization") or ""
    if auth.lower().startswith("bearer "):
        return auth[7:].strip() or None
    cookie = SimpleCookie()
    try:
        cookie.load(headers.get("Cookie") or "")
    except Exception:  # a malformed cookie header carries no login
        return None
    morsel = cookie.get("_token")
    return morsel.value if morsel and morsel.value else None


class _Handler(RequestLimits, ReaderPages, BaseHTTPRequestHandler):
    gateway: Gateway
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # pywb logs the requests
        return

    def log_error(self, format: str, *args: Any) -> None:  # a timed-out or garbled request
        log.info("gateway: %s: " + format, self.client_address[0], *args)

    def _handle(self) -> None:
        gw = self.gateway
        client = self.client_address[0]
        if self._body_refused():
            return
        self.connection.settimeout(gw.cfg.client_timeout_s)  # the reply: each write
        if self.path == "/_health":
            self._send(200, "text/plain", b"ok\n")
            return
        if gw.cfg.on_curator_site(self.headers.get("Host")):  # replay only on its own site
            self._redirect(gw.cfg.url.rstrip("/") + self.path, 307)
            return
        where = self.path.split("?", 1)[0]
        if where == readerpass.SIGNIN:
            self._sign_in(client)
            return
        if where == readerpass.SIGNOUT:
            self._sign_out()
            return
        reason = gw.refusal(client, self.path, self.headers)
        if reason:
            gw.record(client, self.command, self.path, 403, reason)
            self._refuse(reason, self.path)
            return
        target = self.path.split("?", 1)[0]
        if target == "/" and self.command in ("GET", "HEAD"):
            self._home()
            return
        if target == lookup.LOOKUP:
            self._lookup()
            return
        if target.startswith(lookup.THUMB):
            self._thumbnail()
            return
        if gw.search_port is not None and (target == SEARCH or target.startswith(SEARCH + "/")):
            if target == SEARCH:
                self._redirect(SEARCH + "/" + self.path[len(SEARCH) :])
                return
            self._forward(client, SEARCH_HOST, gw.search_port, self.path[len(SEARCH) :])
            return
        problem = readerquery.problem(self.path)
        if problem:
            log.info("gateway: %s %s from %s: %s", self.command, self.path, client, problem)
            self._page(400, "bad_request", problem)
            return
        self._forward(client, INTERNAL_HOST, gw.cfg.pywb_port, self.path)

    def _sign_in(self, client: str) -> None:
        """``/_signin?pass=…&next=…``: a pass the curator pages issued (good, not expired, not
        used) becomes our reader-session cookie, and the browser goes on to ``next``."""
        gw = self.gateway
        query = parse_qs(urlsplit(self.path).query, keep_blank_values=True)
        given = (query.get("pass") or [""])[0]
        try:
            target = readerpass.safe_next((query.get("next") or ["/"])[0])
        except readerpass.PassError as exc:  # the pass is not spent: it may be used rightly
            gw.record(client, self.command, readerpass.SIGNIN, 400, f"sign-in refused: {exc}")
            self._page(400, "bad_sign_in", str(exc))
            return
        try:
            claims = readerpass.verify(gw.pass_key, readerpass.PASS, given)
            gw.used_passes.spend(claims)
        except readerpass.PassError as exc:  # the pass itself is never logged
            gw.record(client, self.command, readerpass.SIGNIN, 403, f"sign-in refused: {exc}")
            self._refuse(f"sign-in refused: {exc}", target)
            return
        session = readerpass.sign(
            gw.pass_key, readerpass.SESSION, claims.user, gw.cfg.reader_session_s
        )
        log.info("reading room: %s signed in from %s", claims.user, client)
        self._redirect(target, 303, self._cookie(session, int(gw.cfg.reader_session_s)))

    def _sign_out(self) -> None:
        """``/_signout``: the reader-session cookie cleared; the browser goes to the home page."""
        self._redirect("/", 303, self._cookie("", 0))

    def _cookie(self, value: str, max_age: int) -> str:
        secure = "; Secure" if self.gateway.cfg.url.startswith("https:") else ""
        return (
            f"{readerpass.COOKIE}={value}; Max-Age={max_age}; Path=/; HttpOnly; SameSite=Lax"
            + secure
        )

    def _redirect(self, location: str, status: int = 301, cookie: str = "") -> None:
        self.send_response(status)
        self.send_header("Location", location)
        if cookie:
            self.send_header("Set-Cookie", cookie)
            self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Length", "0")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def _send(self, status: int, ctype: str, body: bytes, cache: str = "no-store") -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", cache)
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self.close_connection = True

    def _forward(self, client: str, host: str, port: int, path: str) -> None:
        """Forward the request to ``path`` at ``host:port`` (pywb or the search page)."""
        gw = self.gateway
        length = int(self.headers.get("Content-Length") or 0)  # checked: _body_refused
        body = self.rfile.read(length) if length > 0 else None
        if body is not None and len(body) < length:
            self.close_connection = True  # the client closed before sending it all
            return
        self.connection.settimeout(gw.cfg.client_timeout_s)  # reading it armed what was left
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
        for key in [k for k in headers if k.lower() == "cookie"]:  # our session stays here
            headers[key] = readerpass.without_cookie(headers[key])
            if not headers[key]:
                del headers[key]
        headers["X-Forwarded-For"] = client
        routed = readerquery.routed(self.path)  # as pywb routes it
        query = bool(_CDX_QUERY.match(routed))
        timeout = _QUERY_TIMEOUT_S if query else _REPLAY_TIMEOUT_S
        upstream = http.client.HTTPConnection(host, port, timeout=timeout)
        try:
            upstream.request(self.command, path, body=body, headers=headers)
            resp = upstream.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            upstream.close()
            log.warning("gateway: %s %s: replay service unavailable (%s)", self.command, path, exc)
            self._page(502, "replay_unavailable", "replay_unavailable_text")
            return
        try:
            if self._answered_instead(client, resp):
                return
            reason = gw.rule_refusal(resp.status, self.path)
            if reason:
                gw.record(client, self.command, self.path, resp.status, reason)
            if resp.status == 451 and not query:
                self._restricted_capture(replayed_url(self.path) or "")
                return
            self.send_response(resp.status, resp.reason)
            for key, value in resp.getheaders():
                if key.lower() == "set-cookie" and readerpass.sets_cookie(value):
                    continue  # an archived answer never sets (or clears) our reader session
                if key.lower() not in _HOP:
                    self.send_header(key, value)
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            if self.command == "HEAD":
                return
            while chunk := resp.read(CHUNK):
                self.wfile.write(chunk)
            self.wfile.flush()
            gw.not_found(resp.status, resp.headers, self.path)
            if resp.status == 200 and query:
                gw.queue_audit(client, self.command, routed)
        except (OSError, http.client.HTTPException):  # the client went away, or pywb did
            self.close_connection = True
        finally:
            upstream.close()

    def _answered_instead(self, client: str, resp: http.client.HTTPResponse) -> bool:
        """Answer ourselves rather than pass pywb's answer on: a replayed record that is not a
        web capture (a crawl's metadata record...), or pywb's own failure (5xx not replayed)."""
        replayed = resp.getheader("Memento-Datetime") is not None
        if replayed:
            found = _ORIGINAL.search(resp.getheader("Link") or "")
            original = found.group(1) if found else ""
            if original.lower().startswith(_WEB):
                return False
            reason = (
                f"not a web capture ({original[:200] or 'no original URL'}): crawl metadata"
                " records are for staff, in the curator pages"
            )
            self.gateway.record(client, self.command, self.path, 404, reason)
            self._page(404, "not_archived_title", "not_web_capture")
            return True
        if resp.status < 500:
            return False
        detail = resp.read(2000).decode("utf-8", "replace")
        log.warning(
            "gateway: %s %s: pywb answered %s: %s", self.command, self.path, resp.status, detail
        )
        status = resp.status if resp.status in (503, 504) else 502
        self._page(status, "replay_failed", "replay_failed_text")
        return True

    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = do_OPTIONS = _handle
