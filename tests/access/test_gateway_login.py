"""Reading-room sign-in through the gateway: a token the curator pages stop accepting (signed
out, revoked) closes replay within :data:`access.readerlogin.TTL_S` seconds, not a minute; the
memory of answers is bounded whatever the number of bogus tokens sent.

Real replay service (gateway, pywb, resolver) asked from 127.0.0.2, outside the reading room's
range; the login is checked by the real curator pages app served on loopback, its Airflow login
replaced by the test users' dependency of tests/plugins/signed_in.py (a user removed from it is
a token signed out: the pages answer 401 from then on, as Airflow's revoked tokens get)."""

from __future__ import annotations

import http.client
import secrets
import time
from datetime import UTC, datetime
from urllib.parse import urlsplit

import pytest
import sqlalchemy as sa

from access.config import AccessConfig
from access.readerlogin import TTL_S, LoginChecker
from access.service import ReplayService
from app.curator.actions import Role
from app.curator.webapp import create_app
from harvestflow import settings as settings_mod
from tests.support.access_rules import page
from tests.support.corpus import chain_job
from tests.support.signed_in import auth_for, serving

pytestmark = pytest.mark.services

URL = "http://room.test/page.html"


def replay_from_outside(cfg: AccessConfig, token: str) -> int:
    conn = http.client.HTTPConnection(
        cfg.host, cfg.port, timeout=30, source_address=("127.0.0.2", 0)
    )
    try:
        conn.request(
            "GET",
            f"/all/2030id_/{URL}",
            headers={"Host": urlsplit(cfg.url).netloc, "Authorization": f"Bearer {token}"},
        )
        resp = conn.getresponse()
        resp.read()
        return resp.status
    finally:
        conn.close()


def test_a_signed_out_token_closes_replay_within_seconds(
    db_engine: sa.Engine, access_settings: settings_mod.Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = access_settings
    token = secrets.token_hex(16)
    users = {token: Role.VIEWER}
    app = create_app(lambda: db_engine, data_dir=settings.data_dir, auth=auth_for(users))
    chain_job(
        db_engine,
        settings.data_dir,
        "room",
        [[page(URL, "room", datetime(2024, 1, 1, tzinfo=UTC))]],
    )
    with serving(app) as curator:
        monkeypatch.setenv("HARVESTFLOW_ACCESS__READING_ROOM", "true")
        monkeypatch.setenv("HARVESTFLOW_ACCESS__READING_ROOM_RANGES", '["127.0.0.1/32"]')
        monkeypatch.setenv("HARVESTFLOW_ACCESS__LOGIN_CHECK_URL", curator + "/")
        settings_mod.reset()
        settings = settings_mod.get_settings()
        cfg = AccessConfig.from_settings(settings)
        service = ReplayService(settings)
        service.start()
        try:
            assert replay_from_outside(cfg, token) == 200  # signed in: admitted
            assert replay_from_outside(cfg, "bogus") == 403
            del users[token]  # signed out: the curator pages refuse the token from now on
            time.sleep(TTL_S + 0.5)
            assert replay_from_outside(cfg, token) == 403
        finally:
            service.stop()


def test_the_login_memory_is_bounded_and_forgets_the_least_recently_used(
    db_engine: sa.Engine, access_settings: settings_mod.Settings
) -> None:
    """Unique bogus tokens (one request each) never grow the memory past its bound; a valid
    token pushed out is asked again, and still admitted."""
    settings = access_settings
    token = secrets.token_hex(16)
    app = create_app(
        lambda: db_engine, data_dir=settings.data_dir, auth=auth_for({token: Role.VIEWER})
    )
    with serving(app) as curator:
        checker = LoginChecker(curator + "/", max_entries=16)
        assert checker(token)
        for _ in range(200):
            assert not checker(secrets.token_hex(24))
            assert len(checker) <= 16
        assert len(checker) == 16
        assert checker(token)  # forgotten, asked again: the answer is the curator pages'
