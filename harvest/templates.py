"""Crawl templates (the equivalent of Heritrix order files) from reviewed files in config/.

Why files: templates are reviewed, versioned configuration (like all of config/); the DB keeps
a copy (``templates.spec``) because a job freezes the template it was generated with, and jobs
reference templates by name. Missing keys take the [crawler] defaults of the settings, so a
template only says what differs.
"""

from __future__ import annotations

import json
import logging
import tomllib
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from harvest.errors import HarvestError
from harvestflow.package_data import data_path
from harvestflow.settings import get_settings

log = logging.getLogger(__name__)

TEMPLATES_DIR = data_path("config", "templates")

# Keys of a template spec and where their defaults come from ([crawler] settings or here).
_CRAWLER_KEYS = (
    "max_hops",
    "max_transclusion_hops",
    "delay_factor",
    "min_delay_ms",
    "max_delay_ms",
    "max_crawl_delay_s",
    "connections_per_host",
)
_STATIC_DEFAULTS: dict[str, Any] = {
    "scope": "domain",
    "obey_robots": True,
    "allow_private_addresses": False,
    "dedup_mime_exclude": "^text/",
    "extract_sitemaps": False,
    "extract_js": True,
    "max_path_depth": 20,
    "max_repeated_path_segments": 2,
}
SCOPES = ("host", "domain", "path")


class TemplateError(HarvestError, ValueError):
    """A template file that cannot be used, naming the file and the reason."""


def default_spec() -> dict[str, Any]:
    """A template spec made only of defaults."""
    crawler = get_settings()["crawler"]
    spec = dict(_STATIC_DEFAULTS)
    for key in _CRAWLER_KEYS:
        if key in crawler:
            spec[key] = crawler[key]
    return spec


def load_template_file(path: Path) -> tuple[str, str, dict[str, Any]]:
    """(name, description, full spec) of one template file (TOML or JSON)."""
    try:
        if path.suffix == ".toml":
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        elif path.suffix == ".json":
            data = json.loads(path.read_text(encoding="utf-8"))
        else:
            raise TemplateError(f"{path}: templates are .toml or .json files")
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise TemplateError(f"{path}: cannot parse: {exc}") from exc
    name = data.get("name") or path.stem
    spec = default_spec()
    spec.update(data.get("spec", {}))
    spec["name"] = name
    if spec["scope"] not in SCOPES:
        raise TemplateError(f"{path}: scope {spec['scope']!r} is not one of {SCOPES}")
    return name, str(data.get("description", "")), spec


def load_templates(directory: Path = TEMPLATES_DIR) -> dict[str, tuple[str, dict[str, Any]]]:
    """Every template of ``directory``: name -> (description, spec)."""
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    for path in sorted(directory.iterdir()):
        if path.suffix not in (".toml", ".json") or path.name.startswith("."):
            continue
        name, description, spec = load_template_file(path)
        if name in found:
            raise TemplateError(f"{path}: template {name!r} defined twice in {directory}")
        found[name] = (description, spec)
    return found


def upsert_templates(conn: Connection, directory: Path = TEMPLATES_DIR) -> dict[str, int]:
    """Load the template files into ``templates`` (UPSERT by name); name -> template_id."""
    ids: dict[str, int] = {}
    for name, (description, spec) in load_templates(directory).items():
        ids[name] = conn.execute(
            sa.text(
                "INSERT INTO templates (name, description, spec) VALUES (:n, :d, CAST(:s AS jsonb))"
                " ON CONFLICT (name) DO UPDATE SET description = EXCLUDED.description,"
                " spec = EXCLUDED.spec RETURNING template_id"
            ),
            {"n": name, "d": description, "s": json.dumps(spec, sort_keys=True)},
        ).scalar_one()
    log.info("templates loaded from %s: %s", directory, ", ".join(sorted(ids)))
    return ids


def template_id(conn: Connection, name: str) -> int:
    """The id of template ``name``; a clear error when it is unknown."""
    tid = conn.execute(
        sa.text("SELECT template_id FROM templates WHERE name = :n"), {"n": name}
    ).scalar()
    if tid is None:
        known = conn.execute(sa.text("SELECT name FROM templates ORDER BY name")).scalars().all()
        raise TemplateError(f"unknown template {name!r}; known: {', '.join(known) or 'none'}")
    return int(tid)


def template_names(conn: Connection) -> list[str]:
    """The names of the templates the harvest database holds (for forms' choices)."""
    return list(conn.execute(sa.text("SELECT name FROM templates ORDER BY name")).scalars())
