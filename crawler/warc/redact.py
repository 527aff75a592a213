"""What a WARC request record keeps of a request that carried a credential.

Why: Heritrix writes every request as sent, HTTP auth headers and login POST bodies included;
a legal-deposit archive keeps its WARCs for ever and opens them to readers, so a password must
never be in one. The request record keeps the header's scheme (``Authorization: Basic
[redacted]``) and a login form's fields with the password's value replaced (the body set by
crawler/credentials.py in ``request.meta["hf_record_body"]``), with a Content-Length that
matches what is recorded.
"""

from __future__ import annotations

from typing import Any

REDACTED = "[redacted]"
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization"})


def redact_request(
    headers: list[tuple[str, str]], body: bytes, meta: dict[str, Any]
) -> tuple[list[tuple[str, str]], bytes]:
    """(headers, body) to record for a request: credentials replaced by ``[redacted]``."""
    out: list[tuple[str, str]] = []
    for name, value in headers:
        if name.lower() in SECRET_HEADERS:
            scheme = value.split(" ", 1)[0] if " " in value else ""
            value = f"{scheme} {REDACTED}".strip()
        out.append((name, value))
    recorded = meta.get("hf_record_body")
    if recorded is not None:
        body = recorded
        out = [(n, str(len(body)) if n.lower() == "content-length" else v) for n, v in out]
    return out, body
