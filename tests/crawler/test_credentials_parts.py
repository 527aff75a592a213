"""Parts of crawler/credentials.py and crawler/warc/redact.py on their own: challenges, the login
form, the logout rule, what a WARC request record keeps."""

from __future__ import annotations

from scrapy import Request
from scrapy.http import HtmlResponse

from crawler.credentials import answer_challenge, covers, is_logout, login_form
from crawler.warc.redact import redact_request
from harvestflow.credentials import CredentialRef, Secret


def _secret(kind: str, realm: str | None = None) -> Secret:
    return Secret(CredentialRef(1, "example.org", kind, realm), "anne", "pw-1")


def test_challenges_answered_by_scheme_and_realm():
    req = Request("http://www.example.org/area/")
    basic = answer_challenge(_secret("basic", "members"), req, 'Basic realm="members"')
    assert basic == "Basic YW5uZTpwdy0x"
    assert answer_challenge(_secret("basic", "members"), req, 'Basic realm="staff"') is None
    assert answer_challenge(_secret("basic"), req, 'Digest realm="x", nonce="n"') is None
    digest = answer_challenge(
        _secret("digest", "d"), req, 'Digest realm="d", qop="auth", nonce="abc"'
    )
    assert digest is not None and digest.startswith('Digest username="anne", realm="d"')
    assert 'uri="/area/"' in digest and "pw-1" not in digest
    assert covers("example.org", "WWW.example.org") and not covers("example.org", "badexample.org")
    assert is_logout("http://h/logout?next=/", "http://h/logout")
    assert not is_logout("http://other/logout", "http://h/logout")


def test_login_form_keeps_hidden_fields_and_finds_the_names():
    html = b"""<form action="/search"><input name="q"></form>
    <form method="POST" action="/do-login"><input type="hidden" name="csrf" value="t1">
    <input type="email" name="mail"><input type="password" name="pw">
    <input type="checkbox" name="remember" value="1"><input type="submit" name="go" value="Go">
    <input type="submit" name="other" value="No"></form>"""
    page = HtmlResponse("http://h/login", body=html, encoding="utf-8")
    action, method, fields, ufield, pfield = login_form(page, _secret("form"))  # type: ignore[misc]
    assert (action, method, ufield, pfield) == ("http://h/do-login", "POST", "mail", "pw")
    assert fields == [("csrf", "t1"), ("go", "Go"), ("mail", "anne"), ("pw", "pw-1")]
    assert login_form(HtmlResponse("http://h/", body=b"<p>no form</p>"), _secret("form")) is None


def test_request_records_keep_no_credential():
    headers = [("Host", "h"), ("Authorization", "Basic YW5uZTpwdy0x"), ("Content-Length", "20")]
    out, body = redact_request(headers, b"user=anne&pass=pw-1", {"hf_record_body": b"x=1"})
    assert out == [("Host", "h"), ("Authorization", "Basic [redacted]"), ("Content-Length", "3")]
    assert body == b"x=1"
    assert redact_request([("Accept", "*/*")], b"", {}) == ([("Accept", "*/*")], b"")
