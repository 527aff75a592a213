"""``harvestflow templates list|show|check|add``: the crawl templates an institution keeps in its
own folder (``[harvest] templates_dir``) beside the shipped ones.

Why ``add`` and not a copy by hand: a file is checked (its keys are the crawler's, the crawler
accepts its values) before it is put in the folder and loaded into the harvest database, so a
bad template is refused with its name and the key at fault, never found out by a failed crawl.
A shipped template's name is refused (the institution's would hide it). A template that running
jobs were generated with cannot be changed under them: ``add`` over it is refused until they end.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from harvest.common import engine_or_default
from harvest.office.definition_form import OfficeError
from harvest.templates import (
    TEMPLATES_DIR,
    TemplateError,
    institution_dir,
    load_template_file,
    running_templates,
    template_files,
    upsert_templates,
)
from harvestflow.atomic import atomic_write_text
from harvestflow.audit import record_audit

log = logging.getLogger(__name__)


def template_sources() -> dict[str, tuple[str, Path]]:
    """Name -> (``shipped`` or ``institution``, file) of every template file (unchecked: a
    broken one is still listed, ``check`` says what is wrong with it)."""
    found: dict[str, tuple[str, Path]] = {}
    for source, folder in (("shipped", TEMPLATES_DIR), ("institution", institution_dir())):
        for path in template_files(folder):
            try:
                name = load_template_file(path)[0]
            except TemplateError:
                name = path.stem
            found.setdefault(name, (source, path))
    return found


def list_templates(engine: Engine | None = None) -> list[dict[str, Any]]:
    """Every template of the folders and the database: name, source, file, description, the
    running jobs using it."""
    engine = engine_or_default(engine)
    with engine.connect() as conn:
        stored = {
            r.name: str(r.description or "")
            for r in conn.execute(sa.text("SELECT name, description FROM templates"))
        }
        running = running_templates(conn)
    files = template_sources()
    return [
        {
            "name": name,
            "source": files[name][0] if name in files else "database only",
            "file": str(files[name][1]) if name in files else "",
            "description": stored.get(name, ""),
            "loaded": name in stored,
            "running_jobs": running.get(name, []),
        }
        for name in sorted(set(files) | set(stored))
    ]


def show_template(name: str, engine: Engine | None = None) -> dict[str, Any]:
    """A template's full spec (defaults filled in) as its file gives it, else as stored."""
    files = template_sources()
    if name in files:
        _, description, spec = load_template_file(files[name][1])
        return {"name": name, "source": files[name][0], "file": str(files[name][1]),
                "description": description, "spec": spec}  # fmt: skip
    engine = engine_or_default(engine)
    with engine.connect() as conn:
        row = conn.execute(
            sa.text("SELECT description, spec FROM templates WHERE name = :n"), {"n": name}
        ).first()
    if row is None:
        raise OfficeError(f"no template {name!r} (harvestflow templates list)")
    return {"name": name, "source": "database only", "file": "",
            "description": str(row.description or ""), "spec": dict(row.spec)}  # fmt: skip


def add_template(path: Path, user: str, engine: Engine | None = None) -> str:
    """Check ``path`` and put it in the institution's folder, loaded into the database; its
    name. Refused (:class:`OfficeError`, nothing changed) when the file is bad, its name is a
    shipped template's, or running jobs use a template of that name and it would change."""
    try:
        name, _, spec = load_template_file(path)
    except TemplateError as exc:
        raise OfficeError(str(exc)) from None
    files = template_sources()
    if name in files and files[name][0] == "shipped":
        raise OfficeError(
            f"template {name!r} is a shipped template ({files[name][1]}): use another name"
        )
    text = path.read_text(encoding="utf-8")  # read before the folder's copy is replaced
    folder = institution_dir()
    target = folder / f"{name}{path.suffix}"
    engine = engine_or_default(engine)
    with engine.begin() as conn:
        conn.execute(sa.text("SELECT pg_advisory_xact_lock(4244, 0)"))  # one add at a time
        stored = conn.execute(
            sa.text("SELECT spec FROM templates WHERE name = :n"), {"n": name}
        ).scalar()
        running = running_templates(conn).get(name, [])
        if running and stored is not None and dict(stored) != spec:
            raise OfficeError(
                f"template {name!r} is used by running job(s) {', '.join(map(str, running))}:"
                " it cannot be changed under them; add it under another name, or when they end"
            )
        folder.mkdir(parents=True, exist_ok=True)
        before = {p: p.read_bytes() for p in (folder / f"{name}.toml", folder / f"{name}.json")
                  if p.exists()}  # fmt: skip
        try:
            for old in before:
                old.unlink()  # one file per name
            atomic_write_text(target, text)
            upsert_templates(conn, folder)
            record_audit(conn, user, "template.add", f"template {name}",
                         {"file": str(target), "changed": stored is not None})  # fmt: skip
        except BaseException:
            target.unlink(missing_ok=True)  # the folder as it was: nothing was added
            for old, data in before.items():
                old.write_bytes(data)
            raise
    log.info("template %s added from %s as %s by %s", name, path, target, user)
    return name
