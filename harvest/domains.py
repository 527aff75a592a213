"""Domains, seed lists and domain configurations (NetarchiveSuite's model).

Why these defaults: a new domain gets NetarchiveSuite's default configuration (1,000,000,000
bytes, unlimited objects, max rate 100) and its four seeds ``http://www.D``, ``https://www.D``,
``http://D``, ``https://D``, so that people who know NetarchiveSuite find what they expect.
Every write is an UPSERT keyed by names, so a retried task or a re-import repeats nothing.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from harvest.templates import template_id

log = logging.getLogger(__name__)

DEFAULT_CONFIG_NAME = "defaultconfig"
DEFAULT_SEEDLIST_NAME = "defaultseeds"
DEFAULT_MAX_BYTES = 1_000_000_000
DEFAULT_MAX_OBJECTS = -1
DEFAULT_MAX_RATE = 100


def default_seeds(domain: str) -> list[str]:
    return [
        f"http://www.{domain}",
        f"https://www.{domain}",
        f"http://{domain}",
        f"https://{domain}",
    ]


@dataclass(frozen=True)
class ConfigRef:
    domain_id: int
    config_id: int
    seedlist_id: int


def ensure_domain(conn: Connection, name: str, *, crawlertraps: Iterable[str] = ()) -> int:
    """The id of domain ``name``, creating it (without configuration) when missing."""
    traps = sorted(set(crawlertraps))
    row = conn.execute(
        sa.text(
            "INSERT INTO domains (name, crawlertraps) VALUES (:n, CAST(:t AS text[]))"
            " ON CONFLICT (name) DO UPDATE SET crawlertraps = CASE WHEN"
            " cardinality(CAST(:t AS text[])) > 0 THEN CAST(:t AS text[])"
            " ELSE domains.crawlertraps END RETURNING domain_id"
        ),
        {"n": name, "t": traps},
    ).scalar_one()
    return int(row)


def ensure_config(
    conn: Connection,
    domain: str,
    *,
    config_name: str = DEFAULT_CONFIG_NAME,
    template: str = "default_selective",
    seeds: Iterable[str] | None = None,
    seedlist_name: str | None = None,
    max_objects: int = DEFAULT_MAX_OBJECTS,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_rate: int = DEFAULT_MAX_RATE,
    attributes: dict[str, Any] | None = None,
    make_default: bool | None = None,
    comments: str | None = None,
) -> ConfigRef:
    """Create or update a configuration of ``domain`` with its seed list (UPSERTs).

    ``seeds`` None means the four NetarchiveSuite default seeds. The domain's default
    configuration is set when it has none yet (``make_default`` None), always (True) or never
    (False: selection configurations must not become what a snapshot harvests).
    """
    domain_id = ensure_domain(conn, domain)
    seed_list = list(dict.fromkeys(seeds)) if seeds is not None else default_seeds(domain)
    tid = template_id(conn, template)
    seedlist_id = conn.execute(
        sa.text(
            "INSERT INTO seedlists (name, domain_id, seeds) VALUES (:n, :d, :s)"
            " ON CONFLICT (domain_id, name) DO UPDATE SET seeds = EXCLUDED.seeds"
            " RETURNING seedlist_id"
        ),
        {"n": seedlist_name or f"{config_name}-seeds", "d": domain_id, "s": "\n".join(seed_list)},
    ).scalar_one()
    config_id = conn.execute(
        sa.text(
            "INSERT INTO configurations (name, comments, domain_id, template_id, maxobjects,"
            " maxrate, maxbytes, attributes) VALUES (:n, :c, :d, :t, :mo, :mr, :mb,"
            " CAST(:a AS jsonb)) ON CONFLICT (domain_id, name) DO UPDATE SET"
            " template_id = EXCLUDED.template_id, maxobjects = EXCLUDED.maxobjects,"
            " maxrate = EXCLUDED.maxrate, maxbytes = EXCLUDED.maxbytes,"
            " attributes = EXCLUDED.attributes,"
            " comments = COALESCE(EXCLUDED.comments, configurations.comments),"
            " edition = configurations.edition + CASE WHEN"
            " (configurations.template_id, configurations.maxobjects, configurations.maxbytes,"
            " configurations.attributes) IS DISTINCT FROM (EXCLUDED.template_id,"
            " EXCLUDED.maxobjects, EXCLUDED.maxbytes, EXCLUDED.attributes) THEN 1 ELSE 0 END"
            " RETURNING config_id"
        ),
        {
            "n": config_name,
            "c": comments,
            "d": domain_id,
            "t": tid,
            "mo": max_objects,
            "mr": max_rate,
            "mb": max_bytes,
            "a": json.dumps(attributes or {}, sort_keys=True),
        },
    ).scalar_one()
    conn.execute(
        sa.text(
            "INSERT INTO config_seedlists (config_id, seedlist_id) VALUES (:c, :s)"
            " ON CONFLICT DO NOTHING"
        ),
        {"c": config_id, "s": seedlist_id},
    )
    conn.execute(
        sa.text(
            "UPDATE domains SET defaultconfig = :c WHERE domain_id = :d"
            " AND (defaultconfig IS NULL OR :force) AND :allowed"
        ),
        {
            "c": config_id,
            "d": domain_id,
            "force": bool(make_default),
            "allowed": make_default is not False,
        },
    )
    return ConfigRef(domain_id=domain_id, config_id=int(config_id), seedlist_id=int(seedlist_id))
