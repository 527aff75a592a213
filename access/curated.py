"""Curated access collections: targets with the captures chosen for them, served on their own.

Why: W3ACT's collections gather targets around a subject and reuse any crawl's captures of
them, broad crawls included; a reader browses the collection, a guided tour points into it.
A curated collection (``access_curated``, sql/062) is a name, a title, a description and its
choices: a target (a selection record) and a job whose captures of that target it shows. It is
served as a pywb collection of its own, ``<colls>/<name>/`` (as :mod:`access.definitions`'
folders: ``indexes/``, ``acl/`` linking the one ACL file, ``metadata.yaml``): its one index
file holds exactly the lines of the chosen jobs' per-file CDXJ files under each target's seed
prefix (the access rules' prefix of its seed URL: :func:`access.rules.prefix_of`). It is
rebuilt only when a choice or one of those files changed (a state file beside it), at every
publish (:mod:`access.publish`); a tour site's ``collection`` may name it.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from access import rules
from access.config import AccessConfig
from access.definitions import acl_file, collections_root
from access.errors import AccessError
from harvest.selection.record_search import seed_urls_of
from harvestflow.atomic import atomic_write_text
from harvestflow.db_reads import Bind, read

log = logging.getLogger(__name__)

NAME = re.compile(r"^[a-z][a-z0-9-]{0,62}$")
INDEX = "curated.cdxj"
STATE = ".curated-state.json"


class CuratedError(AccessError, ValueError):
    """A curated collection or choice that cannot be stored (named, with the reason)."""


@dataclass(frozen=True)
class Choice:
    record_id: int
    seed_url: str
    job_id: int


@dataclass
class Curated:
    name: str
    title: str
    description: str
    choices: list[Choice] = field(default_factory=list)


def _check_name(name: str) -> str:
    if not NAME.match(name) or name == "all" or name.startswith(("harvest-", "job-")):
        raise CuratedError(
            f"collection name {name[:70]!r}: lower-case letters, digits and '-', starting with a"
            " letter; not all, harvest-… or job-… (the archive's own collections)"
        )
    return name


def create(engine: sa.Engine, name: str, title: str, description: str, *, user: str) -> None:
    if not title.strip() or not user:
        raise CuratedError("a curated collection needs a title and the user who makes it")
    try:
        with engine.begin() as conn:
            conn.execute(
                sa.text(
                    "INSERT INTO access_curated (name, title, description, created_by)"
                    " VALUES (:n, :t, :d, :u)"
                ),
                {"n": _check_name(name), "t": title.strip(), "d": description.strip(), "u": user},
            )
    except IntegrityError:
        raise CuratedError(f"a curated collection {name!r} exists already") from None


def remove(engine: sa.Engine, name: str) -> None:
    with engine.begin() as conn:
        gone = conn.execute(sa.text("DELETE FROM access_curated WHERE name = :n"), {"n": name})
    if not gone.rowcount:
        raise CuratedError(f"no curated collection {name!r}")


def choose(engine: sa.Engine, name: str, record_id: int, job_id: int, *, user: str) -> None:
    """Show ``job_id``'s captures of the target ``record_id`` in the collection."""
    try:
        with engine.begin() as conn:
            conn.execute(
                sa.text(
                    "INSERT INTO access_curated_captures (name, record_id, job_id, added_by)"
                    " VALUES (:n, :r, :j, :u) ON CONFLICT DO NOTHING"
                ),
                {"n": name, "r": record_id, "j": job_id, "u": user},
            )
    except IntegrityError:
        raise CuratedError(
            f"no curated collection {name!r}, selection record {record_id} or job {job_id}"
        ) from None


def unchoose(engine: sa.Engine, name: str, record_id: int, job_id: int) -> None:
    with engine.begin() as conn:
        gone = conn.execute(
            sa.text(
                "DELETE FROM access_curated_captures WHERE name = :n AND record_id = :r"
                " AND job_id = :j"
            ),
            {"n": name, "r": record_id, "j": job_id},
        )
    if not gone.rowcount:
        raise CuratedError(f"{name!r} does not show job {job_id}'s captures of record {record_id}")


def all_curated(bind: Bind) -> list[Curated]:
    """Every curated collection with its chosen captures, by name (``bind``: an engine, or a
    refresh pass's reads)."""
    return read(bind, "access_curated", _all_curated)


def _all_curated(conn: sa.Connection) -> list[Curated]:
    heads = conn.execute(
        sa.text("SELECT name, title, description FROM access_curated ORDER BY name")
    ).all()
    rows = conn.execute(
        sa.text(
            "SELECT name, record_id, job_id FROM access_curated_captures"
            " ORDER BY name, record_id, job_id"
        )
    ).all()
    seeds = seed_urls_of(conn, sorted({int(r.record_id) for r in rows}))
    found = {h.name: Curated(h.name, h.title, h.description) for h in heads}
    for row in rows:
        seed = seeds[int(row.record_id)]
        found[row.name].choices.append(Choice(int(row.record_id), seed, int(row.job_id)))
    return list(found.values())


def _prefixes(coll: Curated) -> dict[int, tuple[bytes, ...]]:
    """Each chosen job's SURT prefixes (a seed that cannot be keyed is named and left out)."""
    found: dict[int, set[bytes]] = {}
    for choice in coll.choices:
        try:
            prefix = rules.prefix_of(choice.seed_url)
        except rules.RuleError as exc:
            log.warning("curated %s: record %s left out: %s", coll.name, choice.record_id, exc)
            continue
        found.setdefault(choice.job_id, set()).add(prefix.encode())
    return {job: tuple(sorted(p)) for job, p in found.items()}


def _lines(inputs: list[tuple[int, Path]], prefixes: dict[int, tuple[bytes, ...]]) -> list[bytes]:
    lines = []
    for job, path in inputs:
        with path.open("rb") as fh:
            lines += [line for line in fh if line.startswith(prefixes[job])]
    return sorted(set(lines))


def sync(cfg: AccessConfig, engine: Bind, found: list[tuple[int, str, Path]]) -> dict[str, int]:
    """Bring every curated collection's folder up to date (``found``:
    :func:`access.index.job_index_files`); remove the folders of the ones deleted. Returns the
    captures each serves."""
    base = collections_root(cfg)
    base.mkdir(parents=True, exist_ok=True)
    result: dict[str, int] = {}
    wanted = all_curated(engine)
    for coll in wanted:
        prefixes = _prefixes(coll)
        inputs = sorted((job, path) for job, _, path in found if job in prefixes)
        state = {
            "prefixes": {str(j): [p.decode() for p in ps] for j, ps in prefixes.items()},
            "inputs": [[str(p), p.stat().st_size, p.stat().st_mtime_ns] for _, p in inputs],
            "title": coll.title,
        }
        folder = base / coll.name
        state_file = folder / STATE
        try:
            old = json.loads(state_file.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            old = None
        if old is not None and {k: old.get(k) for k in state} == state:
            result[coll.name] = int(old.get("captures", 0))
            continue
        lines = _lines(inputs, prefixes)
        (folder / "indexes").mkdir(parents=True, exist_ok=True)
        atomic_write_text(folder / "indexes" / INDEX, b"".join(lines).decode("utf-8"))
        (folder / "acl").mkdir(exist_ok=True)
        link = folder / "acl" / acl_file(cfg).name
        if not link.is_symlink():
            link.symlink_to(acl_file(cfg))
        meta = {"title": coll.title, "curated": True, "description": coll.description}
        atomic_write_text(folder / "metadata.yaml", json.dumps(meta) + "\n")
        atomic_write_text(state_file, json.dumps({**state, "captures": len(lines)}) + "\n")
        result[coll.name] = len(lines)
        log.info("access %s (curated): %d capture(s)", coll.name, len(lines))
    names = {c.name for c in wanted}
    for folder in base.iterdir() if base.is_dir() else []:
        if folder.name not in names and (folder / STATE).is_file():
            shutil.rmtree(folder)
            log.info("access %s (curated): removed", folder.name)
    return result
