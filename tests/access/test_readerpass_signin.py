"""Reading-room sign-in from a browser: the curator pages' pass, the gateway's reader session.

Replay is on a site of its own, where Airflow's ``_token`` cookie is never sent; a signed-in
user opens the reading room through the curator pages, which issue a one-minute single-use pass
(:mod:`access.readerpass`) and send the browser to the replay site's ``/_signin``.

The browser test runs the whole way in headless Chromium: Airflow's real api-server with our
curator pages, the replay service started by our code (gateway, pywb, resolver) with the reading
room restricted to 10.0.0.0/8 (the browser, on 127.0.0.1, is outside). The gateway tests put the
real gateway in front of a recording upstream standing where pywb is (on pywb's port), to see
exactly which headers a forwarded request carries; passes come from the curator pages' route
(TestClient) or are made with the shared key as the curator pages make them.
"""

from __future__ import annotations

import dataclasses
import http.client
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlencode, urlsplit

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from access import readerpass
from access.config import INTERNAL_HOST, AccessConfig
from access.gateway import Gateway
from access.service import ReplayService
from app.curator.actions import Role
from app.curator.webapp import create_app
from harvestflow import settings as settings_mod
from tests.support.browser import airflow_login, chromium
from tests.support.corpus import Page, chain_job
from tests.support.replay import replay_env
from tests.support.signed_in import auth_for

URL = "http://reading-room.test/signed-in.html"
MARK = "quokka behind the reading room's door"
OUTSIDE_RANGES = '["10.0.0.0/8"]'  # the tests' clients are all on 127.0.0.0/8
ARCHIVED = f"/all/2030id_/{URL}"


def restricted(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reading room on, its ranges excluding every loopback client, sign-in allowed."""
    monkeypatch.setenv("HARVESTFLOW_ACCESS__READING_ROOM", "true")
    monkeypatch.setenv("HARVESTFLOW_ACCESS__READING_ROOM_RANGES", OUTSIDE_RANGES)
    monkeypatch.setenv("HARVESTFLOW_ACCESS__READING_ROOM_LOGIN", "true")
    settings_mod.reset()


@pytest.mark.services
@pytest.mark.airflow
@pytest.mark.slow
def test_a_signed_in_user_follows_the_refusal_pages_sign_in_link_to_the_archived_page(
    db_engine: sa.Engine,
    access_settings: settings_mod.Settings,
    airflow_api: tuple[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base, password = airflow_api
    restricted(monkeypatch)
    settings = settings_mod.get_settings()
    cfg = AccessConfig.from_settings(settings)
    assert cfg.signin_url == f"{base}/curator/reading-room"
    body = f"<!doctype html><html><body><h1>{MARK}</h1></body></html>".encode()
    chain_job(db_engine, settings.data_dir, "signin", [[Page(URL, body, "text/html")]])
    service = ReplayService(settings)
    service.start()
    try:
        archived = cfg.url.rstrip("/") + ARCHIVED
        with chromium() as driver:
            airflow_login(driver, base, "admin", password)
            driver.get(archived)  # Airflow's cookie is not sent to the replay site: refused
            assert "Consultation restricted" in driver.page_source
            assert MARK not in driver.page_source
            link = driver.find_element(By.ID, "sign-in")
            href = link.get_attribute("href") or ""
            assert href == f"{cfg.signin_url}?{urlencode({'next': ARCHIVED})}", href
            link.click()
            WebDriverWait(driver, 60).until(lambda d: MARK in d.page_source)
            assert driver.current_url == archived, driver.current_url
            cookie = {c["name"]: c for c in driver.get_cookies()}[readerpass.COOKIE]
            assert cookie["httpOnly"] and cookie["sameSite"] == "Lax", cookie
            assert cookie["domain"] == urlsplit(cfg.url).hostname, cookie
            # an archived page's script does not see it
            assert readerpass.COOKIE not in driver.execute_script("return document.cookie")
            # the framed replay, its frame's requests too
            driver.get(cfg.url + "all/2030/" + URL)
            frame = WebDriverWait(driver, 120).until(
                lambda d: d.find_elements(By.CSS_SELECTOR, "iframe#replay_iframe")
            )[0]
            driver.switch_to.frame(frame)
            WebDriverWait(driver, 120).until(lambda d: MARK in d.page_source)
            assert readerpass.COOKIE not in driver.execute_script("return document.cookie")
            driver.switch_to.default_content()
            # signing out closes the reading room again
            driver.get(cfg.url.rstrip("/") + readerpass.SIGNOUT)
            assert readerpass.COOKIE not in {c["name"] for c in driver.get_cookies()}
            driver.get(archived)
            assert "Consultation restricted" in driver.page_source
            assert MARK not in driver.page_source
        refused = cfg.refused_log.read_text()
        assert refused.count(f"GET {ARCHIVED}") == 2, refused  # before sign-in, after sign-out
        assert "pass=" not in refused
    finally:
        service.stop()


class _Upstream(BaseHTTPRequestHandler):
    """Stands where pywb is: records each request's headers, answers an archived page that
    tries to set the gateway's cookie (as an archived site's own cookie of that name would)."""

    seen: list[dict[str, str]]
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self.seen.append({k.lower(): v for k, v in self.headers.items()})
        body = b"<html><body>archived</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Set-Cookie", f"{readerpass.COOKIE}=from-the-archive; Path=/")
        self.send_header("Set-Cookie", "site_cookie=kept; Path=/")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return


@dataclasses.dataclass
class Served:
    cfg: AccessConfig
    seen: list[dict[str, str]]
    key: bytes


@pytest.fixture
def gateway(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Served]:
    """Our gateway (reading room on, nobody's address inside) before a recording upstream."""
    replay_env(monkeypatch, tmp_path / "data")
    restricted(monkeypatch)
    cfg = AccessConfig.from_settings()
    seen: list[dict[str, str]] = []
    handler = type("Upstream", (_Upstream,), {"seen": seen})
    upstream = ThreadingHTTPServer((INTERNAL_HOST, cfg.pywb_port), handler)
    srv = Gateway(cfg, rules=list, login=lambda token: False).server()
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in (upstream, srv)]
    for thread in threads:
        thread.start()
    try:
        yield Served(cfg, seen, readerpass.load_key(cfg.root))
    finally:
        for s in (upstream, srv):
            s.shutdown()
            s.server_close()
        settings_mod.reset()


def ask(
    cfg: AccessConfig, path: str, headers: dict[str, str] | None = None
) -> http.client.HTTPResponse:
    """GET ``path`` on the gateway, on the replay site's name; the answer, read."""
    conn = http.client.HTTPConnection(cfg.host, cfg.port, timeout=30)
    conn.request("GET", path, headers={"Host": urlsplit(cfg.url).netloc, **(headers or {})})
    resp = conn.getresponse()
    resp.read()
    conn.close()
    return resp


def sign_in(cfg: AccessConfig, token: str, next_path: str = ARCHIVED) -> http.client.HTTPResponse:
    return ask(cfg, f"{readerpass.SIGNIN}?{urlencode({'pass': token, 'next': next_path})}")


def session_of(resp: http.client.HTTPResponse) -> str:
    """The reader-session cookie a sign-in answer sets (its attributes checked)."""
    cookie = resp.getheader("Set-Cookie") or ""
    name, _, rest = cookie.partition("=")
    value, *attributes = rest.split("; ")
    assert name == readerpass.COOKIE and value, cookie
    assert {"HttpOnly", "SameSite=Lax", "Path=/"} <= set(attributes), cookie
    assert "Secure" not in attributes  # the replay site is http here
    return value


def test_the_curator_pages_give_a_signed_in_user_a_pass_and_the_gateway_a_session(
    gateway: Served,
) -> None:
    cfg = gateway.cfg
    users = {"reader-token": Role.VIEWER}
    pages = create_app(lambda: None, data_dir=cfg.root.parent, auth=auth_for(users))  # type: ignore[arg-type,return-value]
    client = TestClient(pages, follow_redirects=False)
    assert client.get("/reading-room", params={"next": ARCHIVED}).status_code == 401
    resp = client.get(
        "/reading-room",
        params={"next": ARCHIVED},
        headers={"Authorization": "Bearer reader-token"},
    )
    assert resp.status_code == 303, resp.text
    assert resp.headers["cache-control"] == "no-store"
    assert resp.headers["referrer-policy"] == "no-referrer"
    location = urlsplit(resp.headers["location"])
    assert f"{location.scheme}://{location.netloc}/" == cfg.url
    assert location.path == readerpass.SIGNIN
    query = parse_qs(location.query)
    assert query["next"] == [ARCHIVED]
    claims = readerpass.verify(gateway.key, readerpass.PASS, query["pass"][0])
    assert claims.user == "reader-token"
    assert claims.expires <= time.time() + readerpass.PASS_TTL_S + 1
    # the gateway takes it: our cookie, then on to next
    assert ask(cfg, ARCHIVED).status == 403
    done = ask(cfg, f"{location.path}?{location.query}")
    assert done.status == 303 and done.getheader("Location") == ARCHIVED
    session = session_of(done)
    assert f"Max-Age={int(cfg.reader_session_s)}" in (done.getheader("Set-Cookie") or "")
    assert ask(cfg, ARCHIVED, {"Cookie": f"{readerpass.COOKIE}={session}"}).status == 200
    # and the curator pages refuse to send a browser off the replay site
    for off_site in ("//evil.test/", "http://evil.test/", "/\\evil.test"):
        resp = client.get(
            "/reading-room",
            params={"next": off_site},
            headers={"Authorization": "Bearer reader-token"},
        )
        assert resp.status_code == 400 and "location" not in resp.headers, off_site


def test_a_forged_expired_reused_or_misused_pass_is_refused(gateway: Served) -> None:
    cfg, key = gateway.cfg, gateway.key
    good = readerpass.sign(key, readerpass.PASS, "alice", readerpass.PASS_TTL_S)
    payload, mac = good.split(".")
    other_key = b"k" * 32
    refusals = {
        "forged (another key)": readerpass.sign(other_key, readerpass.PASS, "alice", 60),
        "tampered claims": readerpass.sign(key, readerpass.PASS, "mallory", 60).split(".")[0]
        + "."
        + mac,
        "expired": readerpass.sign(key, readerpass.PASS, "alice", 60, now=time.time() - 61),
        "a session given as a pass": readerpass.sign(key, readerpass.SESSION, "alice", 3600),
        "no pass": "",
        "garbage": "not.a.pass.at.all",
    }
    for how, token in refusals.items():
        resp = sign_in(cfg, token)
        assert resp.status == 403, how
        assert resp.getheader("Set-Cookie") is None, how
    assert sign_in(cfg, good).status == 303
    reused = sign_in(cfg, good)
    assert reused.status == 403 and reused.getheader("Set-Cookie") is None
    logged = cfg.refused_log.read_text()
    assert logged.count("sign-in refused") == len(refusals) + 1
    assert "used already" in logged and "expired" in logged and "signature" in logged
    assert payload not in logged  # passes are never logged
    # a pass is no session either, nor an expired session, nor one signed with another key
    for how, cookie in {
        "a pass as the cookie": readerpass.sign(key, readerpass.PASS, "alice", 60),
        "an expired session": readerpass.sign(key, readerpass.SESSION, "a", 1, time.time() - 5),
        "a forged session": readerpass.sign(other_key, readerpass.SESSION, "alice", 3600),
    }.items():
        assert ask(cfg, ARCHIVED, {"Cookie": f"{readerpass.COOKIE}={cookie}"}).status == 403, how
    assert not gateway.seen  # nothing reached the upstream


def test_the_reader_cookie_is_never_forwarded_nor_set_by_an_archived_answer(
    gateway: Served,
) -> None:
    cfg = gateway.cfg
    session = session_of(
        sign_in(cfg, readerpass.sign(gateway.key, readerpass.PASS, "alice", readerpass.PASS_TTL_S))
    )
    cookies = f"lang=fr; {readerpass.COOKIE}={session}; site_cookie=1"
    conn = http.client.HTTPConnection(cfg.host, cfg.port, timeout=30)
    conn.request("GET", ARCHIVED, headers={"Host": urlsplit(cfg.url).netloc, "Cookie": cookies})
    resp = conn.getresponse()
    assert resp.status == 200 and b"archived" in resp.read()
    conn.close()
    set_cookies = [v for k, v in resp.getheaders() if k.lower() == "set-cookie"]
    assert set_cookies == ["site_cookie=kept; Path=/"]  # the archive cannot replace ours
    (forwarded,) = gateway.seen
    assert forwarded["cookie"] == "lang=fr; site_cookie=1"
    assert session not in str(forwarded) and readerpass.COOKIE not in str(forwarded)
    # a request whose only cookie is ours reaches the upstream with no Cookie header at all
    assert ask(cfg, ARCHIVED, {"Cookie": f"{readerpass.COOKIE}={session}"}).status == 200
    assert "cookie" not in gateway.seen[-1]


def test_next_pointing_off_the_replay_site_is_refused_and_sign_out_clears_the_cookie(
    gateway: Served,
) -> None:
    cfg = gateway.cfg
    token = readerpass.sign(gateway.key, readerpass.PASS, "alice", readerpass.PASS_TTL_S)
    for off_site in (
        "//evil.test/x",
        "http://evil.test/",
        "https:evil.test",
        "/\\evil.test",
        "/\t/evil.test",
        "evil.test",
        "",
        "/" + "a" * 5000,
    ):
        resp = sign_in(cfg, token, off_site)
        assert resp.status == 400, off_site
        assert resp.getheader("Location") is None and resp.getheader("Set-Cookie") is None
    # the pass was not spent by those: it still signs in, to a path on the replay site
    resp = sign_in(cfg, token, "/all/*/" + quote(URL, safe=""))
    assert resp.status == 303 and resp.getheader("Location") == "/all/*/" + quote(URL, safe="")
    session_of(resp)
    out = ask(cfg, readerpass.SIGNOUT, {"Cookie": f"{readerpass.COOKIE}={session_of(resp)}"})
    assert out.status == 303 and out.getheader("Location") == "/"
    assert (out.getheader("Set-Cookie") or "").startswith(f"{readerpass.COOKIE}=; Max-Age=0;")


def test_the_refusal_page_links_to_the_curator_pages_sign_in_with_next(gateway: Served) -> None:
    cfg = gateway.cfg
    conn = http.client.HTTPConnection(cfg.host, cfg.port, timeout=30)
    conn.request("GET", ARCHIVED, headers={"Host": urlsplit(cfg.url).netloc})
    resp = conn.getresponse()
    page = resp.read().decode()
    conn.close()
    assert resp.status == 403
    link = f"{cfg.signin_url}?{urlencode({'next': ARCHIVED})}".replace("&", "&amp;")
    assert f'<a id="sign-in" href="{link}">Sign in</a>' in page, page
    assert urlsplit(cfg.signin_url).path == "/curator/reading-room"
