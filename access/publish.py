"""What the replay service serves from the harvest database: rules, definition collections, tours.

The rules first made to match the targets' licences (:mod:`access.licences`).

Why one function: the CLI after a change, ``access serve`` at start and on every refresh pass,
and the DAG's refresh task must all bring the same generated things up to date —
pywb's ACL file (:mod:`access.rules`), the per-definition collections (:mod:`access.definitions`)
the per-job views of the curators' QC (:mod:`access.jobviews`) and the home page's content
(guided tours, collections: :mod:`access.home`). pywb (and the gateway, for the home page)
re-read each of them while serving, so a change is in force at the next request (the CLI's own
publish) or within ``refresh_interval_s`` (a change made from another machine).

A publish reads the database through one connection; ``access serve`` keeps its answers between
passes (:class:`harvestflow.db_reads.Reads`), so a pass over an idle database makes one query and
only checks the files.
"""

from __future__ import annotations

import logging
from typing import Any

import sqlalchemy as sa

from access import cdxaudit, curated, definitions, home, jobviews, licences, rules, tours
from access.config import AccessConfig
from access.index import Lister, job_index_files, live_dir
from harvestflow.db import get_engine
from harvestflow.db_reads import PassReads, Reads
from harvestflow.settings import Settings, get_settings
from indexing.layout import Layout

log = logging.getLogger(__name__)


def publish(
    settings: Settings | None = None,
    engine: sa.Engine | None = None,
    lister: Lister | None = None,
    reads: Reads | None = None,
) -> dict[str, Any]:
    """Write the ACL file, the definition collections and the home page; return what is served.

    Raises when the harvest database cannot be read: the service must not start (or go on
    serving a newer state) without knowing the rules; a running one keeps the last files.
    ``reads``: a long-lived reader's, whose answers are reused while the database is unchanged.
    """
    settings = settings or get_settings()
    engine = engine or get_engine(settings.harvest_db_url)
    with (reads or Reads(engine)).one_pass() as db:
        return _publish(settings, db, lister or Lister())


def _publish(settings: Settings, engine: PassReads, lister: Lister) -> dict[str, Any]:
    cfg = AccessConfig.from_settings(settings)
    licences.sync(engine, cfg)  # the licences' rules, as the licences now are
    in_force = rules.active(engine)
    if rules.write_acl(definitions.acl_file(cfg), in_force, cdxaudit.audit_user(cfg)):
        log.info("access rules: %d in force, ACL file written", len(in_force))
    layout = Layout.from_settings(settings)
    # every job's index files, listed once for the definition collections and the job views
    found = list(job_index_files(layout, live_dir(settings) / "index", lister))
    colls = definitions.sync(cfg, engine, found, lister)
    views = jobviews.sync(cfg, engine, found)
    chosen = curated.sync(cfg, engine, found)  # curated collections: targets, chosen captures
    shown = [{"name": c.name, "title": c.title, "description": c.description,
              "captures": chosen.get(c.name, 0)} for c in curated.all_curated(engine)]  # fmt: skip
    home.write(cfg, home.build(engine, tours.all_tours(engine), sorted(colls), shown))
    return {"rules": len(in_force), "collections": colls, "job_views": len(views),
            "curated": chosen}  # fmt: skip
