"""Reference data every harvest needs: templates, the five frequency schedules, channels.

Why a function and not SQL: templates come from reviewed files in config/templates/ that
change more often than the schema; calling this at every DAG run keeps the DB in step with the
files (UPSERTs, so it is idempotent and cheap).
"""

from __future__ import annotations

import logging
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from harvest.common import engine_or_default, harvest_settings
from harvest.schedule import STANDARD_SCHEDULES
from harvest.templates import upsert_templates

log = logging.getLogger(__name__)


def ensure_reference_data(engine: Engine | None = None) -> dict[str, Any]:
    """Templates from config/templates/, standard schedules, harvest channels (UPSERTs)."""
    engine = engine_or_default(engine)
    settings = harvest_settings()
    with engine.begin() as conn:
        templates = upsert_templates(conn)
        for name, (timeunit, numtimeunits, comment) in STANDARD_SCHEDULES.items():
            conn.execute(
                sa.text(
                    "INSERT INTO schedules (name, comments, timeunit, numtimeunits)"
                    " VALUES (:n, :c, :u, :k) ON CONFLICT (name) DO UPDATE SET"
                    " timeunit = EXCLUDED.timeunit, numtimeunits = EXCLUDED.numtimeunits,"
                    " comments = EXCLUDED.comments"
                ),
                {"n": name, "c": comment, "u": timeunit, "k": numtimeunits},
            )
        for name, snapshot, comment in (
            (settings["high_priority_channel"], False, "high priority: selective harvests"),
            (settings["low_priority_channel"], True, "low priority: snapshot (broad) harvests"),
        ):
            conn.execute(
                sa.text(
                    "INSERT INTO harvestchannel (name, issnapshot, isdefault, comments)"
                    " VALUES (:n, :s, true, :c) ON CONFLICT (name) DO NOTHING"
                ),
                {"n": name, "s": snapshot, "c": comment},
            )
    return {"templates": sorted(templates), "schedules": sorted(STANDARD_SCHEDULES)}
