"""Whether a document can be offered: the access service finds and replays it, same payload.

Why through the service and not the index files: what a cataloguer will link to is the replay
service's answer, so a document becomes ``available`` only when our CDX API (the gateway's
``/all/cdx``) lists one of its captures with its payload digest and the replay of that capture
(``/all/<timestamp>id_/<url>``) answers 200 with a payload of that digest. Before the capture is
indexed and published, the check finds nothing: the document stays ``new`` with what the check
saw, and the next run (each indexing-chain run) tries again. Every request is time- and
size-limited; the service not answering is said as such, never taken for an answer.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Engine

from harvestflow.db import get_engine
from harvestflow.settings import Settings, get_settings
from indexing.documents import store

log = logging.getLogger(__name__)

COLLECTION = "all"  # the whole archive's collection on the replay service
CHECKER = "availability check"


@dataclass(frozen=True)
class Verdict:
    available: bool
    detail: str
    timestamp: str | None = None
    url: str | None = None


def access_url(settings: Settings) -> str:
    """The access service's base URL (``[access] url``), with its trailing slash."""
    url = str(settings.get("access", "url") or "http://127.0.0.1:8090/")
    return url if url.endswith("/") else url + "/"


def _fetch(url: str, timeout: float, limit: int) -> tuple[int | None, bytes]:
    """(status, at most ``limit`` + 1 bytes of the body); status None: no answer."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, resp.read(limit + 1)
    except urllib.error.HTTPError as exc:
        return exc.code, b""
    except (OSError, ValueError) as exc:
        log.warning("access service: %s: %s", url, exc)
        return None, b""


def _cdx_digest(digest: str) -> tuple[str, str]:
    """(algorithm, value) of a WARC payload digest (``sha1:BASE32``), as a CDX line writes it."""
    algo, _, value = digest.partition(":")
    return (algo.lower(), value) if value else ("sha1", algo)


def _matches(payload: bytes, digest: str) -> bool:
    algo, value = _cdx_digest(digest)
    try:
        computed = hashlib.new(algo, payload).digest()
    except ValueError:
        return False
    return base64.b32encode(computed).decode() == value.upper() or computed.hex() == value.lower()


def check_document(
    doc: dict[str, Any], base: str, timeout: float = 30.0, limit: int = 200_000_000
) -> Verdict:
    """Look the document's captures up in the CDX API and replay the first with its digest."""
    _, wanted = _cdx_digest(doc["digest"])
    urls = sorted({c["url"] for c in doc["captures"]} or {doc["url"]})
    seen = []
    for url in urls:
        query = urllib.parse.urlencode(
            {"url": url, "output": "json", "matchType": "exact", "fl": "timestamp,url,digest"}
        )
        status, body = _fetch(f"{base}{COLLECTION}/cdx?{query}", timeout, 10_000_000)
        if status is None:
            return Verdict(False, "the access service did not answer")
        if status != 200:
            seen.append(f"{url}: CDX API answered {status}")
            continue
        lines = []
        for line in body.decode("utf-8", "replace").splitlines():
            try:
                lines.append(json.loads(line))
            except ValueError:
                continue
        # our CDXJ lines keep the digest's algorithm prefix, CDX11 ones drop it
        same = [c for c in lines if _cdx_digest(str(c.get("digest", "")))[1] == wanted]
        if not same:
            where = "under another payload" if lines else "yet"
            seen.append(f"{url}: not in the CDX index {where}")
            continue
        ts = str(same[0]["timestamp"])
        status, payload = _fetch(f"{base}{COLLECTION}/{ts}id_/{url}", timeout, limit)
        if status != 200:
            seen.append(
                f"{url} {ts}: replay answered {status if status is not None else 'nothing'}"
            )
            continue
        if len(payload) > limit or not _matches(payload, doc["digest"]):
            seen.append(f"{url} {ts}: replayed payload differs from the captured one")
            continue
        return Verdict(True, f"replayed {ts} {url}", ts, url)
    return Verdict(False, "; ".join(seen) or "no capture")


def check_new(engine: Engine | None = None, settings: Settings | None = None) -> dict[str, int]:
    """Check every ``new`` document; those the service replays become ``available``."""
    settings = settings or get_settings()
    engine = engine or get_engine(settings.harvest_db_url)
    base = access_url(settings)
    timeout = float(settings.get("documents", "check_timeout_s", 30))
    with engine.connect() as conn:
        docs = store.list_documents(conn, states=("new",))
    counts = {"checked": 0, "available": 0, "not_yet": 0}
    for doc in docs:
        verdict = check_document(doc, base, timeout)
        counts["checked"] += 1
        counts["available" if verdict.available else "not_yet"] += 1
        with engine.begin() as conn:
            store.record_check(conn, doc["document_id"], verdict.available, verdict.detail, CHECKER)
        log.info("document %s (%s): %s", doc["document_id"], doc["url"], verdict.detail)
    return counts
