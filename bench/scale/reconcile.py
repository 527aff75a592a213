"""Reconcile a day: what went into each stage came out of it, or the stage that lost it is named.

Why with other tools than the stages': a stage checked with its own code agrees with itself.
Here the WARCs are read by warcio (the reference reader), the CDX files as plain lines, S3 by
its HEAD answers, the crawl.logs as text; the harvest DB only says where things are.

Checks, in the order the data flows (the first difference raises :class:`ReconcileError` whose
message starts with the stage's name):

- crawl: the URLs fetched in the crawl.logs (status > 0) = the response and revisit records
  warcio finds in the data WARCs (same URLs, same counts);
- indexing: every data WARC in the index manifest, indexed (its CDX file holds one capture line
  per record warcio finds in the WARC);
- transfer: every WARC at its repository location (``final_path``) with the manifest's size;
- preservation: every data WARC preserved (``preservation_files`` verified) and its S3 object
  there with the same size;
- fulltext: the documents = the distinct payloads of the 200 HTML and text captures, and each
  file's extraction done;
- qa: the day's QA totals (lines, URLs fetched) = the crawl.logs';
- access: one capture in 1,000 (seeded, at least one) replayed by the access service in
  ``id_`` mode with the CDX's status and payload digest (a redirect to a URL of the same CDX key,
  ``http://d/`` → ``http://www.d/``, replays as that key's other capture: pywb's rule).
"""

from __future__ import annotations

import gzip
import logging
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import sqlalchemy as sa
from warcio.archiveiterator import ArchiveIterator

log = logging.getLogger(__name__)

TEXT_MIMES = ("text/html", "text/plain", "application/xhtml+xml")


class ReconcileError(RuntimeError):
    """A stage lost or added something: the message names the stage, then the difference."""


def _diff(stage: str, what: str, left: Counter[str], right: Counter[str], names: str) -> None:
    if left == right:
        return
    extra, missing = right - left, left - right
    sample = sorted(missing)[:3] or sorted(extra)[:3]
    raise ReconcileError(
        f"{stage}: {what}: {sum(left.values())} {names.split('/')[0]} but "
        f"{sum(right.values())} {names.split('/')[1]} ({sum(missing.values())} missing,"
        f" {sum(extra.values())} extra; e.g. {sample})"
    )


def crawl_log_urls(logs: list[Path]) -> tuple[Counter[str], int]:
    """The URLs fetched (status > 0, dns: lookups left out) and the number of lines in all."""
    fetched: Counter[str] = Counter()
    lines = 0
    for path in logs:
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            f = line.split()
            if len(f) < 4:
                continue
            lines += 1
            if f[1].lstrip("-").isdigit() and int(f[1]) > 0 and not f[3].startswith("dns:"):
                fetched[f[3]] += 1
    return fetched, lines


def warc_records(warc: Path) -> Counter[str]:
    """The target URIs of the response and revisit records warcio reads in ``warc``."""
    found: Counter[str] = Counter()
    with warc.open("rb") as fh:
        for rec in ArchiveIterator(fh):
            uri = rec.rec_headers.get_header("WARC-Target-URI") or ""
            if rec.rec_type in ("response", "revisit") and not uri.startswith("dns:"):
                found[uri] += 1
    return found


def cdx_file(manifest_row: dict[str, Any]) -> Path:
    """A WARC's CDX11 file: the manifest's ``cdx_path`` is the stem of its .cdx and .cdxj."""
    return Path(f"{manifest_row['cdx_path']}.cdx")


def _digest(value: str) -> str:
    return value.removeprefix("sha1:").upper()


def cdx_text_digests(cdx: Path) -> set[str]:
    """The payload digests of the 200 HTML and text captures of a CDX11 file (what the
    full-text extraction must hold once each)."""
    opener = gzip.open if cdx.suffix == ".gz" else open
    found: set[str] = set()
    with opener(cdx, "rt", encoding="utf-8") as fh:
        for line in fh:
            f = line.split(" ")
            ok = len(f) >= 6 and not line.startswith(" CDX") and f[4] == "200"
            if ok and f[3].split(";")[0].strip().lower() in TEXT_MIMES:
                found.add(_digest(f[5]))
    return found


def cdx_captures(cdx: Path) -> Counter[str]:
    """The original URLs of a CDX (CDX11 or CDXJ) file's capture lines (dns: left out)."""
    opener = gzip.open if cdx.suffix == ".gz" else open
    found: Counter[str] = Counter()
    with opener(cdx, "rt", encoding="utf-8") as fh:
        for line in fh:
            if not line.strip() or line.startswith((" CDX", "!")):
                continue
            if "{" in line:  # CDXJ: surt timestamp {json}
                import json

                url = json.loads(line[line.index("{") :]).get("url", "")
            else:  # CDX11: urlkey timestamp original ...
                url = line.split(" ")[2]
            if not url.startswith("dns:"):
                found[url] += 1
    return found


def replay_sample(
    access_url: str, cdx_files: list[Path], seed: int, rate: int = 1000
) -> list[dict[str, Any]]:
    """One capture in ``rate`` (at least one; seeded) asked to the access service in ``id_`` mode
    (the archived payload as recorded): its status and the SHA-1 of the bytes answered, beside
    what the CDX says."""
    import base64
    import hashlib
    import random

    import httpx

    lines = []
    for cdx in cdx_files:
        for line in cdx.read_text(encoding="utf-8").splitlines():
            f = line.split(" ")
            if len(f) >= 6 and not line.startswith(" CDX") and f[4].isdigit():
                lines.append(f)
    if not lines:
        return []
    picked = random.Random(seed).sample(lines, max(1, len(lines) // rate))
    out = []
    with httpx.Client(timeout=30, follow_redirects=False) as client:
        for f in picked:
            # the access gateway serves replay on a site of its own (localhost, not Airflow's
            # 127.0.0.1): asked on 127.0.0.1 it redirects there
            base = access_url.rstrip("/").replace("//127.0.0.1:", "//localhost:")
            url = f"{base}/all/{f[1]}id_/{f[2]}"
            for _hop in range(3):
                with client.stream("GET", url) as resp:
                    body = b"".join(resp.iter_raw())
                # pywb's own redirect to the capture's normal form (http://d -> http://d/), at
                # the same timestamp, is followed; an archived redirect (Location on the
                # archived site) is the answer
                location = urljoin(url, resp.headers.get("location", ""))
                if not (resp.is_redirect and location.startswith(f"{base}/all/{f[1]}id_/")):
                    break
                url = location
            digest = base64.b32encode(
                hashlib.sha1(body).digest()
            ).decode()  # the WARC digest is SHA-1
            out.append({"url": f[2], "timestamp": f[1], "status": int(f[4]), "digest": _digest(f[5]),
                        "replayed_status": resp.status_code, "replayed_digest": digest})  # fmt: skip
    return out


def _same_key_captures(
    cdx_files: list[Path], wanted: set[tuple[str, str]]
) -> dict[tuple[str, str], set[tuple[int, str]]]:
    """For each (URL, timestamp) of ``wanted``, the (status, digest) of the other captures of
    its CDX key (two passes over the CDX11 files: a day's lines are not held in memory)."""
    key_of: dict[tuple[str, str], str] = {}
    for cdx in cdx_files:
        for line in cdx.read_text(encoding="utf-8").splitlines():
            f = line.split(" ")
            if len(f) >= 6 and (f[2], f[1]) in wanted:
                key_of[(f[2], f[1])] = f[0]
    keys = set(key_of.values())
    by_key: dict[str, set[tuple[int, str]]] = {k: set() for k in keys}
    for cdx in cdx_files:
        for line in cdx.read_text(encoding="utf-8").splitlines():
            f = line.split(" ")
            if len(f) >= 6 and f[0] in keys and f[4].isdigit():
                by_key[f[0]].add((int(f[4]), _digest(f[5])))
    return {w: by_key[k] for w, k in key_of.items()}


def check_replay(replay: list[dict[str, Any]], cdx_files: list[Path]) -> int:
    """Each replayed capture answered with the CDX's status and digest; the number of redirects
    answered as their key's other capture (pywb skips a redirect to a URL of the same key,
    ``http://d/`` → ``http://www.d/``: one SURT, a replay loop otherwise)."""
    same_key = _same_key_captures(cdx_files, {(r["url"], r["timestamp"]) for r in replay})
    self_redirects = 0
    for r in replay:
        replayed = (r["replayed_status"], r["replayed_digest"])
        if replayed == (r["status"], r["digest"]):
            continue
        if 300 <= r["status"] < 400 and replayed in same_key.get((r["url"], r["timestamp"]), ()):
            self_redirects += 1
            continue
        raise ReconcileError(
            f"access: {r['url']} at {r['timestamp']} replays {r['replayed_status']}"
            f" {r['replayed_digest']}, the CDX says {r['status']} {r['digest']}"
        )
    return self_redirects


def collect(env: dict[str, str], data_dir: Path, seed: int = 1) -> dict[str, Any]:
    """What the platform says it holds, read once at the end of the day (harvest DB rows, the
    S3 bucket's listing) with where the files are; JSON-able, so the checks can run again on a
    copy after the platform stopped."""
    from harvestflow.s3 import s3_client
    from harvestflow.settings import load

    settings = load(environ=env)
    engine = sa.create_engine(settings.harvest_db_url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            files = [
                dict(r._mapping)
                for r in conn.execute(
                    sa.text(
                        "SELECT file_name, job_id, size, stage, cdx_path, final_path, quarantined"
                        " FROM index_manifest WHERE file_name NOT LIKE '%metadata%'"
                        " ORDER BY file_name"
                    )
                )
            ]
            preserved = {
                r.file_name: {"size": r.size, "status": r.status, "s3_key": r.s3_key}
                for r in conn.execute(
                    sa.text(
                        "SELECT file_name, size, status, s3_key FROM preservation_files"
                        " WHERE role = 'data'"
                    )
                )
            }
            fulltext_docs = sorted(
                str(r[0]) for r in conn.execute(sa.text("SELECT digest FROM fulltext_docs"))
            )
            fulltext_files = {
                r.file_name: r.status
                for r in conn.execute(sa.text("SELECT file_name, status FROM fulltext_files"))
            }
            qa = {
                f"{r.family}:{r.key}": float(r.value)
                for r in conn.execute(
                    sa.text(
                        "SELECT family, key, value FROM qa_stats WHERE scope = 'day'"
                        " AND family = 'general' AND day = CURRENT_DATE"
                    )
                )
            }
    finally:
        engine.dispose()
    client = s3_client(settings)
    objects: dict[str, int] = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=settings.s3.bucket):
        for obj in page.get("Contents", []):
            objects[obj["Key"]] = int(obj["Size"])
    logs = sorted(str(p) for p in (data_dir / "jobs").rglob("crawl.log") if p.is_file())
    cdx_files = [cdx_file(f) for f in files if f["cdx_path"]]
    replay = replay_sample(
        env["HARVESTFLOW_ACCESS__URL"], [c for c in cdx_files if c.is_file()], seed
    )
    return {
        "replay": replay,
        "files": files,
        "preserved": preserved,
        "s3_objects": objects,
        "crawl_logs": logs,
        "fulltext_docs": fulltext_docs,
        "fulltext_files": fulltext_files,
        "qa_day": qa,
    }


def check(snapshot: dict[str, Any]) -> dict[str, Any]:
    """Every check above on a :func:`collect` snapshot; the counts."""
    files = snapshot["files"]
    preserved = snapshot["preserved"]
    objects = snapshot["s3_objects"]
    if not files:
        raise ReconcileError("indexing: no data WARC in the index manifest")
    fetched, log_lines = crawl_log_urls([Path(p) for p in snapshot["crawl_logs"]])
    recorded: Counter[str] = Counter()
    for f in files:
        name = f["file_name"]
        if f["quarantined"]:
            raise ReconcileError(f"indexing: {name} quarantined")
        where = Path(f["final_path"] or "")
        if not f["final_path"] or not where.is_file():
            raise ReconcileError(f"transfer: {name} not at its repository location {where}")
        if where.stat().st_size != f["size"]:
            raise ReconcileError(
                f"transfer: {name}: {where.stat().st_size} bytes at {where},"
                f" {f['size']} in the manifest"
            )
        records = warc_records(where)
        recorded += records
        cdx = cdx_file(f)
        if not f["cdx_path"] or not cdx.is_file():
            raise ReconcileError(f"indexing: {name} has no CDX file ({cdx})")
        _diff("indexing", name, records, cdx_captures(cdx), "records/CDX lines")
        p = preserved.get(name)
        if p is None or p["status"] != "verified":
            state = "no preservation record" if p is None else f"status {p['status']}"
            raise ReconcileError(f"preservation: {name}: {state}")
        if objects.get(p["s3_key"]) != p["size"]:
            found = objects.get(p["s3_key"])
            state = "missing" if found is None else f"{found} bytes, {p['size']} recorded"
            raise ReconcileError(f"preservation: {name}: S3 object {p['s3_key']} {state}")
    _diff("crawl", "URLs fetched in crawl.log against WARC records", fetched, recorded,
          "fetched/recorded")  # fmt: skip
    texts: set[str] = set()
    for f in files:
        if snapshot["fulltext_files"].get(f["file_name"]) != "done":
            state = snapshot["fulltext_files"].get(f["file_name"], "never started")
            raise ReconcileError(f"fulltext: {f['file_name']}: extraction {state}")
        texts |= cdx_text_digests(cdx_file(f))
    docs = {_digest(d) for d in snapshot["fulltext_docs"]}
    if docs != texts:
        raise ReconcileError(
            f"fulltext: {len(docs)} documents for {len(texts)} distinct HTML/text payloads"
            f" ({len(texts - docs)} missing, {len(docs - texts)} extra;"
            f" e.g. {sorted(texts - docs)[:2] or sorted(docs - texts)[:2]})"
        )
    qa = snapshot["qa_day"]
    qa_lines, qa_urls = qa.get("general:lines"), qa.get("general:urls")
    if qa_lines != log_lines or qa_urls != sum(fetched.values()):
        raise ReconcileError(
            f"qa: the day's totals are {qa_lines} lines, {qa_urls} URLs fetched; the crawl.logs"
            f" have {log_lines} lines, {sum(fetched.values())} URLs fetched"
        )
    if not snapshot.get("replay"):
        raise ReconcileError("access: no capture replayed (the sample is empty)")
    self_redirects = check_replay(snapshot["replay"], [cdx_file(f) for f in files])
    return {
        "replayed": len(snapshot["replay"]),
        "replayed_as_self_redirects": self_redirects,
        "fulltext_docs": len(docs),
        "crawl_log_lines": log_lines,
        "urls_fetched": sum(fetched.values()),
        "warc_records": sum(recorded.values()),
        "data_warcs": len(files),
        "preserved": len(files),
    }
