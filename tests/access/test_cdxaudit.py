"""A capture an ``exclude`` rule leaves out of a URL-search answer (pywb's CDX API through our
gateway) is logged in the refusal log with the rule that refused it; one the rules allow is
not; the ACL user that finds them cannot be sent by a reader.

Real chain (``chain_job``), real rules from the CLI, real pywb from the replay venv behind the
gateway."""

from __future__ import annotations

import time
import urllib.request
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from access.config import AccessConfig
from access.service import ReplayService
from harvestflow import settings as settings_mod
from tests.support.access_rules import page
from tests.support.command import harvestflow as cli
from tests.support.corpus import chain_job
from tests.support.replay import cdx

pytestmark = pytest.mark.services


def refused(cfg: AccessConfig) -> list[str]:
    try:
        return cfg.refused_log.read_text().splitlines()
    except FileNotFoundError:
        return []


def wait_lines(cfg: AccessConfig, n: int, timeout: float = 60.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while len(lines := refused(cfg)) < n:
        assert time.monotonic() < deadline, lines
        time.sleep(0.3)
    time.sleep(1.0)  # nothing more comes
    return refused(cfg)


def test_captures_excluded_from_url_search_are_logged_with_their_rule(
    db_engine: sa.Engine, access_settings: settings_mod.Settings
) -> None:
    settings = access_settings
    cfg = AccessConfig.from_settings(settings)
    old = datetime(2021, 6, 1, 12, tzinfo=UTC)
    secret = "http://excl.test/private/a.html"
    public = "http://excl.test/b.html"
    fresh = "http://news.test/today.html"
    other = "http://open.test/c.html"
    chain_job(
        db_engine,
        settings.data_dir,
        "refusals",
        [
            [
                page(secret, "secret", old),
                page(public, "public", old),
                page(fresh, "fresh", datetime.now(UTC) - timedelta(days=1)),
                page(other, "other", old),
            ]
        ],
    )
    for args in (
        ("http://excl.test/private/", "--policy", "exclude", "--reason", "privacy request 4"),
        ("http://news.test/", "--policy", "exclude", "--embargo-days", "30",
         "--reason", "press embargo"),
    ):  # fmt: skip
        done = cli("access", "rules", "add", *args, "--user", "alice")
        assert done.returncode == 0, done.stderr
    service = ReplayService(settings)
    service.start()
    try:
        # the answers leave the excluded captures out...
        assert cdx(cfg.url, "all", secret) == []
        assert [c["url"] for c in cdx(cfg.url, "all", "excl.test", "host")] == [public]
        assert cdx(cfg.url, "all", fresh) == []
        assert [c["url"] for c in cdx(cfg.url, "all", other)] == [other]
        # ...and each left-out capture is logged once per answer, with the rule that refused it
        lines = wait_lines(cfg, 3)
        assert len(lines) == 3, lines
        by_request = {line.split("\t")[3]: line for line in lines}
        exact = next(v for k, v in by_request.items() if "private" in k)
        host = next(v for k, v in by_request.items() if "matchType=host" in k)
        embargo = next(v for k, v in by_request.items() if "news.test" in k)
        for line in (exact, host):
            assert (
                "\t200\t" in line and "excluded from the answer: test,excl)/private/a.html" in line
            )
            assert "access rule 1 exclude test,excl)/private (privacy request 4)" in line
        assert "test,news)/today.html" in embargo and "embargo 30 days (press embargo)" in embargo

        # a reader sending pywb's ACL user header gets nothing more (the gateway drops it)
        audit_user = (cfg.root / "acl" / "audit-user").read_text().strip()
        req = urllib.request.Request(
            f"{cfg.url}all/cdx?url={secret}&output=json",
            headers={"X-Pywb-ACL-User": audit_user},
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            assert resp.read().strip() == b""
        # pywb itself, asked as that user, has the capture: what the audit compares against
        req = urllib.request.Request(
            f"{cfg.pywb_url}all/cdx?url={secret}&output=json",
            headers={"X-Pywb-ACL-User": audit_user},
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            assert secret.encode() in resp.read()
        assert len(wait_lines(cfg, 4)) == 4  # the reader's query was logged as refused too
    finally:
        service.stop()
