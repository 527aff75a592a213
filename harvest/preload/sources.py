"""Preload sources: read, normalise, de-duplicate, report, and cut the work into chunks.

Why this shape: curators want to know what each source *added*. Sources are read in the order
given (registry lists, CSV columns, the harvest DB, selection records, URL lists: see
:func:`collect_sources`); each line is normalised to a registrable domain, invalid lines go to
``rejects.tsv`` with the reason, and per source the new domains are counted. The unique domains
are written as chunk files that the DNS check maps over.
"""

from __future__ import annotations

import csv
import logging
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from harvest.errors import HarvestError
from harvest.preload.normalise import RejectedDomain, domain_of_url, normalise_host
from harvest.preload.store import copy_upsert, engine_for, ensure_run, preload_settings, run_dir
from harvestflow.atomic import atomic_open, atomic_write_text
from harvestflow.formats.fields import tsv_field
from harvestflow.progress import Progress
from harvestflow.settings import Settings, get_settings

log = logging.getLogger(__name__)

KINDS = ("registry", "harvest_db", "selections", "url_list")


class SourceError(HarvestError, ValueError):
    """A source spec or file that cannot be read at all (missing file, unknown column...)."""


@dataclass
class SourceStats:
    name: str
    kind: str
    lines: int = 0
    valid: int = 0
    unique: int = 0
    new: int = 0
    rejected: int = 0


def _check_spec(spec: dict[str, Any]) -> tuple[str, str]:
    name, kind = spec.get("name"), spec.get("kind")
    if not name or kind not in KINDS:
        raise SourceError(f"source {spec!r}: needs a name and a kind among {', '.join(KINDS)}")
    if kind in ("registry", "url_list"):
        path = spec.get("path")
        if not path or not Path(path).is_file():
            raise SourceError(f"source {name!r}: file not found: {path}")
    return str(name), str(kind)


def _read_lines(path: Path) -> Iterator[tuple[int, str]]:
    with path.open(encoding="utf-8", errors="replace", newline="") as handle:
        for number, line in enumerate(handle, 1):
            yield number, line.rstrip("\r\n")


def _read_csv(path: Path, column: str, delimiter: str) -> Iterator[tuple[int, str]]:
    with path.open(encoding="utf-8", errors="replace", newline="") as handle:
        reader = csv.DictReader(handle, delimiter=delimiter)
        if reader.fieldnames is None or column not in reader.fieldnames:
            raise SourceError(
                f"{path}: no column {column!r} in the header (columns: {reader.fieldnames})"
            )
        for row in reader:
            yield reader.line_num, row.get(column) or ""


def _raw_items(
    spec: dict[str, Any], kind: str, conn: Connection
) -> Iterator[tuple[int, str, bool]]:
    """(line number or row id, text, text-is-a-URL) for every item of a source."""
    if kind == "registry":
        path = Path(spec["path"])
        if spec.get("column"):
            items = _read_csv(path, spec["column"], spec.get("delimiter", ","))
        else:
            items = _read_lines(path)
        for number, text in items:
            if text.strip().startswith("#"):
                continue
            yield number, text, False
    elif kind == "url_list":
        for number, text in _read_lines(Path(spec["path"])):
            if text.strip().startswith("#"):
                continue
            yield number, text, True
    elif kind == "harvest_db":
        rows = conn.execute(sa.text("SELECT domain_id, name FROM domains ORDER BY domain_id"))
        for domain_id, name in rows:
            yield int(domain_id), name, False
    elif kind == "selections":
        rows = conn.execute(
            sa.text(
                "SELECT record_id, seed_url, supplementary_urls FROM selection_records"
                " WHERE active ORDER BY record_id"
            )
        )
        for record_id, seed_url, extra in rows:
            for url in [seed_url, *(extra or [])]:
                yield int(record_id), url, True


def _clean(text: str) -> str:
    return tsv_field(text)[:300]


def collect_sources(
    run_id: str,
    sources: list[dict[str, Any]],
    settings: Settings | None = None,
    engine: Engine | None = None,
) -> dict[str, Any]:
    """Read every source, write rejects and chunk files, record origins; a small report.

    Returns ``{"run_id", "run_dir", "sources": [...], "unique_domains", "rejected",
    "rejects_path", "chunks": [paths]}``. Re-running it gives the same files and rows.
    """
    settings = settings or get_settings()
    conf = preload_settings(settings)
    extra = frozenset(str(s).lower() for s in conf["extra_suffixes"])
    chunk_size = max(1, int(conf["chunk_size"]))
    specs = [(spec, *_check_spec(spec)) for spec in sources]
    names = [name for _, name, _ in specs]
    if len(set(names)) != len(names):
        raise SourceError(f"source names must be unique: {names}")
    directory = run_dir(run_id, settings)
    directory.mkdir(parents=True, exist_ok=True)
    engine = engine_for(engine, settings)

    with engine.connect() as conn:
        known = set(conn.execute(sa.text("SELECT name FROM domains")).scalars())
    log.info("preload %s: %d domains already in the harvest DB", run_id, len(known))

    seen: dict[str, None] = {}  # every unique domain of the run, in first-seen order
    origins: list[tuple[str, str]] = []
    seeds: list[tuple[str, str, str]] = []
    stats: list[SourceStats] = []
    rejects_path = directory / "rejects.tsv"
    with (
        atomic_open(rejects_path, "w") as rejects,
        engine.connect() as conn,
    ):
        rejects.write("source\tline\treason\tdetail\ttext\n")
        for spec, name, kind in specs:
            stat = SourceStats(name, kind)
            mine: set[str] = set()
            with Progress(f"preload source {name}", unit="lines") as progress:
                for number, text, is_url in _raw_items(spec, kind, conn):
                    stat.lines += 1
                    progress.advance()
                    if not text.strip():
                        continue  # blank lines are not data: counted, not rejected
                    try:
                        if is_url:
                            domain = domain_of_url(text, extra).domain
                        else:
                            domain = normalise_host(text, extra).domain
                    except RejectedDomain as exc:
                        stat.rejected += 1
                        rejects.write(
                            f"{name}\t{number}\t{exc.reason}\t{_clean(exc.detail)}\t"
                            f"{_clean(text)}\n"
                        )
                        continue
                    stat.valid += 1
                    if is_url:
                        seeds.append((domain, text.strip(), name))
                    if domain in mine:
                        continue
                    mine.add(domain)
                    origins.append((domain, name))
                    if domain not in seen:
                        seen[domain] = None
                        if domain not in known:
                            stat.new += 1
            stat.unique = len(mine)
            stats.append(stat)
            log.info("preload %s: source %s: %s", run_id, name, asdict(stat))

    chunks = _write_chunks(directory, list(seen), chunk_size)
    with engine.begin() as conn:
        ensure_run(conn, run_id)
        for stat in stats:
            conn.execute(
                sa.text(
                    "INSERT INTO preload_sources (run_id, source_name, kind, lines, valid,"
                    " unique_count, new_count) VALUES (:r, :n, :k, :l, :v, :u, :w)"
                    " ON CONFLICT (run_id, source_name) DO UPDATE SET kind = EXCLUDED.kind,"
                    " lines = EXCLUDED.lines, valid = EXCLUDED.valid,"
                    " unique_count = EXCLUDED.unique_count, new_count = EXCLUDED.new_count"
                ),
                {
                    "r": run_id,
                    "n": stat.name,
                    "k": stat.kind,
                    "l": stat.lines,
                    "v": stat.valid,
                    "u": stat.unique,
                    "w": stat.new,
                },
            )
        copy_upsert(
            conn,
            "domain_origins",
            ("domain", "origin", "run_id"),
            ((d, o, run_id) for d, o in origins),
        )
        copy_upsert(
            conn,
            "preload_seeds",
            ("run_id", "domain", "url", "origin"),
            ((run_id, d, u, o) for d, u, o in seeds),
            key=("run_id", "domain", "url"),
        )
    rejected = sum(s.rejected for s in stats)
    log.info(
        "preload %s: %d unique domains in %d chunks, %d lines rejected (%s)",
        run_id,
        len(seen),
        len(chunks),
        rejected,
        rejects_path,
    )
    return {
        "run_id": run_id,
        "run_dir": str(directory),
        "sources": [asdict(s) for s in stats],
        "unique_domains": len(seen),
        "rejected": rejected,
        "rejects_path": str(rejects_path),
        "chunks": [str(p) for p in chunks],
    }


def _write_chunks(directory: Path, domains: list[str], size: int) -> list[Path]:
    chunk_dir = directory / "chunks"
    chunk_dir.mkdir(exist_ok=True)
    paths = []
    for index, start in enumerate(range(0, len(domains), size)):
        path = chunk_dir / f"chunk-{index:05d}.txt"
        atomic_write_text(path, "".join(d + "\n" for d in domains[start : start + size]))
        paths.append(path)
    for stale in chunk_dir.glob("chunk-*.txt"):
        if stale not in paths:
            stale.unlink()  # from an earlier collection of the same run with more domains
    return paths
