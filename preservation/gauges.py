"""Preservation's readings for ``/metrics``: the package queue and the fixity audits' progress.

Why these: a queue of staged packages that only grows, a manual queue with anything in it, and
audits falling behind their period are what a person must act on (the alert rules watch the
audits' failures).
"""

from __future__ import annotations

import sqlalchemy as sa

from harvestflow.db import get_engine
from harvestflow.monitoring.probes import Reading
from harvestflow.settings import Settings, get_settings
from preservation.config import PreservationConfig
from preservation.copies import copy_names
from preservation.records import audit_overview

PACKAGE_STATUSES = ("staged", "ingesting", "preserved", "manual")


def readings(settings: Settings | None = None) -> list[Reading]:
    settings = settings or get_settings()
    cfg = PreservationConfig.from_settings(settings)
    with get_engine(settings.harvest_db_url).connect() as conn:
        counts = dict.fromkeys(PACKAGE_STATUSES, 0)
        counts.update(
            conn.execute(
                sa.text("SELECT status, count(*) FROM preservation_packages GROUP BY status")
            ).all()
        )
        audits = audit_overview(conn, copy_names(settings), cfg.audit_period_days)
    last = next((r for r in audits["runs"] if r["finished_at"] is not None), None)
    out = [
        Reading(
            "harvestflow_preservation_packages",
            "Packages by status (staged and ingesting: the queue; manual: the manual queue)",
            n,
            {"status": s},
        )
        for s, n in counts.items()
    ]
    oldest = audits["oldest_verified"]
    out += [
        Reading("harvestflow_fixity_files", "Preserved files the audits cover", audits["files"]),
        Reading(
            "harvestflow_fixity_verified_in_period_files",
            "Files verified in every copy within [preservation] audit_period_days",
            audits["verified_in_period"],
        ),
        Reading(
            "harvestflow_fixity_never_verified_files",
            "Files no audit or ingest verified",
            audits["never_verified"],
        ),
        Reading(
            "harvestflow_fixity_oldest_verified_timestamp_seconds",
            "Oldest last verification of a file (epoch s; 0: none)",
            oldest.timestamp() if oldest else 0,
        ),
        Reading(
            "harvestflow_fixity_bad_copies",
            "Copies found bad and not repaired",
            audits["bad_copies"],
        ),
        Reading(
            "harvestflow_fixity_last_audit_failed_files",
            "Files bad in every copy in the last finished audit",
            last["failed"] if last else 0,
        ),
        Reading(
            "harvestflow_fixity_last_audit_files",
            "Files read by the last finished audit",
            last["files"] if last else 0,
        ),
    ]
    return out
