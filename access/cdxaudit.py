"""Captures an ``exclude`` rule leaves out of a URL-search answer, found to be logged with the rule.

Why: pywb drops an excluded capture from its CDX API answer without a trace. So the gateway
asks pywb the same query again as every reader and as an audit user the ACL file allows
everywhere (pywb's per-user ACL, ``X-Pywb-ACL-User``, a random name only the gateway sends):
what only the second answer has, the rules excluded. Done only when an exclude rule could
match the query's host, a few at a time, each query time-limited.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import secrets
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import parse_qsl, urlencode

from access.config import INTERNAL_HOST, AccessConfig
from access.rules import Rule, deciding
from harvestflow.atomic import fsync_dir, tmp_path
from harvestflow.formats.surt import surt

log = logging.getLogger(__name__)

HEADER = "X-Pywb-ACL-User"
_FIELDS = "urlkey,timestamp,url,filename,offset"
_TIMEOUT_S = 60  # each audit query, between reads (the reader's own query had as long)


def audit_user_file(cfg: AccessConfig) -> Path:
    return cfg.root / "acl" / "audit-user"


def audit_user(cfg: AccessConfig) -> str:
    """The audit user's name, made once (random; every process of this data directory reads
    the same: the first to create it wins, by a hard link that fails if the name exists)."""
    path = audit_user_file(cfg)
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = tmp_path(path)
    fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(f"audit-{secrets.token_hex(16)}\n")
        fh.flush()
        os.fsync(fh.fileno())
    try:
        os.link(tmp, path)
        fsync_dir(path.parent)
    except FileExistsError:
        pass
    finally:
        tmp.unlink(missing_ok=True)
    return path.read_text().strip()


def _host_key(url: str) -> str | None:
    """The SURT host part of a CDX query's URL (``org,example`` for every match type), or None."""
    if url.startswith("*."):
        url = url[2:]
    url = url.rstrip("*")
    try:
        key = surt(url if "://" in url else "http://" + url)
    except Exception:  # a URL we cannot key: audit it (None)
        return None
    return key.split(")", 1)[0]


def may_exclude(rules: Iterable[Rule], url: str) -> bool:
    """Whether an ``exclude`` rule could decide a capture this query would answer (cheap; a
    ``True`` too many costs two queries, never a capture left unlogged)."""
    excluding = [r for r in rules if r.policy == "exclude"]
    if not excluding:
        return False
    host = _host_key(url)
    if host is None:
        return True
    return any(r.surt.startswith(host) or (host + ")").startswith(r.surt) for r in excluding)


def _query(cfg: AccessConfig, coll: str, params: list[tuple[str, str]], user: str) -> list[dict]:
    conn = http.client.HTTPConnection(INTERNAL_HOST, cfg.pywb_port, timeout=_TIMEOUT_S)
    try:
        headers = {HEADER: user} if user else {}
        conn.request("GET", f"/{coll}/cdx?{urlencode(params)}", headers=headers)
        resp = conn.getresponse()
        body = resp.read()
    finally:
        conn.close()
    if resp.status != 200:
        return []
    return [json.loads(line) for line in body.splitlines() if line.strip()]


def excluded(
    cfg: AccessConfig, coll: str, query: str, rules: list[Rule]
) -> list[tuple[dict, Rule | None]]:
    """The captures pywb left out of this CDX query's answer, each with the deciding rule."""
    params = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True)]
    given = dict(params)
    if "showNumPages" in given or "url" not in given:
        return []
    if not may_exclude(rules, given["url"]):
        return []
    params = [(k, v) for k, v in params if k not in ("output", "fl")]
    params += [("output", "json"), ("fl", _FIELDS)]
    shown = {_ident(c) for c in _query(cfg, coll, params, "")}
    return [
        (cap, deciding(rules, str(cap.get("urlkey", ""))))
        for cap in _query(cfg, coll, params, audit_user(cfg))
        if _ident(cap) not in shown
    ]


def _ident(cap: dict) -> tuple[object, ...]:
    """What tells one capture of a CDX answer from another."""
    return (cap.get("urlkey"), cap.get("timestamp"), cap.get("filename"), cap.get("offset"))
