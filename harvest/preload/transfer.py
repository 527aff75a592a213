"""Transfer: load the checked domains of a preload run into the harvest DB, and report.

Why set-based SQL in one transaction: a yearly preload moves millions of domains, and a killed
task must leave nothing half done; every step is an UPSERT or a guarded UPDATE, so a second
``transfer`` changes nothing. New domains get NetarchiveSuite's default configuration and
seeds; existing ones keep their curated configuration; a domain whose DNS check failed is made
inactive (and reactivated when this preload had deactivated it and it answers again).
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from harvest.preload.store import engine_for, preload_settings, run_dir
from harvestflow.atomic import atomic_write_text
from harvestflow.settings import Settings, get_settings

log = logging.getLogger(__name__)

CONFIG_NAME = "defaultconfig"
SEEDLIST_NAME = "defaultconfig-seeds"
MAX_BYTES = 1_000_000_000
MAX_OBJECTS = -1
MAX_RATE = 100


class _Timed:
    """Runs the transfer's statements, logging each one's row count and duration."""

    def __init__(self, conn: Connection, params: dict[str, Any]) -> None:
        self.conn = conn
        self.params = params

    def __call__(self, name: str, sql: str) -> int:
        started = time.monotonic()
        count = int(self.conn.execute(sa.text(sql), self.params).rowcount or 0)
        log.info("transfer step %s: %d rows in %.1fs", name, count, time.monotonic() - started)
        return count


def _created_marker(run_id: str) -> str:
    return f"created by preload run {run_id}"


def _template_id(conn: Connection, name: str) -> int:
    """The template's id; the row is created (empty spec) when the planning side has not yet."""
    tid = conn.execute(
        sa.text("SELECT template_id FROM templates WHERE name = :n"), {"n": name}
    ).scalar()
    if tid is None:
        log.warning("template %s missing: creating an empty one (run ensure_reference_data)", name)
        tid = conn.execute(
            sa.text(
                "INSERT INTO templates (name, description) VALUES (:n, 'created by the preload')"
                " ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name RETURNING template_id"
            ),
            {"n": name},
        ).scalar_one()
    return int(tid)


def transfer(
    run_id: str, settings: Settings | None = None, engine: Engine | None = None
) -> dict[str, Any]:
    """Load the run's checked domains into domains/configurations/seedlists; the report."""
    settings = settings or get_settings()
    conf = preload_settings(settings)
    engine = engine_for(engine, settings)
    prefix = str(conf["inactive_reason_prefix"])
    params: dict[str, Any] = {"r": run_id, "marker": _created_marker(run_id), "prefix": prefix}
    with engine.begin() as conn:
        if not conn.execute(
            sa.text("SELECT 1 FROM preload_runs WHERE run_id = :r"), {"r": run_id}
        ).scalar():
            raise ValueError(f"no preload run {run_id!r} (collect_sources first)")
        params["tid"] = _template_id(conn, str(conf["template"]))
        conn.execute(
            sa.text(
                "CREATE TEMP TABLE preload_tx ON COMMIT DROP AS"
                " SELECT domain, class, detail FROM dns_checks WHERE run_id = :r"
            ),
            params,
        )
        conn.exec_driver_sql("CREATE INDEX ON preload_tx (domain)")
        conn.exec_driver_sql("ANALYZE preload_tx")
        run = _Timed(conn, params)
        steps: dict[str, int] = {}
        # New domains get their ids, configuration and seed list ids up front, so each row is
        # written once (an UPDATE of defaultconfig afterwards rewrote every domain row again).
        run(
            "new_domains_planned",
            "CREATE TEMP TABLE preload_new ON COMMIT DROP AS SELECT t.domain,"
            " nextval(pg_get_serial_sequence('domains', 'domain_id')) AS domain_id,"
            " nextval(pg_get_serial_sequence('configurations', 'config_id')) AS config_id,"
            " nextval(pg_get_serial_sequence('seedlists', 'seedlist_id')) AS seedlist_id"
            " FROM (SELECT domain FROM preload_tx WHERE class <> 'failed' ORDER BY domain) t"
            " WHERE NOT EXISTS (SELECT 1 FROM domains d WHERE d.name = t.domain)",
        )
        steps["domains_created"] = run(
            "domains_created",
            "INSERT INTO domains (domain_id, name, comments, defaultconfig)"
            " SELECT domain_id, domain, :marker, config_id FROM preload_new ORDER BY domain_id"
            " ON CONFLICT (name) DO NOTHING",
        )
        inserted = (
            " FROM preload_new n JOIN domains d ON d.domain_id = n.domain_id AND d.name = n.domain"
        )
        run(
            "new_configs",
            f"INSERT INTO configurations (config_id, name, comments, domain_id, template_id,"
            f" maxobjects, maxrate, maxbytes)"
            f" SELECT n.config_id, '{CONFIG_NAME}', 'preload ' || :r, n.domain_id, :tid,"
            f" {MAX_OBJECTS}, {MAX_RATE}, {MAX_BYTES}" + inserted,
        )
        run(
            "new_seedlists",
            f"INSERT INTO seedlists (seedlist_id, name, domain_id, seeds)"
            f" SELECT n.seedlist_id, '{SEEDLIST_NAME}', n.domain_id,"
            f" concat_ws(E'\\n', 'http://www.' || n.domain, 'https://www.' || n.domain,"
            f" 'http://' || n.domain, 'https://' || n.domain)" + inserted,
        )
        run(
            "new_links",
            "INSERT INTO config_seedlists (config_id, seedlist_id)"
            " SELECT n.config_id, n.seedlist_id" + inserted,
        )
        # fresh statistics: without them the planner takes the grown table for empty and
        # joins it row by row (minutes instead of seconds on a million domains)
        conn.exec_driver_sql("ANALYZE domains")
        steps["configs_added_to_existing"] = run(
            "configs_added_to_existing",
            f"INSERT INTO configurations (name, comments, domain_id, template_id,"
            f" maxobjects, maxrate, maxbytes)"
            f" SELECT '{CONFIG_NAME}', 'preload ' || :r, d.domain_id, :tid,"
            f" {MAX_OBJECTS}, {MAX_RATE}, {MAX_BYTES}"
            f" FROM preload_tx t JOIN domains d ON d.name = t.domain"
            f" WHERE t.class <> 'failed' AND d.defaultconfig IS NULL"
            f" ON CONFLICT (domain_id, name) DO NOTHING",
        )
        conn.exec_driver_sql("ANALYZE configurations")
        run(
            "defaultconfig_set",
            f"UPDATE domains d SET defaultconfig = c.config_id FROM configurations c,"
            f" preload_tx t WHERE c.domain_id = d.domain_id AND c.name = '{CONFIG_NAME}'"
            f" AND d.defaultconfig IS NULL AND d.name = t.domain AND t.class <> 'failed'",
        )
        steps["seedlists_added_to_existing"] = run(
            "seedlists_added_to_existing",
            f"INSERT INTO seedlists (name, domain_id, seeds)"
            f" SELECT '{SEEDLIST_NAME}', d.domain_id,"
            f" concat_ws(E'\\n', 'http://www.' || d.name, 'https://www.' || d.name,"
            f" 'http://' || d.name, 'https://' || d.name)"
            f" FROM preload_tx t JOIN domains d ON d.name = t.domain"
            f" WHERE t.class <> 'failed' AND NOT EXISTS (SELECT 1 FROM config_seedlists cs"
            f" WHERE cs.config_id = d.defaultconfig)"
            f" ON CONFLICT (domain_id, name) DO NOTHING",
        )
        conn.exec_driver_sql("ANALYZE seedlists")
        run(
            "seedlists_linked",
            f"INSERT INTO config_seedlists (config_id, seedlist_id)"
            f" SELECT d.defaultconfig, s.seedlist_id FROM preload_tx t"
            f" JOIN domains d ON d.name = t.domain"
            f" JOIN seedlists s ON s.domain_id = d.domain_id AND s.name = '{SEEDLIST_NAME}'"
            f" WHERE t.class <> 'failed' AND NOT EXISTS (SELECT 1 FROM config_seedlists cs"
            f" WHERE cs.config_id = d.defaultconfig) ON CONFLICT DO NOTHING",
        )
        conn.exec_driver_sql("ANALYZE config_seedlists")
        steps["seedlists_extended"] = run(
            "seedlists_extended",
            "WITH target AS ("
            " SELECT DISTINCT ON (d.domain_id) d.domain_id, d.name, cs.seedlist_id"
            " FROM preload_tx t JOIN domains d ON d.name = t.domain"
            " JOIN config_seedlists cs ON cs.config_id = d.defaultconfig"
            " WHERE t.class <> 'failed' AND EXISTS (SELECT 1 FROM preload_seeds p"
            " WHERE p.run_id = :r AND p.domain = t.domain)"
            " ORDER BY d.domain_id, cs.seedlist_id),"
            " additions AS ("
            " SELECT tg.seedlist_id, string_agg(p.url, E'\\n' ORDER BY p.url) AS urls"
            " FROM target tg JOIN seedlists s ON s.seedlist_id = tg.seedlist_id"
            " JOIN preload_seeds p ON p.run_id = :r AND p.domain = tg.name"
            " WHERE NOT (p.url = ANY(string_to_array(s.seeds, E'\\n')))"
            " GROUP BY tg.seedlist_id)"
            " UPDATE seedlists s SET seeds = CASE WHEN s.seeds = '' THEN a.urls"
            " ELSE s.seeds || E'\\n' || a.urls END"
            " FROM additions a WHERE s.seedlist_id = a.seedlist_id",
        )
        steps["made_inactive"] = run(
            "made_inactive",
            "UPDATE domains d SET active = false, inactive_since = now(),"
            " inactive_reason = :prefix || ' (run ' || :r || '): ' || coalesce(t.detail, ''),"
            " edition = d.edition + 1"
            " FROM preload_tx t WHERE d.name = t.domain AND t.class = 'failed' AND d.active",
        )
        steps["reactivated"] = run(
            "reactivated",
            "UPDATE domains d SET active = true, inactive_since = NULL,"
            " inactive_reason = NULL, edition = d.edition + 1"
            " FROM preload_tx t WHERE d.name = t.domain AND t.class = 'active'"
            " AND NOT d.active AND d.inactive_reason LIKE :prefix || ' (run %'"
            " AND d.inactive_reason NOT LIKE :prefix || ' (run ' || :r || ')%'",
        )
    log.info("preload %s transfer: %s", run_id, steps)
    report = preload_report(run_id, settings=settings, engine=engine, finished=True)
    report["transfer_call"] = steps
    return report


def _scalar(conn: Connection, sql: str, params: dict[str, Any]) -> int:
    return int(conn.execute(sa.text(sql), params).scalar() or 0)


def preload_report(
    run_id: str,
    settings: Settings | None = None,
    engine: Engine | None = None,
    finished: bool = False,
) -> dict[str, Any]:
    """Figures of a run in the spirit of the BnF's (computed from the DB, so repeatable).

    Written to ``<run_dir>/report.json`` and ``report.txt`` and stored in ``preload_runs``.
    """
    settings = settings or get_settings()
    conf = preload_settings(settings)
    engine = engine_for(engine, settings)
    p = {
        "r": run_id,
        "marker": _created_marker(run_id),
        "prefix": str(conf["inactive_reason_prefix"]),
    }
    with engine.begin() as conn:
        dns = {
            cls: int(n)
            for cls, n in conn.execute(
                sa.text("SELECT class, count(*) FROM dns_checks WHERE run_id = :r GROUP BY 1"), p
            )
        }
        sources = []
        for row in conn.execute(
            sa.text(
                "SELECT source_name, kind, lines, valid, unique_count, new_count"
                " FROM preload_sources WHERE run_id = :r ORDER BY source_name"
            ),
            p,
        ).mappings():
            sources.append(dict(row))
        by_origin: dict[str, dict[str, int]] = {}
        for origin, cls, n in conn.execute(
            sa.text(
                "SELECT o.origin, coalesce(c.class, 'unchecked'), count(*)"
                " FROM domain_origins o LEFT JOIN dns_checks c"
                " ON c.run_id = o.run_id AND c.domain = o.domain"
                " WHERE o.run_id = :r GROUP BY 1, 2"
            ),
            p,
        ):
            by_origin.setdefault(origin, {})[cls] = int(n)
        for source in sources:
            source["dns"] = by_origin.get(source["source_name"], {})
        redirect = by_origin.get("redirect", {})
        redirect_only = _scalar(
            conn,
            "SELECT count(*) FROM (SELECT domain FROM domain_origins WHERE run_id = :r"
            " GROUP BY domain HAVING bool_and(origin = 'redirect')) x",
            p,
        )
        created = _scalar(conn, "SELECT count(*) FROM domains WHERE comments = :marker", p)
        report: dict[str, Any] = {
            "run_id": run_id,
            "unique_domains": _scalar(
                conn, "SELECT count(DISTINCT domain) FROM domain_origins WHERE run_id = :r", p
            ),
            "dns": {k: dns.get(k, 0) for k in ("active", "failed", "unknown")},
            "sources": sources,
            "redirects": {
                "probed_urls": _scalar(
                    conn, "SELECT count(*) FROM redirect_checks WHERE run_id = :r", p
                ),
                "cross_domain": _scalar(
                    conn,
                    "SELECT count(*) FROM redirect_checks WHERE run_id = :r"
                    " AND target_domain IS NOT NULL",
                    p,
                ),
                "target_domains": sum(redirect.values()),
                "new_domains": redirect_only,
                "dns": redirect,
            },
            "domains_created": created,
            "domains_transferred": _scalar(
                conn,
                "SELECT count(*) FROM dns_checks c JOIN domains d ON d.name = c.domain"
                " WHERE c.run_id = :r AND c.class <> 'failed'",
                p,
            ),
            "seeds_transferred": 4 * created
            + _scalar(
                conn,
                "SELECT count(*) FROM preload_seeds s JOIN dns_checks c ON c.run_id = s.run_id"
                " AND c.domain = s.domain WHERE s.run_id = :r AND c.class <> 'failed'",
                p,
            ),
            "made_inactive": _scalar(
                conn,
                "SELECT count(*) FROM domains WHERE NOT active"
                " AND inactive_reason LIKE :prefix || ' (run ' || :r || ')%'",
                p,
            ),
            "failed_not_loaded": _scalar(
                conn,
                "SELECT count(*) FROM dns_checks c WHERE c.run_id = :r AND c.class = 'failed'"
                " AND NOT EXISTS (SELECT 1 FROM domains d WHERE d.name = c.domain)",
                p,
            ),
        }
        rejects = run_dir(run_id, settings) / "rejects.tsv"
        if rejects.exists():
            with rejects.open(encoding="utf-8") as handle:
                report["rejected_lines"] = max(0, sum(1 for _ in handle) - 1)
            report["rejects_path"] = str(rejects)
        conn.execute(
            sa.text(
                "UPDATE preload_runs SET report = CAST(:rep AS jsonb),"
                " finished_at = CASE WHEN :fin THEN now() ELSE finished_at END WHERE run_id = :r"
            ),
            {"rep": json.dumps(report), "fin": finished, "r": run_id},
        )
    _write_report_files(run_id, report, settings)
    return report


def report_text(report: dict[str, Any]) -> str:
    """The report as a curator reads it."""
    dns = report["dns"]
    lines = [
        f"Broad-crawl preload {report['run_id']}",
        f"  unique domains:       {report['unique_domains']:>12,}",
        f"  rejected lines:       {report.get('rejected_lines', 0):>12,}",
        f"  DNS active:           {dns['active']:>12,}",
        f"  DNS failed:           {dns['failed']:>12,}",
        f"  DNS unknown:          {dns['unknown']:>12,}  (not excluded)",
        f"  domains transferred:  {report['domains_transferred']:>12,}",
        f"    of which new:       {report['domains_created']:>12,}",
        f"  seeds transferred:    {report['seeds_transferred']:>12,}",
        f"  made inactive (DNS):  {report['made_inactive']:>12,}",
        f"  redirect probes:      {report['redirects']['probed_urls']:>12,}"
        f"  ({report['redirects']['cross_domain']:,} to another domain,"
        f" {report['redirects']['new_domains']:,} new domains)",
        "",
        f"  {'source':<20} {'kind':<11} {'lines':>11} {'valid':>11} {'unique':>11} {'new':>11}",
    ]
    for s in report["sources"]:
        lines.append(
            f"  {s['source_name']:<20} {s['kind']:<11} {s['lines']:>11,} {s['valid']:>11,}"
            f" {s['unique_count']:>11,} {s['new_count']:>11,}"
        )
    return "\n".join(lines) + "\n"


def _write_report_files(run_id: str, report: dict[str, Any], settings: Settings) -> None:
    directory = run_dir(run_id, settings)
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in (
        ("report.json", json.dumps(report, indent=2, sort_keys=True) + "\n"),
        ("report.txt", report_text(report)),
    ):
        atomic_write_text(directory / name, text)
