"""URLs a curator's browsing of a job's view found missing, and the patch harvests sent for them.

Why recorded at the gateway: while a curator looks at a job's own replay view (the access
collection ``job-<id>``, :mod:`access.jobviews`), every page, link or embed the archive cannot
serve comes back from pywb as its "not in the archive" 404; the gateway sees that answer for
``/job-<id>/<timestamp><modifier>/<url>`` and records the URL against the job (NetarchiveSuite's
ViewerProxy collected them the same way, as a proxy). One row per (job, URL): asked for again,
its count and last-seen time grow. A capture of a 404 page is not a miss: pywb replays it with
the capture's ``Memento-Datetime``, which its own not-found answer never carries.

A patch harvest (:mod:`access.patches`) is recorded here too: which URLs went to which
one-off definition, for which job, by whom; its jobs' captures join the job's view and its
definition's collection (:func:`patch_origins`).

This module owns ``access_missing_urls`` and ``access_patches`` (sql/032_access_qc.sql).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

log = logging.getLogger(__name__)

JOB_VIEW = "job-"
MAX_URL = 4096
# /job-<id>/<timestamp><modifier>/<url>; pywb's embeds carry a modifier (im_ image, js_
# script, cs_ stylesheet, oe_ object, if_/fr_ frame); a page in the frame is mp_ or none
_PATH = re.compile(r"^/job-(\d{1,18})/(\d{1,14})([a-z]{2}_)?/(.+)$")
EMBED_MODIFIERS = frozenset({"im_", "js_", "cs_", "oe_", "if_", "fr_"})


@dataclass(frozen=True)
class Miss:
    """One not-found answer of a job's view."""

    job_id: int
    url: str
    embed: bool


@dataclass(frozen=True)
class MissingUrl:
    url: str
    embed: bool
    hits: int
    first_seen: datetime
    last_seen: datetime
    patch_id: int | None
    patch_harvest_id: int | None


def job_collection(job_id: int) -> str:
    """The access collection of one job's captures (its patch harvests' included)."""
    return f"{JOB_VIEW}{int(job_id)}"


def parse(path: str) -> Miss | None:
    """The miss a request path of a job's view stands for (None: not a job view's capture).

    The archived URL is everything after the modifier, query string included (pywb's form);
    only http(s) URLs are kept: anything else was never a capture to harvest.
    """
    match = _PATH.match(path)
    if not match:
        return None
    url = match.group(4)
    if url.startswith("//"):
        url = "http:" + url
    if not url.lower().startswith(("http://", "https://")) or len(url) > MAX_URL:
        return None
    return Miss(int(match.group(1)), url, match.group(3) in EMBED_MODIFIERS)


def record(engine: sa.Engine, miss: Miss) -> bool:
    """Count one not-found answer (insert, or add a hit and move last_seen); False when the
    job is unknown (a view of a job that does not exist records nothing)."""
    try:
        with engine.begin() as conn:
            conn.execute(
                sa.text(
                    "INSERT INTO access_missing_urls (job_id, url, embed) VALUES (:j, :u, :e)"
                    " ON CONFLICT (job_id, url) DO UPDATE SET hits = access_missing_urls.hits + 1,"
                    " last_seen = clock_timestamp(),"
                    " embed = access_missing_urls.embed OR EXCLUDED.embed"
                ),
                {"j": miss.job_id, "u": miss.url, "e": miss.embed},
            )
    except sa.exc.IntegrityError:
        log.info("missing URL of unknown job %s not recorded: %s", miss.job_id, miss.url)
        return False
    return True


def record_found(engine: sa.Engine, job_id: int, urls: Iterable[str]) -> int:
    """URLs the crawler's QA pass found missing in the job's replay and its patch could not
    fetch (harvest.page_qa): added to the job's list as embeds, once — a later sync adds no hit
    (a curator's browsing does). Only http(s) URLs of a sane length; returns the rows added."""
    rows = [
        {"j": job_id, "u": u}
        for u in dict.fromkeys(urls)
        if u.lower().startswith(("http://", "https://")) and len(u) <= MAX_URL
    ]
    if not rows:
        return 0
    with engine.begin() as conn:
        added = conn.execute(
            sa.text(
                "INSERT INTO access_missing_urls (job_id, url, embed) VALUES (:j, :u, true)"
                " ON CONFLICT (job_id, url) DO NOTHING"
            ),
            rows,
        ).rowcount
    return int(added or 0)


def for_job(conn: sa.Connection, job_id: int, limit: int = 1000) -> list[MissingUrl]:
    """A job's missing URLs, embeds first, the most asked-for first."""
    rows = conn.execute(
        sa.text(
            "SELECT m.url, m.embed, m.hits, m.first_seen, m.last_seen, m.patch_id, p.harvest_id"
            " FROM access_missing_urls m LEFT JOIN access_patches p USING (patch_id)"
            " WHERE m.job_id = :j ORDER BY m.embed DESC, m.hits DESC, m.url LIMIT :n"
        ),
        {"j": job_id, "n": limit},
    )
    return [MissingUrl(*row) for row in rows]


def add_patch(
    conn: sa.Connection,
    job_id: int,
    origin_harvest_id: int,
    harvest_id: int,
    urls: Iterable[str],
    user: str,
) -> int:
    """Record a patch harvest of ``urls`` (missing URLs of the job); they point at it."""
    listed = list(dict.fromkeys(urls))
    patch_id = int(
        conn.execute(
            sa.text(
                "INSERT INTO access_patches (job_id, origin_harvest_id, harvest_id, urls,"
                " requested_by) VALUES (:j, :o, :h, CAST(:u AS text[]), :by) RETURNING patch_id"
            ),
            {"j": job_id, "o": origin_harvest_id, "h": harvest_id, "u": listed, "by": user},
        ).scalar_one()
    )
    conn.execute(
        sa.text("UPDATE access_missing_urls SET patch_id = :p WHERE job_id = :j AND url = ANY(:u)"),
        {"p": patch_id, "j": job_id, "u": listed},
    )
    return patch_id


def set_dag_run(engine: sa.Engine, patch_id: int, run_id: str) -> None:
    with engine.begin() as conn:
        conn.execute(
            sa.text("UPDATE access_patches SET dag_run_id = :r WHERE patch_id = :p"),
            {"r": run_id, "p": patch_id},
        )


def patches_of(conn: sa.Connection, job_id: int) -> list[dict[str, object]]:
    """The patch harvests sent for a job, newest first."""
    rows = conn.execute(
        sa.text(
            "SELECT patch_id, harvest_id, urls, requested_by, requested_at, dag_run_id"
            " FROM access_patches WHERE job_id = :j ORDER BY patch_id DESC"
        ),
        {"j": job_id},
    )
    return [dict(row._mapping) for row in rows]


def patch_origins(conn: sa.Connection, harvest_ids: Iterable[int]) -> dict[int, tuple[int, int]]:
    """Patch definition id → (the job it patches, that job's definition), for those given."""
    rows = conn.execute(
        sa.text(
            "SELECT harvest_id, job_id, origin_harvest_id FROM access_patches"
            " WHERE harvest_id = ANY(:h)"
        ),
        {"h": sorted({int(h) for h in harvest_ids})},
    )
    return {int(h): (int(j), int(o)) for h, j, o in rows}


def fold_patches(conn: sa.Connection, jobs: dict[int, int]) -> dict[int, int]:
    """Job → definition, a patch harvest's jobs given the definition of the job they patch
    (their captures join that definition's collection, not a collection of their own)."""
    origins = patch_origins(conn, set(jobs.values()))
    return {job: origins[hid][1] if hid in origins else hid for job, hid in jobs.items()}


def unsent_by_job(conn: sa.Connection, limit: int = 20) -> dict[str, Any]:
    """Jobs with missing URLs not sent to a patch harvest: how many each, last asked for
    first (the curator overview's list), with the number of such jobs."""
    where = " FROM access_missing_urls WHERE patch_id IS NULL"
    total = conn.execute(sa.text("SELECT count(DISTINCT job_id)" + where)).scalar_one()
    rows = conn.execute(
        sa.text(
            "SELECT job_id, count(*) AS urls, max(last_seen) AS last_seen"
            + where
            + " GROUP BY job_id ORDER BY max(last_seen) DESC, job_id LIMIT :n"
        ),
        {"n": limit},
    )
    return {"rows": [dict(r._mapping) for r in rows], "total": int(total)}
