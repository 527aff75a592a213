"""The access gateway: the replay service's public address, in front of pywb.

Why a gateway of ours: pywb has no notion of a reading room (it cannot check a client's address
or a login) and logs an access refusal as a bare status code. This small proxy, run by
``access serve`` beside the WARC resolver, is the one public address (``[access] url``) and
forwards every request it lets through, unchanged (same Host, so pywb's links stay on it), to
pywb on ``[access] pywb_port``. It:

- **reading-room mode** (``reading_room = true``): lets a request through only from a client
  address in ``reading_room_ranges``, or carrying the login of the curator pages (Airflow's
  ``_token`` cookie or an ``Authorization: Bearer`` JWT, checked by asking the curator pages
  themselves, answers cached a minute) when ``reading_room_login``; others get a 403 page that
  says why and how to get access. The home page (the list of collections and guided tours) and
  pywb's static files stay public: only consultation is restricted.
- **serves the full-text search page** at ``/search/`` (:mod:`access.searchapp`, run beside it
  on a loopback port of its own): under the same reading-room rule as replay, since its snippets are
  the archive's content; its results link into replay on this same address.
- **records what a job's view could not serve**: pywb's own not-found answer (a 404 without
  the ``Memento-Datetime`` of a replayed capture) to ``/job-<id>/<timestamp><modifier>/<url>``
  is handed to ``missing`` (:mod:`access.missing`: the URL counted against the job, for the
  curators' QC), after the answer has gone to the browser; not while the job has no view yet
  (pywb's 404 for an unknown collection says nothing about the capture).
- **logs every refusal** to ``<access>/logs/refused.log`` (time, client, request, reason): the
  reading room's, and pywb's own answers to a capture refused by an access rule (451 for
  ``block``; 404 for a URL an ``exclude`` rule hides), with the rule that decided, found in the
  rules in force exactly as pywb finds it (longest SURT prefix); and each capture an
  ``exclude`` rule left out of a URL-search (CDX API) answer, with its rule
  (:mod:`access.cdxaudit`, checked after the answer is sent).
"""

from __future__ import annotations

import hashlib
import html
import http.client
import ipaddress
import logging
import re
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

from access import cdxaudit
from access import missing as missing_urls
from access.config import INTERNAL_HOST, AccessConfig
from access.definitions import collections_root
from access.rules import Rule, deciding
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
_LOGIN_TTL_S = 60.0
_CHUNK = 1 << 16

REFUSAL_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Consultation restricted</title>
<style>body{{font:16px sans-serif;max-width:40em;margin:3em auto}}</style></head>
<body><h1>Consultation restricted</h1>
<p>The web archive collected under legal deposit can be consulted only in the reading rooms
of the library, or by accredited users signed in.</p>
<p>{reason}</p>
<p><a href="{login}">Sign in</a> &middot; <a href="/">Collections and guided tours</a></p>
</body></html>
"""


class LoginChecker:
    """Whether a token is a signed-in curator's: asks the curator pages, caches the answer."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._cache: dict[str, tuple[bool, float]] = {}
        self._lock = threading.Lock()

    def __call__(self, token: str) -> bool:
        key = hashlib.sha256(token.encode()).hexdigest()
        now = time.monotonic()
        with self._lock:
            hit = self._cache.get(key)
            if hit and hit[1] > now:
                return hit[0]
        ok = self._ask(token)
        with self._lock:
            self._cache[key] = (ok, now + _LOGIN_TTL_S)
        return ok

    def _ask(self, token: str) -> bool:
        from urllib.parse import urlsplit

        parts = urlsplit(self.url)
        conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=10)
        try:
            conn.request(
                "GET",
                parts.path or "/",
                headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
            )
            return conn.getresponse().status == 200
        except OSError as exc:
            log.warning("reading room: cannot check a login at %s (%s)", self.url, exc)
            return False
        finally:
            conn.close()


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
        return f"reading room: address {client} is outside the reading room and not signed in"

    def rule_refusal(self, status: int, path: str) -> str | None:
        """The access rule behind pywb's refusal of a capture (451 block; 404 exclude)."""
        if status not in (451, 404):
            return None
        match = _REPLAY.match(path.split("?", 1)[0])
        if not match:
            return None
        url = unquote(match.group(3))
        try:
            key = surt(url if "://" in url else "http://" + url)
        except Exception:  # a URL we cannot key is no rule's
            return None
        rule = deciding(self.rules(), key)
        if rule is None or rule.policy == "allow":
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

    def audit_cdx(self, client: str, method: str, path: str) -> None:
        """Log each capture an ``exclude`` rule left out of this URL-search answer, with the
        rule (:mod:`access.cdxaudit`; run after the answer was sent)."""
        match = _CDX_QUERY.match(path)
        if not match:
            return
        try:
            left_out = cdxaudit.excluded(self.cfg, match.group(1), match.group(2), self.rules())
        except (OSError, ValueError) as exc:
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
        handler = type("GatewayHandler", (_Handler,), {"gateway": self})
        srv = ThreadingHTTPServer((self.cfg.host, self.cfg.port), handler)
        srv.daemon_threads = True
        return srv


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


class _Handler(BaseHTTPRequestHandler):
    gateway: Gateway
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # pywb logs the requests
        return

    def _handle(self) -> None:
        gw = self.gateway
        client = self.client_address[0]
        if self.path == "/_health":
            self._send(200, "text/plain", b"ok\n")
            return
        reason = gw.refusal(client, self.path, self.headers)
        if reason:
            gw.record(client, self.command, self.path, 403, reason)
            page = REFUSAL_PAGE.format(
                reason=html.escape(reason), login=html.escape(gw.cfg.login_check_url)
            )
            self._send(403, "text/html; charset=utf-8", page.encode())
            return
        target = self.path.split("?", 1)[0]
        if gw.search_port is not None and (target == SEARCH or target.startswith(SEARCH + "/")):
            if target == SEARCH:
                self._redirect(SEARCH + "/" + self.path[len(SEARCH) :])
                return
            self._forward(client, SEARCH_HOST, gw.search_port, self.path[len(SEARCH) :])
            return
        self._forward(client, INTERNAL_HOST, gw.cfg.pywb_port, self.path)

    def _redirect(self, location: str) -> None:
        self.send_response(301)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def _send(self, status: int, ctype: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self.close_connection = True

    def _forward(self, client: str, host: str, port: int, path: str) -> None:
        """Forward the request to ``path`` at ``host:port`` (pywb or the search page)."""
        gw = self.gateway
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else None
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
        headers["X-Forwarded-For"] = client
        upstream = http.client.HTTPConnection(host, port, timeout=300)
        try:
            upstream.request(self.command, path, body=body, headers=headers)
            resp = upstream.getresponse()
        except OSError as exc:
            upstream.close()
            self._send(502, "text/plain", f"replay service unavailable: {exc}\n".encode())
            return
        try:
            reason = gw.rule_refusal(resp.status, self.path)
            if reason:
                gw.record(client, self.command, self.path, resp.status, reason)
            self.send_response(resp.status, resp.reason)
            for key, value in resp.getheaders():
                if key.lower() not in _HOP:
                    self.send_header(key, value)
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            if self.command == "HEAD":
                return
            while chunk := resp.read(_CHUNK):
                self.wfile.write(chunk)
            self.wfile.flush()
            gw.not_found(resp.status, resp.headers, self.path)
            if resp.status == 200 and _CDX_QUERY.match(self.path):
                args = (client, self.command, self.path)
                threading.Thread(target=gw.audit_cdx, args=args, daemon=True).start()
        except OSError:  # the client went away
            self.close_connection = True
        finally:
            upstream.close()

    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = do_OPTIONS = _handle
