"""Reading-room sign-in by token, through the real gateway: a reader outside the reading room's
address ranges is let in by a token the curator pages accept (the ``_token`` cookie Airflow's
UI sets, or a Bearer token), for every consultation surface (replay, URL search, full-text
search); without a token, or with one the curator pages refuse, the reader gets the refusal
page and the refusal is logged; signing out closes consultation again.

The replay service (gateway, pywb, resolver, search page) is started by our code on loopback
and asked from 127.0.0.2 (outside the range 127.0.0.1/32); the gateway checks tokens with the
real curator pages app served on loopback, whose Airflow login is replaced by the test users'
dependency of tests/plugins/signed_in.py: a user removed from it is a signed-out token (the
pages answer 401 from then on, as they do for a token Airflow revoked at sign-out).
"""

from __future__ import annotations

import http.client
import re
import secrets
import time
from datetime import UTC, datetime
from urllib.parse import quote, urlsplit

import pytest
import sqlalchemy as sa

from access.config import AccessConfig
from access.service import ReplayService
from app.curator.actions import Role
from app.curator.webapp import create_app
from harvestflow import settings as settings_mod
from indexing.fulltext import extract_file
from tests.support.access_rules import page
from tests.support.corpus import chain_job
from tests.support.signed_in import auth_for, serving

pytestmark = pytest.mark.services

URL = "http://reading-room.test/signed-in.html"
OUTSIDE = "127.0.0.2"  # loopback, outside the reading room's 127.0.0.1/32
SURFACES = {
    "replay": f"/all/2030id_/{URL}",
    "URL search": f"/all/cdx?url={quote(URL, safe='')}",
    "full-text search": "/search/?q=quokka",
}
# a signed-out token stops opening consultation once the gateway's memory of the curator
# pages' answer expires: a bound on correctness, far above that memory's few seconds
SIGN_OUT_BOUND_S = 90


def ask(cfg: AccessConfig, path: str, headers: dict[str, str]) -> tuple[int, bytes]:
    """GET ``path`` on the gateway from ``OUTSIDE``, on the replay site's own host name."""
    conn = http.client.HTTPConnection(cfg.host, cfg.port, timeout=30, source_address=(OUTSIDE, 0))
    try:
        conn.request("GET", path, headers={"Host": urlsplit(cfg.url).netloc, **headers})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def test_a_token_signs_a_reader_into_the_reading_room_and_signing_out_closes_it(
    db_engine: sa.Engine, access_settings: settings_mod.Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = secrets.token_urlsafe(24)
    users = {token: Role.VIEWER}
    curator_pages = create_app(
        lambda: db_engine, data_dir=access_settings.data_dir, auth=auth_for(users)
    )
    captures = [[page(URL, "signed", datetime(2024, 1, 1, tzinfo=UTC))]]
    for name in chain_job(db_engine, access_settings.data_dir, "reading-room", captures):
        extract_file(name)  # for the full-text search page
    with serving(curator_pages) as curator:
        monkeypatch.setenv("HARVESTFLOW_ACCESS__READING_ROOM", "true")
        monkeypatch.setenv("HARVESTFLOW_ACCESS__READING_ROOM_RANGES", '["127.0.0.1/32"]')
        monkeypatch.setenv("HARVESTFLOW_ACCESS__READING_ROOM_LOGIN", "true")
        monkeypatch.setenv("HARVESTFLOW_ACCESS__LOGIN_CHECK_URL", curator + "/")
        settings_mod.reset()
        cfg = AccessConfig.from_settings(settings_mod.get_settings())
        service = ReplayService(settings_mod.get_settings())
        service.start()
        try:
            cookie = {"Cookie": f"lang=fr; _token={token}"}
            bearer = {"Authorization": f"Bearer {token}"}
            for surface, path in SURFACES.items():
                for how, headers in (("cookie", cookie), ("bearer", bearer)):
                    status, body = ask(cfg, path, headers)
                    assert status == 200, (surface, how, body[:300])
                    assert b"quokka" in body or URL.encode() in body, (surface, how)
            refusals = {
                "no token": {},
                "a bad cookie token": {"Cookie": f"_token={secrets.token_urlsafe(24)}"},
                "a bad bearer token": {"Authorization": f"Bearer {secrets.token_urlsafe(24)}"},
                "an empty bearer token": {"Authorization": "Bearer "},
                "a garbled cookie": {"Cookie": '_token="unterminated'},
            }
            for surface, path in SURFACES.items():
                for how, headers in refusals.items():
                    status, body = ask(cfg, path, headers)
                    assert status == 403, (surface, how, body[:300])
                    # the sign-in link carries the reader's own request back (next=): not content
                    shown = re.sub(rb'<a id="sign-in" href="[^"]*">', b"", body)
                    assert b"Consultation restricted" in body and b"quokka" not in shown
            logged = cfg.refused_log.read_text().splitlines()
            assert len(logged) == len(SURFACES) * len(refusals)
            assert all(f"\t{OUTSIDE}\t403\t" in line for line in logged)
            assert all("outside the reading room and not signed in" in line for line in logged)
            assert token not in cfg.refused_log.read_text()  # tokens are never logged

            del users[token]  # signed out: the curator pages refuse the token from now on
            deadline = time.monotonic() + SIGN_OUT_BOUND_S
            while ask(cfg, SURFACES["replay"], cookie)[0] != 403:
                assert time.monotonic() < deadline, "a signed-out token still opens replay"
                time.sleep(0.5)
            for surface, path in SURFACES.items():
                for how, headers in (("cookie", cookie), ("bearer", bearer)):
                    status, body = ask(cfg, path, headers)
                    assert status == 403, (surface, how, "after sign-out", body[:300])
        finally:
            service.stop()
