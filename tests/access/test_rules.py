"""Access rules against the real replay service and full-text search.

Captures go through the real indexing chain and text extraction; rules are managed with the
real CLI (``harvestflow access rules``), stored versioned in the harvest DB and applied by pywb
(its ACL file, generated) and by the search query; the service is our gateway in front of pywb
from the replay venv. Reading room: the gateway bound to 127.0.0.1 is asked from 127.0.0.2
(another loopback address) and from 127.0.0.1.
"""

from __future__ import annotations

import html
import http.client
import json
import re
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

import pytest
import sqlalchemy as sa

from access.config import AccessConfig
from access.service import ReplayService
from harvestflow import settings as settings_mod
from indexing.fulltext import extract_file
from tests.support.access_rules import page
from tests.support.command import harvestflow as cli
from tests.support.corpus import chain_job
from tests.support.environment import oracle
from tests.support.replay import cdx, get

pytestmark = pytest.mark.services
T = TypeVar("T")


def search_urls() -> set[str]:
    out = cli("search", "query", "quokka", "--json", "--per-page", "50")
    assert out.returncode == 0, out.stderr
    return {h["url"] for h in json.loads(out.stdout)["hits"]}


def replay_status(cfg: AccessConfig, url: str) -> tuple[int, bytes]:
    return get(cfg.replay_url("all", "2030", url, "id_"))


def get_from(source: str, cfg: AccessConfig, path: str) -> tuple[int, bytes]:
    """GET on the gateway from a given local address (127.0.0.2 is loopback too), naming the
    replay site (the gateway's address is Airflow's host: it would send the client there)."""
    conn = http.client.HTTPConnection(cfg.host, cfg.port, timeout=30, source_address=(source, 0))
    try:
        conn.request("GET", path, headers={"Host": urlsplit(cfg.url).netloc})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def test_block_and_embargo_apply_to_search_and_replay_and_changes_take_effect_while_serving(
    db_engine: sa.Engine, access_settings: settings_mod.Settings
) -> None:
    settings = access_settings
    cfg = AccessConfig.from_settings(settings)
    now = datetime.now(UTC)
    old = datetime(2021, 6, 1, 12, tzinfo=UTC)
    secret = "http://blocked.test/secret.html"
    public = "http://blocked.test/public/ok.html"
    fresh = "http://embargo.test/new.html"
    aged = "http://embargo.test/old.html"
    opened = "http://open.test/page.html"
    names = chain_job(
        db_engine,
        settings.data_dir,
        "rules",
        [
            [
                page(secret, "secret", old),
                page(public, "public", old),
                page(fresh, "fresh", now - timedelta(days=2)),
                page(aged, "aged", old),
                page(opened, "opened", old),
            ]
        ],
    )
    for name in names:
        extract_file(name)
    everything = {secret, public, fresh, aged, opened}
    assert search_urls() == everything  # no rule yet

    # rules from the CLI, each change by a named user; the longest prefix decides
    added = cli("access", "rules", "add", "http://blocked.test/", "--policy", "block",
                "--reason", "court order 12/2026", "--user", "alice")  # fmt: skip
    assert added.returncode == 0, added.stderr
    assert "block test,blocked)/" in added.stdout
    assert cli("access", "rules", "add", "test,blocked)/public/", "--policy", "allow",
               "--user", "alice").returncode == 0  # fmt: skip
    assert cli("access", "rules", "add", "http://embargo.test/", "--policy", "block",
               "--embargo-days", "365", "--reason", "publisher embargo",
               "--user", "bob").returncode == 0  # fmt: skip
    bad = cli("access", "rules", "add", "example.org", "--policy", "block", "--user", "bob")
    assert bad.returncode == 1 and "neither a URL" in bad.stderr

    # search: the blocked page and the capture under embargo are gone, the rest stays
    assert search_urls() == {public, aged, opened}

    service = ReplayService(settings)
    service.start()
    try:
        # the search page on the gateway: the same rules, results linking into replay there
        status, body = get(f"{cfg.url}search/?q=quokka")
        assert status == 200, body[:300]
        assert f'href="{cfg.replay_url("all", "20210601120000", public)}"'.encode() in body
        assert secret.encode() not in body and fresh.encode() not in body
        # replay: refused by pywb (451, its "blocked" page), allowed where no rule says no
        status, body = replay_status(cfg, secret)
        assert status == 451, body[:300]
        assert b"Consultation restricted" in body and secret.encode() in body
        assert b'<html lang="en">' in body and b"Web archive" in body  # our reader page
        french = urllib.request.Request(
            cfg.replay_url("all", "2030", secret, "id_"), headers={"Accept-Language": "fr"}
        )
        with pytest.raises(urllib.error.HTTPError) as refused_fr:
            urllib.request.urlopen(french, timeout=30)
        assert refused_fr.value.code == 451
        page_fr = html.unescape(refused_fr.value.read().decode())
        assert "Consultation restreinte" in page_fr and "règle d'accès" in page_fr, page_fr[:500]
        assert replay_status(cfg, fresh)[0] == 451  # younger than the embargo
        for url in (public, aged, opened):
            status, body = replay_status(cfg, url)
            assert status == 200 and b"quokka" in body, (url, status)
        # URL search (pywb's CDX API) marks the blocked captures
        status, body = get(f"{cfg.url}all/cdx?output=json&url={secret}")
        assert status == 200 and json.loads(body.splitlines()[0])["access"] == "block"
        # every refusal is logged with the rule that refused it
        refused = cfg.refused_log.read_text()
        assert "court order 12/2026" in refused and "block test,blocked)/" in refused
        assert "embargo 365 days (publisher embargo)" in refused

        # while serving: exclude open.test, lift the block of blocked.test
        assert cli("access", "rules", "add", "http://open.test/", "--policy", "exclude",
                   "--reason", "withdrawn", "--user", "carol").returncode == 0  # fmt: skip
        assert cli("access", "rules", "remove", "test,blocked)/", "--user", "carol").returncode == 0
        assert replay_status(cfg, opened)[0] == 404  # excluded: as if never archived
        assert cdx(cfg.url, "all", opened) == []
        status, body = replay_status(cfg, secret)
        assert status == 200 and b"quokka" in body
        assert search_urls() == {secret, public, aged}
        assert "exclude test,open)/ (withdrawn)" in cfg.refused_log.read_text()
    finally:
        service.stop()

    # versioned: every change kept with who and when
    history = json.loads(cli("access", "rules", "list", "--history", "--json").stdout)
    assert [(r["surt"], r["created_by"], r["removed_by"]) for r in history] == [
        ("test,blocked)/", "alice", "carol"),
        ("test,blocked)/public", "alice", None),  # canonical: keys have no trailing "/"
        ("test,embargo)/", "bob", None),
        ("test,open)/", "carol", None),
    ]
    assert all(r["created_at"] for r in history) and history[0]["removed_at"]


def test_reading_room_refuses_addresses_outside_its_ranges(
    db_engine: sa.Engine, access_settings: settings_mod.Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARVESTFLOW_ACCESS__READING_ROOM", "true")
    monkeypatch.setenv("HARVESTFLOW_ACCESS__READING_ROOM_RANGES", '["127.0.0.1/32"]')
    settings_mod.reset()
    settings = settings_mod.get_settings()
    cfg = AccessConfig.from_settings(settings)
    assert cfg.host == "127.0.0.1"
    url = "http://reading.test/room.html"
    names = chain_job(
        db_engine,
        settings.data_dir,
        "room",
        [[page(url, "room", datetime(2024, 1, 1, tzinfo=UTC))]],
    )
    for name in names:
        extract_file(name)
    service = ReplayService(settings)
    service.start()
    try:
        path = f"/all/2030id_/{url}"
        status, body = get_from("127.0.0.1", cfg, path)
        assert status == 200 and b"quokka" in body
        status, body = get_from("127.0.0.2", cfg, path)
        assert status == 403
        assert b"Consultation restricted" in body and b"127.0.0.2" in body  # a page, not a break
        assert b"</html>" in body
        assert get_from("127.0.0.2", cfg, f"/all/cdx?url={url}")[0] == 403  # URL search too
        assert get_from("127.0.0.2", cfg, "/")[0] == 200  # the home page stays public
        # the search page: for the reading room only (its snippets are the archive's text)
        status, body = get_from("127.0.0.1", cfg, "/search/?q=quokka")
        assert status == 200, body[:300]
        assert f'href="{cfg.replay_url("all", "20240101000000", url)}"'.encode() in body
        status, body = get_from("127.0.0.2", cfg, "/search/?q=quokka")
        shown = re.sub(rb'<a id="sign-in" href="[^"]*">', b"", body)  # next= is the query
        assert status == 403 and b"Consultation restricted" in body and b"quokka" not in shown
        assert get_from("127.0.0.1", cfg, "/search")[0] == 301  # to /search/
        refused = cfg.refused_log.read_text().splitlines()
        assert len(refused) == 3
        assert all("\t127.0.0.2\t403\t" in line for line in refused)
        assert "reading room: address 127.0.0.2 is outside the reading room" in refused[0]
    finally:
        service.stop()


def wait_for(check: Callable[[], T], timeout: float = 60.0) -> T:
    deadline = time.monotonic() + timeout
    while not (result := check()):
        assert time.monotonic() < deadline, "not served in time"
        time.sleep(0.5)
    return result


def _hid(engine: sa.Engine, name: str) -> int:
    with engine.connect() as conn:
        return int(
            conn.execute(
                sa.text("SELECT harvest_id FROM harvestdefinitions WHERE name = :n"), {"n": name}
            ).scalar_one()
        )


def test_a_collection_per_definition_and_a_guided_tour_on_the_home_page(
    db_engine: sa.Engine, access_settings: settings_mod.Settings, tmp_path: Path
) -> None:
    settings = access_settings
    cfg = AccessConfig.from_settings(settings)
    when = datetime(2025, 5, 4, 3, 2, 1, tzinfo=UTC)
    mine, theirs, later = (
        "http://elections.test/",
        "http://sports.test/",
        "http://late.test/",
    )
    chain_job(db_engine, settings.data_dir, "Elections 2026", [[page(mine, "vote", when)]])
    chain_job(db_engine, settings.data_dir, "Sports", [[page(theirs, "match", when)]])
    elections = f"harvest-{_hid(db_engine, 'Elections 2026')}"
    sports = f"harvest-{_hid(db_engine, 'Sports')}"
    service = ReplayService(settings)
    service.start()
    try:
        # each definition's collection holds only its jobs' captures; `all` holds both
        assert [c["url"] for c in cdx(cfg.url, elections, mine)] == [mine]
        assert cdx(cfg.url, elections, theirs) == []
        assert [c["url"] for c in cdx(cfg.url, sports, theirs)] == [theirs]
        assert cdx(cfg.url, "all", mine) and cdx(cfg.url, "all", theirs)
        status, body = get(cfg.replay_url(elections, "20250504030201", mine, "id_"))
        assert status == 200 and b"vote" in body
        # a definition harvested while serving gets its collection without a restart
        chain_job(db_engine, settings.data_dir, "Late", [[page(later, "late", when)]])
        late = f"harvest-{_hid(db_engine, 'Late')}"
        assert wait_for(lambda: get(f"{cfg.url}{late}/cdx?url={later}")[1].strip())

        # a guided tour from the CLI, shown on the home page at once
        for args in (
            ("add", "elections-2026", "--title", "The 2026 elections",
             "--description", "Campaign sites <as they were>", "--user", "curator"),
            ("add-site", "elections-2026", mine, "--capture", "20250504030201",
             "--collection", elections, "--title", "Official results {{ 7*7 }}"),
        ):  # fmt: skip
            done = cli("access", "tours", *args)
            assert done.returncode == 0, done.stderr
        status, home = get(cfg.url)
        assert status == 200
        text = home.decode()
        assert "The 2026 elections" in text
        assert '<form id="hf-search" class="box" action="/search/" method="get">' in text
        assert "Campaign sites &lt;as they were&gt;" in text  # escaped, never markup
        assert f'href="/{elections}/20250504030201/{mine}"' in text
        # the title is text, never a template: the tour's markup shows the braces, not 49
        tour = text[text.index('id="tour-elections-2026"') :].split("</section>", 1)[0]
        assert "Official results {{ 7*7 }}" in tour and "49" not in tour
        assert f'<a href="/{elections}/">Elections 2026</a>' in text
        assert f"selective harvest · {elections}" in text
        shown = cli("access", "tours", "show", "elections-2026").stdout
        assert f"1. /{elections}/20250504030201/{mine}" in shown
        assert cli("access", "tours", "remove", "elections-2026").returncode == 0
        assert "The 2026 elections" not in get(cfg.url)[1].decode()
    finally:
        service.stop()


def oracle_keys(urls: list[str]) -> list[str]:
    """The reference SURT keys (the ``surt`` package of the oracle venv) of ``urls``."""
    code = "import json,sys,surt; print(json.dumps([surt.surt(u) for u in json.load(sys.stdin)]))"
    done = subprocess.run(
        [str(oracle("python")), "-c", code], input=json.dumps(urls), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout))


def test_rules_typed_in_upper_case_or_percent_encoded_match_the_canonical_keys(
    db_engine: sa.Engine, access_settings: settings_mod.Settings
) -> None:
    """A SURT prefix is canonicalised as keys are made, so a rule typed with upper case, a
    %-encoded path, ``www`` or Heritrix's ``http://(…)`` form refuses the captures it names
    (it was shown in force and never matched); one that cannot match is refused."""
    settings = access_settings
    cfg = AccessConfig.from_settings(settings)
    old = datetime(2021, 6, 1, 12, tzinfo=UTC)
    upper = "http://upper.test/Private/Report.html"
    tilde = "http://pct.test/~user/home.html"
    www = "http://www.heritrix.test/Dir/x.html"
    kept = "http://upper.test/public.html"
    chain_job(
        db_engine,
        settings.data_dir,
        "canonical",
        [[page(u, "canon", old) for u in (upper, tilde, www, kept)]],
    )
    typed = {
        "TEST,Upper)/Private/": "test,upper)/private",
        "test,pct)/%7Euser/": "test,pct)/~user",
        "http://(test,heritrix,www,)/DIR/": "test,heritrix)/dir",
    }
    for prefix, key in typed.items():
        done = cli("access", "rules", "add", prefix, "--policy", "block", "--user", "alice")
        assert done.returncode == 0, done.stderr
        assert "in force: rule" in done.stdout and f"block {key}\n" in done.stdout, done.stdout
        assert f"canonicalised to {key!r}" in done.stdout
    # the stored prefixes are prefixes of the reference implementation's keys
    for (url, key), reference in zip(
        [(upper, "test,upper)/private"), (tilde, "test,pct)/~user"), (www, "test,heritrix)/dir")],
        oracle_keys([upper, tilde, www]),
        strict=True,
    ):
        assert reference.startswith(key), (url, reference, key)
    # a host prefix with a leading www can never match (keys drop it): refused, saying why
    refused = cli("access", "rules", "add", "test,upper,www", "--policy", "block", "--user", "a")
    assert refused.returncode == 1 and "drop a leading 'www'" in refused.stderr
    for bad in ("test,up/per)/", "ftp://upper.test/", "test,upper:80"):
        done = cli("access", "rules", "add", bad, "--policy", "block", "--user", "a")
        assert done.returncode == 1 and bad in done.stderr, (bad, done.stderr)
    listed = cli("access", "rules", "list").stdout
    assert "NEVER MATCHES" not in listed and listed.count("block test,") == 3

    service = ReplayService(settings)
    service.start()
    try:
        for url in (upper, tilde, www):
            assert replay_status(cfg, url)[0] == 451, url
        status, body = replay_status(cfg, kept)
        assert status == 200 and b"canon" in body
        # removing by the prefix as typed finds the canonical rule
        assert (
            cli("access", "rules", "remove", "TEST,UPPER)/private/", "--user", "a").returncode == 0
        )
        assert replay_status(cfg, upper)[0] == 200
    finally:
        service.stop()


def test_rules_list_marks_a_stored_prefix_that_can_never_match(
    db_engine: sa.Engine, access_settings: settings_mod.Settings
) -> None:
    """A rule stored before prefixes were canonicalised (upper case, as typed) is shown as
    never matching, with what to do; a canonical one is not."""
    with db_engine.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO access_rules (surt, policy, reason, created_by) VALUES"
                " ('test,legacy)/Private/', 'block', 'old', 'alice'),"
                " ('test,fine)/private', 'block', 'new', 'alice')"
            )
        )
    listed = cli("access", "rules", "list").stdout.splitlines()
    legacy = next(line for line in listed if "test,legacy)/Private/" in line)
    fine = next(line for line in listed if "test,fine)/private" in line)
    assert "NEVER MATCHES: not canonical, add it again" in legacy
    assert "NEVER MATCHES" not in fine
