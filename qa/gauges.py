"""QA's readings for ``/metrics``: the newest daily QA's general figures.

Why these: the daily QA's headline figures (URLs, bytes, failure and duplicate shares...) are
the scores a curator compares from day to day; on a dashboard a sudden change shows at a glance.
"""

from __future__ import annotations

from datetime import UTC, datetime, time

from harvestflow.db import get_engine
from harvestflow.monitoring.probes import Reading
from harvestflow.settings import Settings, get_settings
from qa.store import latest_figures


def readings(settings: Settings | None = None) -> list[Reading]:
    settings = settings or get_settings()
    day, figures = latest_figures(get_engine(settings.harvest_db_url))
    out = [
        Reading(
            "harvestflow_qa_day_figure",
            "The newest daily QA's general figures",
            value,
            {"figure": key},
        )
        for key, value in sorted(figures.items())
    ]
    stamp = datetime.combine(day, time(), UTC).timestamp() if day else 0.0
    out.append(
        Reading(
            "harvestflow_qa_day_timestamp_seconds",
            "The day the newest daily QA reports on (epoch s; 0: none yet)",
            stamp,
        )
    )
    return out
