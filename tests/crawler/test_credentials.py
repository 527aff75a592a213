"""Crawling behind a login on a loopback members' site: a form-login area with a
session cookie (CSRF token in the form, logout link), an HTTP Basic area and an HTTP Digest
area. Credentials are stored with the CLI (encrypted in the harvest DB), referenced by the
job spec, read decrypted by the crawler; the pages behind each login are captured, the logout
URL is never fetched, and the password is in no output file (WARCs decompressed), log or
console output."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import subprocess
from collections.abc import Iterator
from urllib.parse import parse_qs
from urllib.request import parse_http_list, parse_keqv_list

import pytest
import sqlalchemy as sa

from harvestflow.credentials import CredentialRef, refs_for_job
from tests.support.command import harvestflow
from tests.support.crawl import make_job, run_crawl
from tests.support.minisite import MiniSite, Reply, Served

USER = "curator-anne"
PASSWORD = "Tr0ub4dor&3-s3cr3t"
SESSION = "sid-7c1e9a"
NONCE = "dcd98b7102dd2f0e8b11d0f600bfb0c093"
WWW, BASIC, DIGEST = "www.members.test", "basic.members.test", "digest.members.test"
HTML = [("Content-Type", "text/html; charset=utf-8")]
LOGIN_FORM = b"""<html><body><h1>Log in</h1>
<form method="post" action="/login"><input type="hidden" name="csrf" value="tok-42">
<input type="text" name="user"><input type="password" name="pass">
<input type="submit" value="Log in"></form></body></html>"""


def _page(title: str, links: str = "") -> Reply:
    return Reply(200, f"<html><body><h1>{title}</h1>{links}</body></html>".encode(), HTML)


def _md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()


def _digest_ok(req: Served) -> bool:
    value = req.headers.get("Authorization", "")
    if not value.startswith("Digest "):
        return False
    p = parse_keqv_list(parse_http_list(value[7:]))
    ha1 = _md5(f"{p['username']}:{p['realm']}:{PASSWORD}")
    ha2 = _md5(f"{req.method}:{p['uri']}")
    expected = _md5(f"{ha1}:{p['nonce']}:{p['nc']}:{p['cnonce']}:{p['qop']}:{ha2}")
    return p["username"] == USER and p["response"] == expected


class _Members:
    def __init__(self, session_pages: int = 0) -> None:
        self.session_pages = session_pages  # members' pages a session may see (0: no end)
        self.sessions: dict[str, int] = {}  # session id → members' pages served
        self.site = MiniSite(self.handle, (WWW, BASIC, DIGEST))

    def _session_ok(self, req: Served) -> bool:
        cookies = dict(
            c.strip().split("=", 1) for c in req.headers.get("Cookie", "").split(";") if "=" in c
        )
        sid = cookies.get("sid")
        if sid not in self.sessions:
            return False
        if self.session_pages and self.sessions[sid] >= self.session_pages:
            return False
        self.sessions[sid] += 1
        return True

    def u(self, host: str, path: str) -> str:
        return self.site.url(host, path)

    def handle(self, req: Served) -> Reply | None:
        h, p = req.host, req.path
        if p == "/robots.txt":
            return Reply(200, b"User-agent: *\nDisallow:\n", [("Content-Type", "text/plain")])
        if h == WWW:
            if p == "/":
                links = (
                    '<a href="/members/">members</a> <a href="/logout">log out</a>'
                    f' <a href="{self.u(BASIC, "/area/")}">basic</a>'
                    f' <a href="{self.u(DIGEST, "/area/")}">digest</a>'
                )
                return _page("Home", links)
            if p == "/login" and req.method == "GET":
                return Reply(200, LOGIN_FORM, HTML)
            if p == "/login" and req.method == "POST":
                form = parse_qs(req.body.decode())
                ok = form == {"csrf": ["tok-42"], "user": [USER], "pass": [PASSWORD]}
                if not ok:
                    return _page("Wrong login")
                sid = f"{SESSION}-{len(self.sessions)}"
                self.sessions[sid] = 0
                return Reply(
                    302, b"", [("Location", "/members/"), ("Set-Cookie", f"sid={sid}; Path=/")]
                )
            if p.startswith("/members/"):
                if not self._session_ok(req):
                    return Reply(302, b"", [("Location", "/login")])
                if p == "/members/":
                    links = "".join(f'<a href="/members/a{i}.html">{i}</a>' for i in range(5))
                    return _page("Members home", '<a href="/members/article.html">a</a>' + links)
                if p == "/members/article.html" or p.startswith("/members/a"):
                    return _page("Members article")
            if p == "/logout":
                return _page("Logged out")
            return None
        if h == BASIC and p.startswith("/area/"):
            expected = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
            if req.headers.get("Authorization") != expected:
                return Reply(401, b"login", [("WWW-Authenticate", 'Basic realm="members"')])
            if p == "/area/":
                return _page("Basic area", '<a href="/area/page2.html">2</a>')
            return _page("Basic page 2")
        if h == DIGEST and p.startswith("/area/"):
            if not _digest_ok(req):
                challenge = f'Digest realm="digest-members", qop="auth", nonce="{NONCE}"'
                return Reply(401, b"login", [("WWW-Authenticate", challenge)])
            return _page("Digest area")
        return None


@pytest.fixture()
def members() -> Iterator[_Members]:
    s = _Members()
    yield s
    s.site.stop()


def _cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """``harvestflow credentials ARGS`` in this process: exit status, output, log lines."""
    return harvestflow("credentials", *args, stdin=stdin)


def _set_form_login(db_engine: sa.Engine, m: _Members) -> list[CredentialRef]:
    """Store the form login of www.members.test through the CLI; the job's credential refs."""
    done = _cli(
        "set",
        WWW,
        "--kind",
        "form",
        "--username",
        USER,
        "--password-stdin",
        "--login-url",
        m.u(WWW, "/login"),
        stdin=PASSWORD + "\n",
    )
    assert done.returncode == 0, done.stderr
    with db_engine.connect() as conn:
        return refs_for_job(conn, 2, ["members.test"])


def _all_bytes(path) -> bytes:  # type: ignore[no-untyped-def]
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)  # every member of a per-record gzipped WARC
    return data


def test_pages_behind_logins_are_captured_and_the_password_is_nowhere(db_engine, members, tmp_path):
    m = members
    outputs: list[str] = []
    for domain, kind, extra in (
        (
            WWW,
            "form",
            ["--login-url", m.u(WWW, "/login"), "--logout-url", m.u(WWW, "/logout")],
        ),
        (BASIC, "basic", []),
        (DIGEST, "digest", ["--realm", "digest-members"]),
    ):
        done = _cli(
            "set",
            domain,
            "--kind",
            kind,
            "--username",
            USER,
            "--password-stdin",
            *extra,
            stdin=PASSWORD + "\n",
        )
        assert done.returncode == 0, done.stderr
        outputs += [done.stdout, done.stderr]
    listed = _cli("list")
    assert listed.returncode == 0 and WWW in listed.stdout and "form" in listed.stdout
    outputs += [listed.stdout, listed.stderr]
    with db_engine.connect() as conn:
        stored = conn.execute(sa.text("SELECT secret FROM credentials")).scalars().all()
        refs = refs_for_job(conn, 2, ["members.test"])
    assert len(stored) == 3 and all(PASSWORD.encode() not in bytes(s) for s in stored)
    assert sorted(r.kind for r in refs) == ["basic", "digest", "form"]

    job = make_job(
        m.site,
        [m.u(WWW, "/")],
        {"max_hops": 3},
        credentials=[r.__dict__ for r in refs],
    )
    result = run_crawl(job, tmp_path / "job")
    outputs += [result.proc.stdout, result.proc.stderr]

    # behind the form login (session cookie), Basic and Digest
    for url in (
        m.u(WWW, "/members/"),
        m.u(WWW, "/members/article.html"),
        m.u(BASIC, "/area/page2.html"),
        m.u(DIGEST, "/area/"),
    ):
        assert result.line_for(url)[1] == "200", url
    post = [s for s in m.site.served if s.method == "POST"]
    assert len(post) == 1 and post[0].path == "/login"
    assert result.line_for(m.u(WWW, "/login"))[4] == "P"  # login page, POST: prerequisites
    # the logout link is never followed
    assert result.line_for(m.u(WWW, "/logout"))[1] == "-5001"
    assert "/logout" not in m.site.paths(WWW)

    # the password (and the Basic header that encodes it) in no output
    basic = base64.b64encode(f"{USER}:{PASSWORD}".encode())
    secrets = [PASSWORD.encode(), basic, PASSWORD.encode().replace(b"&", b"%26")]
    files = [p for p in result.out.rglob("*") if p.is_file()]
    assert any(p.name.endswith(".warc.gz") for p in files) and any(
        p.name == "crawler.log" for p in files
    )
    for path in [*files, tmp_path / "job-job.json"]:
        data = _all_bytes(path)
        for secret in secrets:
            assert secret not in data, f"secret found in {path}"
    for text in outputs:
        assert PASSWORD not in text and basic.decode() not in text
    warcs = b"".join(_all_bytes(p) for p in result.data_warcs())
    assert b"pass=%5Bredacted%5D" in warcs and b"Authorization: Basic [redacted]" in warcs
    assert json.loads((result.out / "job.json").read_text())["credentials"][0]["id"]


def test_warcs_with_redacted_requests_are_valid(db_engine, members, tmp_path):
    """The redacted POST request record's digests and lengths still verify (warcio check)."""
    from tests.support.crawl import ORACLE_BIN

    m = members
    refs = _set_form_login(db_engine, m)
    job = make_job(
        m.site, [m.u(WWW, "/members/")], {"max_hops": 1}, credentials=[r.__dict__ for r in refs]
    )
    result = run_crawl(job, tmp_path / "job")
    assert result.line_for(m.u(WWW, "/members/article.html"))[1] == "200"
    check = subprocess.run(
        [str(ORACLE_BIN / "warcio"), "check", "-v", *map(str, result.data_warcs())],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout[-2000:] + check.stderr[-2000:]
    removed = _cli("remove", str(refs[0].id))
    assert removed.returncode == 0 and _cli("list").stdout.strip() == "no credentials"
    assert _cli("remove", str(refs[0].id)).returncode == 1


def test_a_form_session_that_ends_is_opened_again(db_engine, tmp_path):
    """The site ends a session after 2 members' pages (redirect to /login): the crawler logs
    in again and every page is captured; the login is not repeated for nothing."""
    m = _Members(session_pages=2)
    try:
        refs = _set_form_login(db_engine, m)
        job = make_job(
            m.site,
            [m.u(WWW, "/members/")],
            {"max_hops": 1, "connections_per_host": 1},
            credentials=[r.__dict__ for r in refs],
        )
        result = run_crawl(job, tmp_path / "job")
    finally:
        m.site.stop()
    for i in range(5):
        assert result.line_for(m.u(WWW, f"/members/a{i}.html"))[1] == "200"
    logins = [s for s in m.site.served if s.method == "POST"]
    # 7 members' pages, 2 a session: at least 4 sessions; requests that left with a session
    # that has ended since are sent again with the newer one, not each with a login of its own
    assert 4 <= len(logins) < 7, [s.path for s in m.site.served]
