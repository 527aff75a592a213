"""From sources to the harvest DB: DNS check, transfer, inactive domains, report; idempotent."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from harvest.preload.dnstask import dns_check_chunk
from harvest.preload.sources import collect_sources
from harvest.preload.transfer import preload_report, transfer
from tests.support.dnsserver import ZoneServer


def _snapshot(engine: sa.Engine) -> list[tuple[object, ...]]:
    with engine.connect() as conn:
        return conn.execute(
            sa.text(
                "SELECT d.name, d.active, d.inactive_reason, c.name, c.maxbytes, c.maxobjects,"
                " c.maxrate, t.name, s.seeds FROM domains d"
                " LEFT JOIN configurations c ON c.config_id = d.defaultconfig"
                " LEFT JOIN templates t ON t.template_id = c.template_id"
                " LEFT JOIN config_seedlists cs ON cs.config_id = c.config_id"
                " LEFT JOIN seedlists s ON s.seedlist_id = cs.seedlist_id ORDER BY d.name"
            )
        ).all()


def test_preload_loads_active_domains_and_marks_failed_ones_inactive(
    db_engine: sa.Engine, preload_settings, run_id: str, zone_server: ZoneServer, tmp_path: Path
) -> None:
    zone_server.records.update(
        {
            "kept.test": {"A": ["192.0.2.5"]},
            "fresh.test": {"A": ["192.0.2.6"]},
            "curated.test": {"A": ["192.0.2.7"]},
        }
    )
    with db_engine.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO templates (name) VALUES ('curated_tpl'), ('default_snapshot')"
                " ON CONFLICT DO NOTHING"
            )
        )
        conn.execute(
            sa.text(
                "INSERT INTO domains (name) VALUES ('kept.test'), ('dead.test'), ('manual.test'),"
                " ('curated.test')"
            )
        )
        conn.execute(
            sa.text(
                "UPDATE domains SET active = false, inactive_reason = 'curator said so'"
                " WHERE name = 'manual.test'"
            )
        )
        conn.execute(
            sa.text(
                "INSERT INTO configurations (name, domain_id, template_id, maxbytes)"
                " SELECT 'curated', domain_id, (SELECT template_id FROM templates"
                " WHERE name = 'curated_tpl'), 5000 FROM domains WHERE name = 'curated.test'"
            )
        )
        conn.execute(
            sa.text(
                "INSERT INTO seedlists (name, domain_id, seeds) SELECT 'curated-seeds',"
                " domain_id, 'http://curated.test/home' FROM domains WHERE name = 'curated.test'"
            )
        )
        conn.execute(
            sa.text(
                "INSERT INTO config_seedlists SELECT c.config_id, s.seedlist_id"
                " FROM configurations c JOIN seedlists s USING (domain_id)"
            )
        )
        conn.execute(
            sa.text(
                "UPDATE domains d SET defaultconfig = c.config_id FROM configurations c"
                " WHERE c.domain_id = d.domain_id"
            )
        )
    registry = tmp_path / "registry.txt"
    registry.write_text("fresh.test\nwww.exists.test\nnothere.test\nservfail.test\n!!bad\n")
    urls = tmp_path / "urls.txt"
    urls.write_text("http://curated.test/new-page\nhttp://www.fresh.test/specific\n")
    collected = collect_sources(
        run_id,
        [
            {"name": "db", "kind": "harvest_db"},
            {"name": "registry", "kind": "registry", "path": str(registry)},
            {"name": "urls", "kind": "url_list", "path": str(urls)},
        ],
        settings=preload_settings,
        engine=db_engine,
    )
    for chunk in collected["chunks"]:
        dns_check_chunk(
            run_id, chunk, [zone_server.address], settings=preload_settings, engine=db_engine
        )
    report = transfer(run_id, settings=preload_settings, engine=db_engine)

    rows = {r[0]: r for r in _snapshot(db_engine)}
    # new active domain: NetarchiveSuite defaults, four seeds + the specific URL
    fresh = rows["fresh.test"]
    assert fresh[1:8] == (True, None, "defaultconfig", 1_000_000_000, -1, 100, "default_snapshot")
    assert fresh[8].split("\n") == [
        "http://www.fresh.test",
        "https://www.fresh.test",
        "http://fresh.test",
        "https://fresh.test",
        "http://www.fresh.test/specific",
    ]
    assert rows["exists.test"][1] is True
    # unknown (SERVFAIL) is never excluded: loaded
    assert rows["servfail.test"][1] is True
    # NXDOMAIN new domain: not loaded
    assert "nothere.test" not in rows
    # existing domain whose DNS failed: inactive with the reason
    assert rows["dead.test"][1] is False and "NXDOMAIN" in rows["dead.test"][2]
    assert run_id in rows["dead.test"][2]
    # deactivated by a curator: left alone
    assert rows["manual.test"][2] == "curator said so"
    # existing curated configuration kept, specific URL appended to its seeds
    curated = rows["curated.test"]
    assert (curated[3], curated[4], curated[7]) == ("curated", 5000, "curated_tpl")
    assert curated[8] == "http://curated.test/home\nhttp://curated.test/new-page"
    # existing domain without configuration gets the default one
    assert rows["kept.test"][3] == "defaultconfig"

    assert report["domains_created"] == 3  # fresh, exists, servfail
    assert report["made_inactive"] == 1  # dead.test (manual.test was already inactive)
    assert report["dns"]["failed"] >= 2
    assert report["rejected_lines"] == 1
    assert {s["source_name"] for s in report["sources"]} == {"db", "registry", "urls"}
    assert Path(collected["run_dir"], "report.txt").read_text().startswith("Broad-crawl preload")

    before = _snapshot(db_engine)
    again = transfer(run_id, settings=preload_settings, engine=db_engine)
    assert _snapshot(db_engine) == before
    assert again["transfer_call"]["domains_created"] == 0
    assert (
        preload_report(run_id, settings=preload_settings, engine=db_engine)["domains_created"] == 3
    )
