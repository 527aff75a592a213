"""Replay is served from a site of its own, never the curator pages' (Airflow's).

Why it matters: an archived page runs its own scripts, and a browser sends a host's cookies to
every port of that host. The browser test puts a hostile archived page in front of a curator
signed in to the real Airflow api-server (our curator pages mounted in it), in headless
Chromium, with the replay service started by our code at the settings' default site: the page's
script tries Airflow's API and the curator pages through pywb's frames (``parent.fetch``,
``top.fetch``: the frames wombat does not rewrite), reads ``document.cookie`` and the frames
around it. Chromium's own network log (DevTools) is the witness of what the requests carried.
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest
import sqlalchemy as sa
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from access.config import AccessConfig, replay_site
from access.service import ReplayService
from harvestflow import settings as settings_mod
from harvestflow.settings import SettingsError
from tests.support.browser import airflow_login, chromium
from tests.support.corpus import Page, chain_job
from tests.support.replay import get

EVIL = "http://evil.test/page.html"
# The archived page: its script runs in pywb's replay frame, on the replay site.
ATTACK = """<!doctype html><html><head><title>evil</title></head><body><h1>archived</h1>
<script>
(async () => {
  const airflow = "AIRFLOW";
  const out = {cookie: document.cookie, reads: [], frames: []};
  // in pywb's frame, wombat rewrites fetch to replay URLs; served as it was archived (id_),
  // the page's script has the browser's own
  const frames = {self: () => window, parent: () => parent, top: () => top};
  for (const [where, frame] of Object.entries(frames)) {
    for (const path of ["/api/v2/variables", "/curator/"]) {
      try {
        const r = await frame().fetch(airflow + path, {credentials: "include"});
        out.reads.push([where, path, r.url, r.status, (await r.text()).slice(0, 200)]);
      } catch (e) { out.reads.push([where, path, "refused: " + e]); }
    }
    try {  // simple requests: no preflight, sent with the cookies a browser sends there
      await frame().fetch(airflow + "/api/v2/variables", {method: "POST", mode: "no-cors",
        credentials: "include", headers: {"Content-Type": "text/plain"},
        body: JSON.stringify({key: "archived_page_was_here", value: "1"})});
      await frame().fetch(airflow + "/curator/records/new", {method: "POST", mode: "no-cors",
        credentials: "include", body: new URLSearchParams({title: "archived"})});
    } catch (e) { out.frames.push([where, "write refused: " + e]); }
    try { out.frames.push([where, "cookie: " + frame().document.cookie]); }
    catch (e) { out.frames.push([where, "refused: " + e]); }
  }
  try { out.frames.push(["opener", top.opener ? top.opener.document.title : "none"]); }
  catch (e) { out.frames.push(["opener", "refused: " + e]); }
  window.hf_attack = out;
})();
</script></body></html>"""


def test_the_default_replay_site_is_another_host_than_airflows() -> None:
    """One machine: 127.0.0.1 for Airflow, so replay is on ``localhost`` (and back); another
    host keeps its own address; a production site on Airflow's domain is refused."""
    assert replay_site("http://127.0.0.1:8090/", "", "127.0.0.1") == "http://localhost:8090/"
    assert replay_site("http://localhost:8090", "", "localhost") == "http://127.0.0.1:8090/"
    assert replay_site("http://127.0.0.2:8090/", "", "127.0.0.1") == "http://127.0.0.2:8090/"
    given = "https://replay.archive-replay.example/"
    assert replay_site("http://10.0.0.5:8090/", given, "curators.archive.example") == given
    # a browser takes sub-domains of one registrable domain for one site: cookies are sent
    with pytest.raises(SettingsError, match="domain of its own"):
        replay_site("http://10.0.0.5:8090/", "https://replay.archive.example/", "archive.example")
    with pytest.raises(SettingsError, match="site_url"):
        replay_site("http://archive.example:8090/", "", "archive.example")
    with pytest.raises(SettingsError, match="want http"):
        replay_site("http://10.0.0.5:8090/", "replay.example", "archive.example")


def test_the_curator_pages_address_is_an_access_setting_not_read_from_airflows_section() -> None:
    """The gateway is told where the curator pages are (``[access] curator_url``): it never
    builds their address from the top layer's ``[airflow]`` section; a bad one is named."""
    env = {
        "HARVESTFLOW_AIRFLOW__HOST": "10.9.9.9",
        "HARVESTFLOW_AIRFLOW__PORT": "9999",
        "HARVESTFLOW_ACCESS__CURATOR_URL": "https://curators.archive.example/curator",
    }
    cfg = AccessConfig.from_settings(settings_mod.load(environ=env))
    assert cfg.login_check_url == "https://curators.archive.example/curator/"
    assert cfg.signin_url == "https://curators.archive.example/curator/reading-room"
    assert cfg.curator_host == "curators.archive.example"
    bad = {**env, "HARVESTFLOW_ACCESS__CURATOR_URL": "curators.archive.example"}
    with pytest.raises(SettingsError, match=r"\[access\] curator_url"):
        AccessConfig.from_settings(settings_mod.load(environ=bad))


def test_the_curator_pages_host_is_told_apart_from_the_replay_site(
    access_settings: settings_mod.Settings,
) -> None:
    """The test settings put the gateway on Airflow's host: replay links go to ``localhost``,
    and a request naming Airflow's host is known as such (the gateway redirects it: the
    browser test)."""
    cfg = AccessConfig.from_settings(access_settings)
    assert cfg.curator_host == "127.0.0.1" and cfg.host == "127.0.0.1"
    assert cfg.url == f"http://localhost:{cfg.port}/"
    assert cfg.on_curator_site(f"127.0.0.1:{cfg.port}") and cfg.on_curator_site("127.0.0.1")
    assert not cfg.on_curator_site(f"localhost:{cfg.port}") and not cfg.on_curator_site(None)


def network(driver: WebDriver, host: str, pages: str) -> list[dict[str, Any]]:
    """The requests pages under ``pages`` made to ``host`` (Chromium's DevTools log): URL, the
    Cookie header sent, the cookies withheld, and the status of the answer."""
    seen: dict[str, dict[str, Any]] = {}
    for entry in driver.get_log("performance"):
        event = json.loads(entry["message"])["message"]
        params = event.get("params", {})
        req = seen.setdefault(params.get("requestId", ""), {})
        if event["method"] == "Network.requestWillBeSent":
            req["url"] = params["request"]["url"]
            req["page"] = params.get("documentURL", "")
        elif event["method"] == "Network.requestWillBeSentExtraInfo":
            headers = {k.lower(): v for k, v in params.get("headers", {}).items()}
            req["cookie"] = headers.get("cookie", "")
            req["withheld"] = [
                c["cookie"]["name"]
                for c in params.get("associatedCookies", [])
                if c["blockedReasons"]
            ]
        elif event["method"] == "Network.responseReceived":
            req["status"] = params["response"]["status"]
    return [
        r
        for r in seen.values()
        if str(r.get("url", "")).startswith(host) and str(r.get("page")).startswith(pages)
    ]


@pytest.mark.services
@pytest.mark.airflow
@pytest.mark.slow
def test_an_archived_pages_script_cannot_act_as_the_signed_in_curator(
    db_engine: sa.Engine,
    access_settings: settings_mod.Settings,
    airflow_api: tuple[str, str],
) -> None:
    settings = access_settings
    base, password = airflow_api
    cfg = AccessConfig.from_settings(settings)
    page = ATTACK.replace("AIRFLOW", base).encode()
    chain_job(db_engine, settings.data_dir, "evil", [[Page(EVIL, page, "text/html")]])
    service = ReplayService(settings)
    service.start()
    try:
        assert get(cfg.replay_url("all", "2030", EVIL, "id_")) == (200, page)
        log = {"goog:loggingPrefs": {"performance": "ALL"}}
        with chromium(capabilities=log) as driver:
            airflow_login(driver, base, "admin", password)
            signed_in = {c["name"] for c in driver.get_cookies()}
            assert "_token" in signed_in
            # in pywb's frame; through the gateway's own address (on Airflow's host: sent to
            # the replay site); as archived, unrewritten (id_: the browser's own fetch)
            gateway = f"http://{cfg.host}:{cfg.port}/"
            for start, modifier in ((cfg.url, ""), (gateway, ""), (cfg.url, "id_")):
                driver.get(f"{start}all/20261122031500{modifier}/{EVIL}")
                assert driver.current_url.startswith(cfg.url), driver.current_url
                if not modifier:
                    frame = WebDriverWait(driver, 120).until(
                        lambda d: d.find_elements(By.CSS_SELECTOR, "iframe#replay_iframe")
                    )[0]
                    driver.switch_to.frame(frame)
                out = WebDriverWait(driver, 120).until(
                    lambda d: d.execute_script("return window.hf_attack")
                )
                driver.switch_to.default_content()
                # nothing of Airflow's is read: no cookie, no answer of its, no frame around
                cookies = out["cookie"] + "".join(f[1] for f in out["frames"])
                assert not any(f"{name}=" in cookies for name in signed_in), out
                for read in out["reads"]:  # refused, or (wombat's rewrite) pywb's not-found
                    assert read[2].startswith("refused") or read[3] != 200, read
                assert ["opener", "none"] in out["frames"], out["frames"]
            # the page's own requests reached Airflow without the curator's cookies: refused
            sent = network(driver, base, cfg.url)
            paths = {r["url"].removeprefix(base) for r in sent}
            assert paths >= {"/api/v2/variables", "/curator/", "/curator/records/new"}, sent
            for request in sent:
                assert not any(f"{name}=" in request.get("cookie", "") for name in signed_in), (
                    request
                )
                assert "_token" in request["withheld"], request  # withheld: SameSite
                assert request.get("status") in (None, 401, 403, 307), request
        # nothing was changed: no variable made by the page
        token = _token(base, password)
        req = urllib.request.Request(
            f"{base}/api/v2/variables", headers={"Authorization": f"Bearer {token}"}
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            keys = {v["key"] for v in json.load(resp)["variables"]}
        assert "archived_page_was_here" not in keys
    finally:
        service.stop()


def _token(base: str, password: str) -> str:
    body = json.dumps({"username": "admin", "password": password}).encode()
    req = urllib.request.Request(
        f"{base}/auth/token", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=30) as resp:
        return str(json.load(resp)["access_token"])
