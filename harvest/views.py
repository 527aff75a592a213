"""Read-only views of the harvest database, shaped for the curator pages.

Why plain SQL text: every statement is a constant with bound parameters (``:name``), so no
curator input ever becomes SQL; sorting and paging are fixed here, never taken from the URL.
Each list query returns a :class:`Page` (rows + total) so big tables are paginated. Pages
read through :func:`read_only` connections, so even a faulty query cannot write.

Why in harvest: every table these read is harvest's (definitions, jobs, domains, their
configurations and history); the stage that owns the tables owns the queries on them, and the
curator pages (app.curator) call them.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from harvestflow.formats.job_status import JobStatus
from harvestflow.formats.stop_reasons import StopReason
from harvestflow.paged import Page, page_of, rows_of

# the schedule's time unit (NetarchiveSuite's enumeration, as harvest/schedule.py numbers it)
TIME_UNIT = {1: "hour", 2: "day", 3: "week", 4: "month", 5: "minute"}


def definitions(conn: sa.Connection, page: int = 1, size: int = 50) -> Page:
    """Harvest definitions with type, schedule, next date, channel, configuration count."""
    result = page_of(
        conn,
        "SELECT count(*) FROM harvestdefinitions",
        "SELECT h.harvest_id, h.name, h.kind, h.isactive, h.numevents, h.audience,"
        " c.name AS channel, s.name AS schedule, s.timeunit, s.numtimeunits, s.cron, p.nextdate,"
        " p.frequency, f.maxobjects, f.maxbytes,"
        " (SELECT count(*) FROM harvest_configs hc WHERE hc.harvest_id = h.harvest_id)"
        "   AS configs"
        " FROM harvestdefinitions h"
        " LEFT JOIN harvestchannel c ON c.id = h.channel_id"
        " LEFT JOIN partialharvests p ON p.harvest_id = h.harvest_id"
        " LEFT JOIN schedules s ON s.schedule_id = p.schedule_id"
        " LEFT JOIN fullharvests f ON f.harvest_id = h.harvest_id"
        " ORDER BY h.harvest_id",
        page,
        size,
    )
    ids = [r["harvest_id"] for r in result.rows]
    last: dict[int, list[dict[str, Any]]] = {}
    if ids:
        for r in rows_of(
            conn,
            "SELECT harvest_id, harvest_num, count(*) AS jobs,"
            f" count(*) FILTER (WHERE status = {JobStatus.DONE:d}) AS done,"
            f" count(*) FILTER (WHERE status IN ({JobStatus.FAILED:d}, {JobStatus.FAILED_REJECTED:d}))"
            " AS failed, max(enddate) AS ended"
            " FROM (SELECT j.*, dense_rank() OVER (PARTITION BY harvest_id"
            "       ORDER BY harvest_num DESC) AS rk FROM jobs j"
            "       WHERE harvest_id = ANY(:ids)) t"
            " WHERE rk <= 3 GROUP BY harvest_id, harvest_num"
            " ORDER BY harvest_id, harvest_num DESC",
            ids=ids,
        ):
            last.setdefault(r["harvest_id"], []).append(r)
    for row in result.rows:
        row["last_runs"] = last.get(row["harvest_id"], [])
        unit = TIME_UNIT.get(row["timeunit"] or 0)
        row["every"] = f"every {row['numtimeunits']} {unit}(s)" if unit else ""
        if row["cron"]:
            row["every"] = f"cron {row['cron']}"
    return result


def jobs(
    conn: sa.Connection,
    page: int = 1,
    size: int = 50,
    status: int | None = None,
    harvest_id: int | None = None,
) -> Page:
    """Jobs, newest first, optionally of one status or definition, with history sums."""
    where = (
        " WHERE (CAST(:status AS smallint) IS NULL OR j.status = :status)"
        " AND (CAST(:hid AS integer) IS NULL OR j.harvest_id = :hid)"
    )
    result = page_of(
        conn,
        "SELECT count(*) FROM jobs j" + where,
        "SELECT j.job_id, j.harvest_id, h.name AS harvest_name, j.harvest_num, j.status,"
        " j.channel, j.snapshot, j.startdate, j.enddate, j.job_dir, j.harvest_errors,"
        " j.airflow_task,"
        " (SELECT sum(objectcount) FROM historyinfo hi WHERE hi.job_id = j.job_id) AS urls,"
        " (SELECT sum(bytecount) FROM historyinfo hi WHERE hi.job_id = j.job_id) AS bytes,"
        " (SELECT array_agg(DISTINCT stopreason) FROM historyinfo hi"
        "   WHERE hi.job_id = j.job_id) AS stopreasons"
        " FROM jobs j JOIN harvestdefinitions h ON h.harvest_id = j.harvest_id"
        + where
        + " ORDER BY j.job_id DESC",
        page,
        size,
        status=status,
        hid=harvest_id,
    )
    for row in result.rows:
        _decorate_job(row)
    return result


def _decorate_job(row: dict[str, Any]) -> None:
    row["status_name"] = JobStatus.name_of(row["status"])
    row["stop_names"] = [StopReason.name_of(s) for s in (row.get("stopreasons") or [])]


def job(
    conn: sa.Connection, job_id: int, history_page: int = 1, size: int = 50
) -> dict[str, Any] | None:
    """One job with its definition's name and its domains (paginated: a snapshot job has
    thousands), or None."""
    rows = rows_of(
        conn,
        "SELECT j.*, h.name AS harvest_name FROM jobs j"
        " JOIN harvestdefinitions h ON h.harvest_id = j.harvest_id WHERE j.job_id = :id",
        id=job_id,
    )
    if not rows:
        return None
    row = rows[0]
    row["stopreasons"] = None
    _decorate_job(row)
    history_from = (
        " FROM historyinfo hi JOIN configurations c ON c.config_id = hi.config_id"
        " JOIN domains d ON d.domain_id = c.domain_id WHERE hi.job_id = :id"
    )
    row["history"] = page_of(
        conn,
        "SELECT count(*)" + history_from,
        "SELECT d.name AS domain, c.name AS config, hi.stopreason, hi.objectcount,"
        " hi.bytecount, hi.harvest_time" + history_from + " ORDER BY d.name, c.name",
        history_page,
        size,
        id=job_id,
    )
    for h in row["history"].rows:
        h["stop_name"] = StopReason.name_of(h["stopreason"])
    return row


def domains(conn: sa.Connection, query: str = "", page: int = 1, size: int = 50) -> Page:
    """Domains whose name contains ``query`` (a literal: LIKE wildcards are escaped)."""
    literal = query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    where = " WHERE d.name LIKE :pat ESCAPE '\\'"
    return page_of(
        conn,
        "SELECT count(*) FROM domains d" + where,
        "SELECT d.domain_id, d.name, d.active, d.inactive_reason, a.name AS alias_of,"
        " (SELECT count(*) FROM configurations c WHERE c.domain_id = d.domain_id) AS configs,"
        " (SELECT max(hi.harvest_time) FROM historyinfo hi JOIN configurations c"
        "   ON c.config_id = hi.config_id WHERE c.domain_id = d.domain_id) AS last_harvest"
        " FROM domains d LEFT JOIN domains a ON a.domain_id = d.alias" + where + " ORDER BY d.name",
        page,
        size,
        pat=f"%{literal}%",
    )


def domain(
    conn: sa.Connection, name: str, history_page: int = 1, size: int = 50
) -> dict[str, Any] | None:
    """A domain: configurations, seed lists, aliases both ways, paginated harvest history."""
    rows = rows_of(
        conn,
        "SELECT d.*, a.name AS alias_of FROM domains d"
        " LEFT JOIN domains a ON a.domain_id = d.alias WHERE d.name = :name",
        name=name,
    )
    if not rows:
        return None
    dom = rows[0]
    did = dom["domain_id"]
    dom["configurations"] = rows_of(
        conn,
        "SELECT c.config_id, c.name, t.name AS template, c.maxobjects, c.maxbytes, c.maxrate,"
        " c.config_id = :default AS is_default,"
        " (SELECT string_agg(s.name, ', ' ORDER BY s.name) FROM config_seedlists cs"
        "   JOIN seedlists s ON s.seedlist_id = cs.seedlist_id"
        "   WHERE cs.config_id = c.config_id) AS seedlists,"
        " (SELECT string_agg(s.seeds, E'\\n' ORDER BY s.seedlist_id) FROM config_seedlists cs"
        "   JOIN seedlists s ON s.seedlist_id = cs.seedlist_id"
        "   WHERE cs.config_id = c.config_id) AS seeds"
        " FROM configurations c JOIN templates t ON t.template_id = c.template_id"
        " WHERE c.domain_id = :id ORDER BY c.name",
        id=did,
        default=dom["defaultconfig"],
    )
    dom["seedlists"] = rows_of(
        conn,
        "SELECT name, seeds FROM seedlists WHERE domain_id = :id ORDER BY name",
        id=did,
    )
    dom["aliases"] = [
        r["name"]
        for r in rows_of(conn, "SELECT name FROM domains WHERE alias = :id ORDER BY name", id=did)
    ]
    history_from = (
        " FROM historyinfo hi JOIN configurations c ON c.config_id = hi.config_id"
        " JOIN harvestdefinitions h ON h.harvest_id = hi.harvest_id"
        " WHERE c.domain_id = :id"
    )
    dom["history"] = page_of(
        conn,
        "SELECT count(*)" + history_from,
        "SELECT hi.harvest_time, hi.job_id, h.harvest_id, h.name AS harvest_name,"
        " c.name AS config, hi.stopreason, hi.objectcount, hi.bytecount"
        + history_from
        + " ORDER BY hi.harvest_time DESC, hi.job_id DESC",
        history_page,
        size,
        id=did,
    )
    for h in dom["history"].rows:
        h["stop_name"] = StopReason.name_of(h["stopreason"])
    return dom


def domain_exists(conn: sa.Connection, name: str) -> bool:
    """Whether ``name`` is a domain of the harvest database (charts only for those)."""
    return bool(rows_of(conn, "SELECT 1 FROM domains WHERE name = :name", name=name))


def domain_sizes(conn: sa.Connection, name: str, limit: int = 2000) -> list[dict[str, Any]]:
    """(time, objects, bytes, stop reason) of a domain's harvests, oldest first, for charts."""
    rows = rows_of(
        conn,
        "SELECT * FROM (SELECT hi.harvest_time, hi.objectcount, hi.bytecount, hi.stopreason"
        " FROM historyinfo hi JOIN configurations c ON c.config_id = hi.config_id"
        " JOIN domains d ON d.domain_id = c.domain_id WHERE d.name = :name"
        " ORDER BY hi.harvest_time DESC LIMIT :lim) t ORDER BY harvest_time",
        name=name,
        lim=limit,
    )
    return rows


def definition_names(conn: sa.Connection, harvest_ids: list[int]) -> dict[int, str]:
    """Names of the given harvest definitions (for other stages' pages that list them)."""
    if not harvest_ids:
        return {}
    rows = rows_of(
        conn,
        "SELECT harvest_id, name FROM harvestdefinitions WHERE harvest_id = ANY(:ids)",
        ids=sorted(set(harvest_ids)),
    )
    return {r["harvest_id"]: r["name"] for r in rows}
