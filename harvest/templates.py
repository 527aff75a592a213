"""Crawl templates (the equivalent of Heritrix order files) from reviewed files in config/ and
in the institution's own folder (``[harvest] templates_dir``).

Why files: templates are reviewed, versioned configuration (like all of config/); the DB keeps
a copy (``templates.spec``) because a job freezes the template it was generated with, and jobs
reference templates by name. Missing keys take the [crawler] defaults of the settings, so a
template only says what differs. Every file is checked before use: its keys must be the
crawler's (a misspelt key would do nothing), and the crawler must accept its values (the job
spec's own check, :class:`harvestflow.contracts.jobspec.Template`). A template that running
jobs were generated with is not changed in the DB while they run (they froze their copy; the
change waits until they end).
"""

from __future__ import annotations

import json
import logging
import tomllib
from dataclasses import fields
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from harvest.errors import HarvestError
from harvestflow.contracts.jobspec import JobSpec, JobSpecError, Template
from harvestflow.formats.job_status import RUNNING
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
KNOWN_KEYS = frozenset(f.name for f in fields(Template))


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


def institution_dir() -> Path:
    """The institution's templates folder (``[harvest] templates_dir``; relative: under the
    data directory). It may not exist yet: then it holds no template."""
    settings = get_settings()
    path = Path(str(settings["harvest"].get("templates_dir") or "templates"))
    return path if path.is_absolute() else settings.data_dir / path


def check_spec(spec: dict[str, Any], where: str) -> None:
    """Refuse a template whose keys the crawler does not know or whose values it refuses,
    naming ``where`` (the file) and the key."""
    unknown = sorted(set(spec) - KNOWN_KEYS)
    if unknown:
        raise TemplateError(
            f"{where}: unknown key(s) {', '.join(unknown)}; a template's keys are the crawler's"
            " (docs/explanation/crawler.md)"
        )
    try:
        JobSpec.from_dict({"job_id": 0, "seeds": [], "template": spec}, where)
    except JobSpecError as exc:
        raise TemplateError(str(exc)) from None


def load_template_file(path: Path) -> tuple[str, str, dict[str, Any]]:
    """(name, description, full spec) of one template file (TOML or JSON), checked."""
    try:
        if path.suffix == ".toml":
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        elif path.suffix == ".json":
            data = json.loads(path.read_text(encoding="utf-8"))
        else:
            raise TemplateError(f"{path}: templates are .toml or .json files")
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TemplateError(f"{path}: cannot parse: {exc}") from exc
    except OSError as exc:
        raise TemplateError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("spec", {}), dict):
        raise TemplateError(f"{path}: expected a table with name, description and [spec]")
    extra = sorted(set(data) - {"name", "description", "spec"})
    if extra:
        raise TemplateError(f"{path}: unknown key(s) {', '.join(extra)} (name, description, spec)")
    name = str(data.get("name") or path.stem)
    check_spec(dict(data.get("spec", {})), f"{path}: template {name}")
    spec = default_spec()
    spec.update(data.get("spec", {}))
    spec["name"] = name
    if spec["scope"] not in SCOPES:
        raise TemplateError(f"{path}: scope {spec['scope']!r} is not one of {SCOPES}")
    return name, str(data.get("description", "")), spec


def template_files(directory: Path) -> list[Path]:
    """The template files of a folder (none when it does not exist)."""
    if not directory.is_dir():
        return []
    return [
        p
        for p in sorted(directory.iterdir())
        if p.suffix in (".toml", ".json") and not p.name.startswith(".")
    ]


def load_templates(
    directory: Path | None = None,
) -> dict[str, tuple[str, dict[str, Any]]]:
    """Every template of ``directory`` (None: the shipped ones and the institution's): name ->
    (description, spec). A name found twice is refused, naming both files."""
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    where: dict[str, Path] = {}
    folders = [directory] if directory is not None else [TEMPLATES_DIR, institution_dir()]
    for folder in folders:
        for path in template_files(folder):
            name, description, spec = load_template_file(path)
            if name in found:
                raise TemplateError(f"{path}: template {name!r} is already {where[name]}")
            found[name], where[name] = (description, spec), path
    return found


def running_templates(conn: Connection) -> dict[str, list[int]]:
    """Template name -> the running jobs (submitted or started) generated with it."""
    rows = conn.execute(
        sa.text(
            "SELECT template_name, array_agg(job_id ORDER BY job_id) AS jobs FROM jobs"
            " WHERE status = ANY(:r) GROUP BY template_name"
        ),
        {"r": sorted(int(s) for s in RUNNING)},
    )
    return {str(r.template_name): [int(j) for j in r.jobs] for r in rows}


def upsert_templates(conn: Connection, directory: Path | None = None) -> dict[str, int]:
    """Load the template files into ``templates`` (UPSERT by name); name -> template_id.

    A template whose file changed while running jobs use it keeps its stored spec (logged):
    the change is loaded by a later call, once they have ended.
    """
    ids: dict[str, int] = {}
    stored = {
        r.name: dict(r.spec) for r in conn.execute(sa.text("SELECT name, spec FROM templates"))
    }
    running = running_templates(conn)
    for name, (description, spec) in load_templates(directory).items():
        if name in running and name in stored and stored[name] != spec:
            log.warning(
                "template %s changed but running job(s) %s use it: the change waits until they end",
                name,
                ", ".join(map(str, running[name])),
            )
            spec = stored[name]
        ids[name] = conn.execute(
            sa.text(
                "INSERT INTO templates (name, description, spec) VALUES (:n, :d, CAST(:s AS jsonb))"
                " ON CONFLICT (name) DO UPDATE SET description = EXCLUDED.description,"
                " spec = EXCLUDED.spec RETURNING template_id"
            ),
            {"n": name, "d": description, "s": json.dumps(spec, sort_keys=True)},
        ).scalar_one()
    log.info("templates loaded from %s: %s", directory or "both folders", ", ".join(sorted(ids)))
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
