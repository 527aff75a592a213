"""Crawling behind a login, as Heritrix's credential store does: HTTP Basic/Digest and forms.

Why a downloader middleware of ours: Scrapy's HttpAuthMiddleware (off) sends one spider-wide
login to one domain and knows no Digest or forms. Credentials, named by the job spec, are read
decrypted once at start and used for the hosts of their domain; a form login is archived as a
prerequisite (hop ``P``) and redone when the session ends; a logout URL is never fetched.
Secrets never leave memory (WARC request records are redacted: :mod:`crawler.warc.redact`).
Order 650: after robots.txt (100), before cookies (700) and the capture middleware (950).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urljoin, urlsplit
from urllib.request import (
    AbstractDigestAuthHandler,
    HTTPPasswordMgr,
    parse_http_list,
    parse_keqv_list,
)
from urllib.request import Request as UrlRequest

from scrapy import Request
from scrapy.exceptions import NotConfigured
from scrapy.http import Response, TextResponse
from scrapy.http.request import NO_CALLBACK
from w3lib.http import basic_auth_header

from crawler.errors import Refused
from crawler.warc.redact import REDACTED
from harvestflow.credentials import CredentialError, Secret, load_secrets
from harvestflow.formats.urls import host_of

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

log = logging.getLogger(__name__)

LOGIN_META = {"hf_login": True, "dont_obey_robotstxt": True}
MAX_RELOGINS = 10  # form logins again after a session ended, per credential and crawl
RETRIES_PER_URL = 3  # fetches of one URL again after a redirect to the login page


def covers(domain: str, host: str) -> bool:
    """Whether a credential for ``domain`` (a domain or one host) applies to ``host``."""
    host = host.lower()
    return host == domain or host.endswith("." + domain)


def same_page(url: str, other: str) -> bool:
    """Same host and path (what a redirect to the login page is recognised by)."""
    a, b = urlsplit(url), urlsplit(other)
    return a.netloc.lower() == b.netloc.lower() and (a.path or "/") == (b.path or "/")


def is_logout(url: str, logout_url: str | None) -> bool:
    """``url`` is the logout URL or under it (same host, path prefix; the query ignored)."""
    if not logout_url:
        return False
    a, b = urlsplit(url), urlsplit(logout_url)
    return a.netloc.lower() == b.netloc.lower() and a.path.startswith(b.path or "/")


def digest_authorization(secret: Secret, request: Request, challenge: str) -> str | None:
    """The ``Authorization`` value answering a Digest challenge (urllib's implementation)."""
    params = parse_keqv_list(parse_http_list(challenge.split(" ", 1)[1]))
    realm = params.get("realm", "")
    if secret.ref.realm and realm != secret.ref.realm:
        return None
    parts = urlsplit(request.url)
    manager = HTTPPasswordMgr()
    manager.add_password(
        realm, f"{parts.scheme}://{parts.netloc}/", secret.username, secret.password
    )
    handler = AbstractDigestAuthHandler(manager)
    ureq = UrlRequest(request.url, data=request.body or None, method=request.method)
    value = handler.get_authorization(ureq, params)
    return f"Digest {value}" if value else None


def answer_challenge(secret: Secret, request: Request, challenge: str) -> str | None:
    """The ``Authorization`` answering one ``WWW-Authenticate`` challenge with ``secret``, or
    None (another scheme, another realm)."""
    scheme = challenge.split(" ", 1)[0].lower()
    if scheme != secret.ref.kind or " " not in challenge:
        return None
    if scheme == "digest":
        return digest_authorization(secret, request, challenge)
    params = parse_keqv_list(parse_http_list(challenge.split(" ", 1)[1]))
    if secret.ref.realm and params.get("realm") != secret.ref.realm:
        return None
    return basic_auth_header(secret.username, secret.password).decode("latin-1")


_PASSWORD_FORM = '//form[.//input[translate(@type,"PASSWORD","password")="password"]]'
_NOT_SENT = {"submit", "image", "button", "reset", "file"}


def login_form(
    page: TextResponse, secret: Secret
) -> tuple[str, str, list[tuple[str, str]], str, str] | None:
    """(action URL, method, fields as the browser would send them, username field, password
    field) of the page's first form holding a password input; None if there is none.

    Hidden fields (CSRF tokens) and the defaults of the others are kept, checkboxes and radio
    buttons only when checked, the first named submit button as if clicked (what a browser, and
    Scrapy's deprecated ``FormRequest.from_response``, send).
    """
    forms = page.xpath(_PASSWORD_FORM)
    if not forms:
        return None
    form = forms[0].root
    pfield = secret.password_field
    ufield = secret.username_field
    fields: list[tuple[str, str]] = []
    clicked = False
    for el in form.iter("input", "select", "textarea"):
        name = el.get("name")
        if not name:
            continue
        kind = (el.get("type") or "text").lower() if el.tag == "input" else el.tag
        if kind == "password" and not pfield:
            pfield = name
        elif kind in ("text", "email") and not ufield:
            ufield = name
        if kind in ("checkbox", "radio") and el.get("checked") is None:
            continue
        if kind == "submit" and not clicked:
            clicked = True
        elif kind in _NOT_SENT:
            continue
        if kind == "select":
            chosen = el.xpath("option[@selected]") or el.xpath("option")
            value = (chosen[0].get("value") or chosen[0].text or "") if chosen else ""
        elif kind == "textarea":
            value = el.text or ""
        else:
            value = el.get("value") or ""
        fields.append((name, value))
    if not ufield or not pfield:
        return None
    fields = [(k, v) for k, v in fields if k not in (ufield, pfield)]
    fields += [(ufield, secret.username), (pfield, secret.password)]
    action = urljoin(page.url, (form.get("action") or "").strip() or page.url)
    method = (form.get("method") or "GET").upper()
    return action, method, fields, ufield, pfield


class LoginMiddleware:
    """Downloader middleware: see the module docstring."""

    def __init__(self, crawler: Crawler, secrets: list[Secret]) -> None:
        self.crawler = crawler
        self.secrets = secrets
        self.stats = crawler.stats
        self._logins: dict[int, asyncio.Future[bool]] = {}
        self._login_done: dict[int, float] = {}  # credential → when its last login ended
        self._relogins: dict[int, int] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> LoginMiddleware:
        refs = crawler.settings.getlist("HARVESTFLOW_CREDENTIALS")
        if not refs:
            raise NotConfigured
        job_id = crawler.settings.getint("HARVESTFLOW_JOB_ID")
        try:
            secrets = load_secrets([int(c["id"]) for c in refs])
        except (CredentialError, OSError, ValueError, KeyError) as exc:
            log.error("job %s: no login possible, credentials unreadable: %s", job_id, exc)
            raise NotConfigured from None
        except Exception as exc:  # the database unreachable: the crawl goes on without logins
            log.error(
                "job %s: no login possible, harvest DB unreachable: %s",
                job_id,
                type(exc).__name__,
            )
            raise NotConfigured from None
        log.info(
            "logins for job %s: credential(s) %s",
            job_id,
            ", ".join(f"{s.ref.id} ({s.ref.kind} {s.ref.domain})" for s in secrets),
        )
        return cls(crawler, secrets)

    def _for(self, url: str) -> list[Secret]:
        host = host_of(url)
        return [s for s in self.secrets if covers(s.ref.domain, host)]

    def _inc(self, key: str) -> None:
        if self.stats is not None:
            self.stats.inc_value(f"login/{key}")

    async def process_request(self, request: Request, spider: Any = None) -> None:
        if request.meta.get("hf_login"):
            return
        for secret in self._for(request.url):
            if is_logout(request.url, secret.ref.logout_url):
                self._inc("logout_refused")
                raise Refused("err=logout-url")
            if (
                secret.ref.kind == "basic"
                and not secret.ref.realm
                and b"Authorization" not in request.headers
            ):
                request.headers[b"Authorization"] = basic_auth_header(
                    secret.username, secret.password
                )
            elif secret.ref.kind == "form":
                await self._logged_in(secret)

    async def process_response(
        self, request: Request, response: Response, spider: Any = None
    ) -> Request | Response:
        if 300 <= response.status < 400 and not request.meta.get("hf_login"):
            return await self._session_expired(request, response)
        if response.status != 401 or request.meta.get("hf_auth_retried"):
            return response
        challenges = [v.decode("latin-1") for v in response.headers.getlist(b"WWW-Authenticate")]
        for secret in self._for(request.url):
            if secret.ref.kind not in ("basic", "digest"):
                continue
            for challenge in challenges:
                value = answer_challenge(secret, request, challenge)
                if value is None:
                    continue
                retry = request.replace(dont_filter=True)
                retry.headers[b"Authorization"] = value
                retry.meta["hf_auth_retried"] = True
                for key in ("hf_capture", "hf_truncated"):
                    retry.meta.pop(key, None)
                self._inc(f"{secret.ref.kind}_answered")
                return retry
        return response

    async def _session_expired(self, request: Request, response: Response) -> Request | Response:
        """A redirect to a form credential's login page: the session ended (or the request
        left with an older session). Log in again if no newer session exists (at most
        MAX_RELOGINS times a crawl), then fetch the URL again (at most RETRIES_PER_URL times).
        The redirect itself is archived like any response."""
        location = response.headers.get(b"Location")
        tries = int(request.meta.get("hf_relogged", 0))
        if not location or tries >= RETRIES_PER_URL:
            return response
        target = urljoin(request.url, location.decode("latin-1").strip())
        for secret in self._for(request.url):
            ref = secret.ref
            if ref.kind != "form" or not ref.login_url or not same_page(target, ref.login_url):
                continue
            future = self._logins.get(ref.id)
            if future is not None and future.done():
                if not future.result():
                    return response  # the login itself failed (logged): not tried again
                sent = float(request.meta.get("hf_fetch_start") or 0.0)
                if sent >= self._login_done.get(ref.id, 0.0):  # the newest session ended
                    if self._relogins.get(ref.id, 0) >= MAX_RELOGINS:
                        return response
                    self._relogins[ref.id] = self._relogins.get(ref.id, 0) + 1
                    del self._logins[ref.id]
                    self._inc("form_relogin")
                    log.info(
                        "credential %s: session ended at %s, logging in again", ref.id, request.url
                    )
            if not await self._logged_in(secret):
                return response
            retry = request.replace(dont_filter=True)
            retry.meta["hf_relogged"] = tries + 1
            for key in ("hf_capture", "hf_truncated"):
                retry.meta.pop(key, None)
            return retry
        return response

    async def _logged_in(self, secret: Secret) -> bool:
        """The host's form login, done once (requests arriving meanwhile wait for it)."""
        future = self._logins.get(secret.ref.id)
        if future is None:
            future = asyncio.ensure_future(self._form_login(secret))
            self._logins[secret.ref.id] = future
        return await asyncio.shield(future)

    async def _form_login(self, secret: Secret) -> bool:
        ref = secret.ref
        engine = self.crawler.engine
        assert engine is not None and ref.login_url
        try:
            page = await engine.download_async(
                Request(
                    ref.login_url, meta=dict(LOGIN_META), dont_filter=True, callback=NO_CALLBACK
                )
            )
            form = login_form(page, secret) if isinstance(page, TextResponse) else None
            if form is None or not isinstance(page, TextResponse):
                log.error(
                    "credential %s: no login form with a password field at %s",
                    ref.id,
                    ref.login_url,
                )
                self._inc("form_failed")
                return False
            action, method, fields, _, pfield = form
            if method != "POST":  # a GET form would put the password in a URL: never sent
                log.error(
                    "credential %s: the login form at %s is sent by %s, not used",
                    ref.id,
                    ref.login_url,
                    method,
                )
                self._inc("form_failed")
                return False
            encoding = page.encoding
            post = Request(
                action,
                method="POST",
                body=urlencode(fields, encoding=encoding).encode("ascii"),
                headers={"Content-Type": "application/x-www-form-urlencoded"},
                meta={
                    **LOGIN_META,
                    # what the WARC request record keeps: the password's value replaced
                    "hf_record_body": urlencode(
                        [(k, REDACTED if k == pfield else v) for k, v in fields],
                        encoding=encoding,
                    ).encode("ascii"),
                },
                dont_filter=True,
                callback=NO_CALLBACK,
            )
            answer = await engine.download_async(post)
        except Exception as exc:
            log.error(
                "credential %s: form login at %s failed: %s",
                ref.id,
                ref.login_url,
                type(exc).__name__,
            )
            self._inc("form_failed")
            return False
        ok = answer.status < 400
        self._login_done[ref.id] = time.time()
        self._inc("form_ok" if ok else "form_failed")
        log.info(
            "credential %s: form login at %s answered HTTP %s", ref.id, ref.login_url, answer.status
        )
        return ok
