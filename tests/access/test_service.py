"""The replay service's listening addresses and the secrecy of its ACL file, on the real service.

The gateway is put on 127.0.0.2: on Linux all of 127.0.0.0/8 is loopback, so it stands for a
public address here, one that is not the loopback 127.0.0.1 where pywb, the WARC resolver and
the search page must stay. Whoever reaches the gateway's address must reach nothing else: pywb's
own port would serve past the reading room, the resolver hands out whole WARCs, and the ACL
file names the audit user for whom pywb lifts every rule.
"""

from __future__ import annotations

import http.client
import os
import stat

import pytest
import sqlalchemy as sa

from access import pywbconfig, rules
from access.cdxaudit import audit_user
from access.config import INTERNAL_HOST, AccessConfig
from access.definitions import acl_file
from access.publish import publish
from access.service import ReplayService
from harvestflow import settings as settings_mod
from tests.support.corpus import Page, chain_job
from tests.support.environment import free_port
from tests.support.replay import get

pytestmark = pytest.mark.services
GATEWAY_HOST = "127.0.0.2"


def status_at(host: str, port: int, path: str) -> int | None:
    """The status of ``GET path`` at ``host:port``; None when nothing listens there."""
    conn = http.client.HTTPConnection(host, port, timeout=30)
    try:
        conn.request("GET", path)
        return conn.getresponse().status
    except ConnectionRefusedError:
        return None
    finally:
        conn.close()


def test_pywb_and_the_resolver_listen_on_loopback_only_never_on_the_gateways_address(
    db_engine: sa.Engine, access_settings: settings_mod.Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARVESTFLOW_ACCESS__URL", f"http://{GATEWAY_HOST}:{free_port()}/")
    settings_mod.reset()
    settings = settings_mod.get_settings()
    cfg = AccessConfig.from_settings(settings)
    assert cfg.host == GATEWAY_HOST and cfg.url == f"http://{GATEWAY_HOST}:{cfg.port}/"
    url = "http://listen.test/page.html"
    body = b"<html><body><h1>listening</h1></body></html>"
    names = chain_job(db_engine, settings.data_dir, "listen", [[Page(url, body, "text/html")]])
    service = ReplayService(settings)
    service.start()
    try:
        # through the gateway, on its address, the capture replays
        status, got = get(cfg.replay_url("all", "2030", url, "id_"))
        assert (status, got) == (200, body)
        # pywb and the resolver answer on loopback, where the gateway forwards
        assert status_at(INTERNAL_HOST, cfg.pywb_port, "/") == 200
        assert status_at(INTERNAL_HOST, cfg.resolver_port, "/health") == 200
        assert status_at(INTERNAL_HOST, cfg.resolver_port, f"/warc/{names[0]}") == 200
        # ... and not on the gateway's address: nothing listens there
        assert status_at(GATEWAY_HOST, cfg.pywb_port, "/all/cdx?url=listen.test/*") is None
        assert status_at(GATEWAY_HOST, cfg.resolver_port, f"/warc/{names[0]}") is None
        assert status_at(GATEWAY_HOST, cfg.resolver_port, "/health") is None
        # nor is the gateway itself on loopback's 127.0.0.1: it listens where it is told
        assert status_at(INTERNAL_HOST, cfg.port, "/_health") is None
    finally:
        service.stop()


def test_the_acl_file_naming_the_audit_user_is_readable_by_its_owner_only(
    db_engine: sa.Engine, access_settings: settings_mod.Settings
) -> None:
    settings = access_settings
    cfg = AccessConfig.from_settings(settings)
    acl = acl_file(cfg)
    # an older install: the folder and the file world-readable
    acl.parent.mkdir(parents=True)
    acl.write_text("")
    os.chmod(acl, 0o644)
    os.chmod(acl.parent, 0o755)
    pywbconfig.write(settings)  # what `access serve` does at each start
    assert stat.S_IMODE(acl.stat().st_mode) == 0o600
    assert stat.S_IMODE(acl.parent.stat().st_mode) == 0o700

    # a new version of the rules (the audit user in it) is written private from the start
    os.chmod(acl, 0o644)
    rules.add(db_engine, "http://secret.test/", "block", user="alice")
    publish(settings, db_engine)
    user = audit_user(cfg)
    assert user and user in acl.read_text()
    assert stat.S_IMODE(acl.stat().st_mode) == 0o600
    pywbconfig.write(settings)
    assert stat.S_IMODE(acl.stat().st_mode) == 0o600
