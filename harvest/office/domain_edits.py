"""Domain configurations and aliases changed by people (the domain page, ``harvestflow
domain``), checked and audited.

Why aliases work this way (NetarchiveSuite): a domain that mirrors another (``example.com`` for
``example.fr``) is made its alias, and a snapshot leaves the alias out while the alias is live:
one year after it was set or last renewed (:data:`harvest.jobgen.source.ALIAS_TIMEOUT`), then it
expires and the domain is harvested again until someone renews it. The alias records who set it
and when. An alias cannot point at itself nor at another alias, and a domain that has aliases
cannot become one (the chains NetarchiveSuite refuses too). A configuration's seeds must be in
its domain; its template must exist; its budgets are -1 (unlimited) or positive. Every change
is one transaction with an audit row (``domain <name>``) holding the values before and after.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from harvest.common import as_utc, engine_or_default, utcnow
from harvest.domains import DEFAULT_CONFIG_NAME, ensure_config
from harvest.jobgen.source import ALIAS_TIMEOUT
from harvest.office.definition_form import OfficeError, checked_text, parse_seeds
from harvest.templates import TemplateError, template_id
from harvestflow.audit import record_audit
from harvestflow.formats.domains import registrable_domain
from harvestflow.formats.integers import NumberError, parse_int

log = logging.getLogger(__name__)

CONFIG_FIELDS = ("config", "template", "max_objects", "max_bytes", "seeds", "default")


def alias_expiry(last_update: datetime | None) -> datetime | None:
    """When an alias set or renewed at ``last_update`` expires (a snapshot harvests it again)."""
    return None if last_update is None else as_utc(last_update) + ALIAS_TIMEOUT


def _domain(conn: Connection, name: str, *, lock: bool = False) -> Any:
    name = checked_text(name, "domain", 253)
    row = conn.execute(
        sa.text(
            "SELECT d.domain_id, d.name, d.alias, d.lastaliasupdate, d.alias_set_by,"
            " a.name AS alias_of FROM domains d LEFT JOIN domains a ON a.domain_id = d.alias"
            " WHERE d.name = :n" + (" FOR UPDATE OF d" if lock else "")
        ),
        {"n": name.strip().lower()},
    ).first()
    if row is None:
        raise OfficeError(f"no domain {name!r} in the harvest database")
    return row


def _config(conn: Connection, domain_id: int, name: str) -> dict[str, Any] | None:
    row = conn.execute(
        sa.text(
            "SELECT c.config_id, c.name, t.name AS template, c.maxobjects, c.maxbytes,"
            " d.defaultconfig = c.config_id AS is_default,"
            " (SELECT min(s.name) FROM config_seedlists cs JOIN seedlists s USING (seedlist_id)"
            "  WHERE cs.config_id = c.config_id) AS seedlist,"
            " (SELECT string_agg(s.seeds, E'\\n' ORDER BY s.seedlist_id) FROM config_seedlists cs"
            "  JOIN seedlists s USING (seedlist_id) WHERE cs.config_id = c.config_id) AS seeds"
            " FROM configurations c JOIN templates t ON t.template_id = c.template_id"
            " JOIN domains d ON d.domain_id = c.domain_id"
            " WHERE c.domain_id = :d AND c.name = :n"
        ),
        {"d": domain_id, "n": name},
    ).first()
    return None if row is None else dict(row._mapping)


def _budget(values: Mapping[str, str], name: str, current: int) -> int:
    raw = str(values.get(name) or "").strip().replace(",", "").replace("_", "")
    if not raw:
        return current
    try:
        value = parse_int(raw, name, minimum=-1, maximum=2**63 - 1)
    except NumberError as exc:
        raise OfficeError(str(exc)) from None
    if value == 0:
        raise OfficeError(f"{name}: -1 (unlimited) or a positive number, not 0")
    return value


def save_configuration(
    domain: str, values: Mapping[str, str], user: str, *, engine: Engine | None = None
) -> int:
    """Create or change a configuration of ``domain`` (``config``: its name, default
    ``defaultconfig``): template, budgets, seed list, whether it is the domain's default (what a
    snapshot harvests). Fields left empty keep their value. Returns the configuration's id."""
    unknown = sorted(set(values) - set(CONFIG_FIELDS) - {"csrf_token"})
    if unknown:
        raise OfficeError(f"unknown field(s): {', '.join(unknown)}")
    name = checked_text(values.get("config"), "config", 200) or DEFAULT_CONFIG_NAME
    engine = engine_or_default(engine)
    with engine.begin() as conn:
        dom = _domain(conn, domain, lock=True)
        before = _config(conn, dom.domain_id, name)
        template = checked_text(values.get("template"), "template", 200) or (
            before["template"] if before else "default_selective"
        )
        try:
            template_id(conn, template)
        except TemplateError as exc:
            raise OfficeError(f"template: {exc}") from None
        raw_seeds = checked_text(values.get("seeds"), "seeds", 1_000_000)
        seeds = list(parse_seeds(raw_seeds)) if raw_seeds.strip() else None
        for number, seed in enumerate(seeds or (), 1):
            if registrable_domain(seed) != dom.name:
                raise OfficeError(f"seeds line {number}: {seed} is not in domain {dom.name}")
        if seeds is None and before is not None:
            seeds = [s for s in (before["seeds"] or "").splitlines() if s.strip()]
        default = str(values.get("default") or "").strip().lower() in ("yes", "on", "true", "1")
        ref = ensure_config(
            conn, dom.name, config_name=name, template=template, seeds=seeds,
            seedlist_name=(before or {}).get("seedlist"),
            max_objects=_budget(values, "max_objects", before["maxobjects"] if before else -1),
            max_bytes=_budget(values, "max_bytes", before["maxbytes"] if before else 1_000_000_000),
            make_default=True if default else None,
        )  # fmt: skip
        after = _config(conn, dom.domain_id, name)
        action = "domain.configure" if before else "domain.add_configuration"
        record_audit(conn, user, action, f"domain {dom.name}", {"before": before, "after": after})
    return ref.config_id


def set_alias(
    domain: str,
    alias_of: str,
    user: str,
    *,
    engine: Engine | None = None,
    now: datetime | None = None,
) -> datetime:
    """Make ``domain`` an alias of ``alias_of`` (or renew it, when it already is); the alias's
    expiry. Left out of snapshots until then."""
    now = as_utc(now or utcnow())
    engine = engine_or_default(engine)
    with engine.begin() as conn:
        dom = _domain(conn, domain, lock=True)
        alias_of = checked_text(alias_of, "alias_of", 253)
        if not alias_of:
            raise OfficeError("alias_of: the domain it mirrors is needed")
        target = _domain(conn, alias_of)
        if target.domain_id == dom.domain_id:
            raise OfficeError(f"alias_of: {dom.name} cannot be an alias of itself")
        if target.alias is not None:
            raise OfficeError(
                f"alias_of: {target.name} is itself an alias of {target.alias_of}:"
                f" make {dom.name} an alias of {target.alias_of}"
            )
        aliases = conn.execute(
            sa.text("SELECT string_agg(name, ', ' ORDER BY name) FROM domains WHERE alias = :d"),
            {"d": dom.domain_id},
        ).scalar()
        if aliases:
            raise OfficeError(f"{dom.name} has aliases ({aliases}): it cannot become an alias")
        conn.execute(
            sa.text(
                "UPDATE domains SET alias = :a, lastaliasupdate = :t, alias_set_by = :u,"
                " edition = edition + 1 WHERE domain_id = :d"
            ),
            {"a": target.domain_id, "t": now, "u": user, "d": dom.domain_id},
        )
        action = "domain.renew_alias" if dom.alias == target.domain_id else "domain.set_alias"
        record_audit(conn, user, action, f"domain {dom.name}", {
            "before": {"alias_of": dom.alias_of, "set": dom.lastaliasupdate, "by": dom.alias_set_by},
            "after": {"alias_of": target.name, "set": now, "by": user},
        })  # fmt: skip
    expiry = alias_expiry(now)
    assert expiry is not None
    return expiry


def remove_alias(domain: str, user: str, *, engine: Engine | None = None) -> None:
    """``domain`` is no alias any more: the next snapshot harvests it."""
    engine = engine_or_default(engine)
    with engine.begin() as conn:
        dom = _domain(conn, domain, lock=True)
        if dom.alias is None:
            raise OfficeError(f"{dom.name} is not an alias")
        conn.execute(
            sa.text(
                "UPDATE domains SET alias = NULL, lastaliasupdate = now(), alias_set_by = :u,"
                " edition = edition + 1 WHERE domain_id = :d"
            ),
            {"u": user, "d": dom.domain_id},
        )
        record_audit(conn, user, "domain.remove_alias", f"domain {dom.name}",
                     {"before": {"alias_of": dom.alias_of, "set": dom.lastaliasupdate,
                                 "by": dom.alias_set_by}})  # fmt: skip
