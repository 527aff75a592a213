"""The hourly launcher: seeds of the crawl feed whose schedule fires in the coming hour.

Why per launch hour: like the UK Web Archive's frequent crawl, a launcher run stands for one hour
and injects the seeds whose schedule fires in it (DAILY at the start date's hour, WEEKLY on the
same weekday, MONTHLY on the same day of the month — the last day for a shorter month —,
QUARTERLY and SIXMONTHLY on that day every third or sixth month, ANNUAL on the same day and
month). Each (record, hour, seed) is written to continuous_launches first; only rows that were
not there yet are injected, so a re-run of the same hour injects nothing twice. Injecting makes
the seed due at the event time in the URL state (its history is kept) and, when asked, resets the
seed's quota of fetches since its last launch.

Which revisit policy a seed's URLs get: the seed's template, the crawl profile its record's depth
maps to in config/selection_mapping.toml (``depth_templates``), so that settings
``[continuous.policy.<template>]`` apply to it; ``continuous`` when the depth maps to none.
"""

from __future__ import annotations

import calendar
import datetime as dt
import logging
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from harvest.continuous import store
from harvest.continuous.policy import RevisitPolicy
from harvest.continuous.urlstate import new_state
from harvestflow.formats.urls import host_of, without_fragment

log = logging.getLogger(__name__)

DEFAULT_TEMPLATE = "continuous"
EVERY_MONTHS = {"MONTHLY": 1, "QUARTERLY": 3, "SIXMONTHLY": 6, "ANNUAL": 12}
ALIASES = {
    "SIX-MONTHLY": "SIXMONTHLY",
    "SEMIANNUAL": "SIXMONTHLY",
    "SEMI-ANNUAL": "SIXMONTHLY",
    "HALF-YEARLY": "SIXMONTHLY",
    "ANNUALLY": "ANNUAL",
    "YEARLY": "ANNUAL",
}


def normalise_frequency(value: str | None) -> str:
    key = (value or "").strip().upper().replace("_", "-")
    return ALIASES.get(key, key)


def _parse(value: Any) -> dt.datetime | None:
    if not value:
        return None
    parsed = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def event_in_hour(schedule: dict[str, Any], hour_start: dt.datetime) -> dt.datetime | None:
    """The event of ``schedule`` in ``[hour_start, hour_start + 1h)``, or None."""
    freq = normalise_frequency(schedule.get("frequency"))
    start = _parse(schedule.get("startDate"))
    end = _parse(schedule.get("endDate"))
    if start is None or freq in ("", "DOMAINCRAWL"):
        return None
    hour_start = hour_start.astimezone(dt.UTC).replace(minute=0, second=0, microsecond=0)
    start = start.astimezone(dt.UTC)
    event = hour_start.replace(minute=start.minute, second=start.second)
    if hour_start.hour != start.hour or event < start or (end is not None and event > end):
        return None
    if freq == "DAILY":
        return event
    if freq == "WEEKLY":
        return event if event.weekday() == start.weekday() else None
    if freq in EVERY_MONTHS:
        months = (event.year - start.year) * 12 + (event.month - start.month)
        if months % EVERY_MONTHS[freq]:
            return None
        last = calendar.monthrange(event.year, event.month)[1]
        return event if event.day == min(start.day, last) else None
    log.warning("unknown schedule frequency %r", schedule.get("frequency"))
    return None


def crawl_scope(scope: str | None, depth: str | None) -> str:
    """The continuous crawl's scope for a record (feed scope word, else our depth word)."""
    word = (scope or depth or "").lower()
    if word in ("subdomains", "domain"):
        return "domain"
    if word in ("resource", "page"):
        return "path"
    return "host"


@dataclass
class LaunchResult:
    hour: str
    records_due: int = 0
    injected: list[str] = field(default_factory=list)
    already_launched: int = 0


def launch_hour(
    engine: sa.Engine,
    hour_start: dt.datetime,
    policy: RevisitPolicy | None = None,
    *,
    reset_quotas: bool = True,
    max_urls_per_launch: int = -1,
    depth_templates: dict[str, str] | None = None,
) -> LaunchResult:
    """Inject the seeds whose schedule fires in the hour starting at ``hour_start``.

    ``depth_templates`` maps a record's depth to the template whose revisit policy its seeds
    get (see the module doc); the frequency logged per launch is that of the schedule that fired.
    """
    policy = policy or RevisitPolicy()
    depth_templates = depth_templates or {}
    hour_start = hour_start.astimezone(dt.UTC).replace(minute=0, second=0, microsecond=0)
    result = LaunchResult(hour=hour_start.isoformat())
    with engine.begin() as conn:
        records = conn.execute(
            sa.text(
                "SELECT record_id, seed_url, supplementary_urls, schedules, scope, depth"
                " FROM selection_records WHERE active AND jsonb_array_length(schedules) > 0"
                " ORDER BY record_id"
            )
        ).all()
        for rec in records:
            events = [
                (e, normalise_frequency(s.get("frequency")))
                for s in rec.schedules or []
                if (e := event_in_hour(s, hour_start))
            ]
            if not events:
                continue
            result.records_due += 1
            event, freq = min(events)
            scope = crawl_scope(rec.scope, rec.depth)
            template = depth_templates.get(rec.depth or "", DEFAULT_TEMPLATE)
            # stored as the crawler captures it: without a fragment (never sent to a server)
            seeds = [rec.seed_url, *(rec.supplementary_urls or [])]
            for seed in dict.fromkeys(without_fragment(s) for s in seeds):
                fresh = conn.execute(
                    sa.text(
                        "INSERT INTO continuous_launches (record_id, launch_hour, seed_url,"
                        " frequency) VALUES (:r, :h, :s, :f) ON CONFLICT DO NOTHING"
                        " RETURNING seed_url"
                    ),
                    {"r": rec.record_id, "h": hour_start, "s": seed, "f": freq},
                ).first()
                if fresh is None:
                    result.already_launched += 1
                    continue
                _inject(
                    conn,
                    seed,
                    rec.record_id,
                    scope,
                    template,
                    event,
                    policy,
                    reset_quotas,
                    max_urls_per_launch,
                )
                result.injected.append(seed)
    log.info(
        "launch %s: %d record(s) due, %d seed(s) injected, %d already launched",
        result.hour,
        result.records_due,
        len(result.injected),
        result.already_launched,
    )
    return result


def _inject(
    conn: sa.Connection,
    seed: str,
    record_id: int,
    scope: str,
    template: str,
    event: dt.datetime,
    policy: RevisitPolicy,
    reset_quotas: bool,
    max_urls: int,
) -> None:
    conn.execute(
        sa.text(
            "INSERT INTO continuous_seeds (seed_url, record_id, scope, template,"
            " max_urls_per_launch, fetched_since_launch, last_launch)"
            " VALUES (:s, :r, :scope, :t, :m, 0, :e)"
            " ON CONFLICT (seed_url) DO UPDATE SET record_id = EXCLUDED.record_id,"
            " scope = EXCLUDED.scope, template = EXCLUDED.template,"
            " max_urls_per_launch = EXCLUDED.max_urls_per_launch,"
            " last_launch = EXCLUDED.last_launch, fetched_since_launch = CASE WHEN :reset"
            " THEN 0 ELSE continuous_seeds.fetched_since_launch END"
        ),
        {
            "s": seed,
            "r": record_id,
            "scope": scope,
            "t": template,
            "m": max_urls,
            "e": event,
            "reset": reset_quotas,
        },
    )
    if not store.insert_new(conn, [new_state(seed, host_of(seed), seed, 0, event, policy)]):
        conn.execute(
            sa.text(
                "UPDATE continuous_url_state SET next_due = LEAST(next_due, :e) WHERE url = :s"
            ),
            {"e": event, "s": seed},
        )
