"""Read-only views of the harvest database for people: a domain and its history.

Why separate: ``harvestflow domain show`` (and the UI plugins) need one dict with everything a
curator asks about a domain — configurations, seeds, aliases, harvest history with stop reasons —
without knowing the schema.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from harvest.common import engine_or_default
from harvestflow.formats.stop_reasons import StopReason


def domain_report(
    name: str, engine: Engine | None = None, *, history_limit: int = 20
) -> dict[str, Any] | None:
    """Everything about domain ``name``; None when it is unknown."""
    engine = engine_or_default(engine)
    with engine.connect() as conn:
        dom = conn.execute(
            sa.text(
                "SELECT d.*, a.name AS alias_name FROM domains d"
                " LEFT JOIN domains a ON a.domain_id = d.alias WHERE d.name = :n"
            ),
            {"n": name.strip().lower()},
        ).first()
        if dom is None:
            return None
        aliases = (
            conn.execute(
                sa.text("SELECT name FROM domains WHERE alias = :d ORDER BY name"),
                {"d": dom.domain_id},
            )
            .scalars()
            .all()
        )
        configs = conn.execute(
            sa.text(
                "SELECT c.config_id, c.name, t.name AS template, c.maxobjects, c.maxbytes,"
                " c.maxrate, c.attributes, array_remove(array_agg(s.name ORDER BY s.name), NULL)"
                " AS seedlists FROM configurations c JOIN templates t USING (template_id)"
                " LEFT JOIN config_seedlists cs USING (config_id)"
                " LEFT JOIN seedlists s USING (seedlist_id)"
                " WHERE c.domain_id = :d GROUP BY c.config_id, t.name ORDER BY c.name"
            ),
            {"d": dom.domain_id},
        ).all()
        seedlists = conn.execute(
            sa.text("SELECT name, seeds FROM seedlists WHERE domain_id = :d ORDER BY name"),
            {"d": dom.domain_id},
        ).all()
        history = conn.execute(
            sa.text(
                "SELECT hi.harvest_time, h.name AS harvest_name, hi.harvest_id, hi.job_id,"
                " c.name AS config, hi.objectcount, hi.bytecount, hi.stopreason"
                " FROM historyinfo hi JOIN configurations c USING (config_id)"
                " JOIN harvestdefinitions h ON h.harvest_id = hi.harvest_id"
                " WHERE c.domain_id = :d ORDER BY hi.harvest_time DESC, hi.historyinfo_id DESC"
                " LIMIT :l"
            ),
            {"d": dom.domain_id, "l": history_limit},
        ).all()
    return {
        "domain_id": dom.domain_id,
        "name": dom.name,
        "active": dom.active,
        "inactive_reason": dom.inactive_reason,
        "alias_of": dom.alias_name,
        "lastaliasupdate": dom.lastaliasupdate,
        "alias_set_by": dom.alias_set_by,
        "aliases": list(aliases),
        "crawlertraps": list(dom.crawlertraps or []),
        "configurations": [
            {
                "config_id": c.config_id,
                "name": c.name,
                "default": c.config_id == dom.defaultconfig,
                "template": c.template,
                "maxobjects": c.maxobjects,
                "maxbytes": c.maxbytes,
                "maxrate": c.maxrate,
                "attributes": dict(c.attributes or {}),
                "seedlists": list(c.seedlists or []),
            }
            for c in configs
        ],
        "seedlists": [
            {"name": s.name, "seeds": [x for x in s.seeds.splitlines() if x.strip()]}
            for s in seedlists
        ],
        "history": [
            {
                "harvest_time": h.harvest_time,
                "harvest_name": h.harvest_name,
                "harvest_id": h.harvest_id,
                "job_id": h.job_id,
                "config": h.config,
                "objectcount": h.objectcount,
                "bytecount": h.bytecount,
                "stopreason": h.stopreason,
                "stop_reason": StopReason.name_of(h.stopreason),
            }
            for h in history
        ],
    }


def list_definitions(engine: Engine | None = None) -> list[dict[str, Any]]:
    """Harvest definitions with kind, frequency, next date, runs and why inactive."""
    engine = engine_or_default(engine)
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT h.harvest_id, h.name, h.kind, h.isactive, h.inactive_reason, h.numevents,"
                " p.frequency, p.nextdate, f.maxobjects, f.previoushd, c.name AS channel,"
                " (SELECT count(*) FROM harvest_configs hc WHERE hc.harvest_id = h.harvest_id)"
                " AS configs FROM harvestdefinitions h"
                " LEFT JOIN partialharvests p USING (harvest_id)"
                " LEFT JOIN fullharvests f USING (harvest_id)"
                " LEFT JOIN harvestchannel c ON c.id = h.channel_id ORDER BY h.harvest_id"
            )
        ).all()
    return [dict(r._mapping) for r in rows]
