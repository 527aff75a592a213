"""Where the indexing chain keeps its files, from the settings.

Why one place: every module, the merges, the cleanup and the tests must agree on the directory
of each step (a file's location is part of the chain's state) and on where each index lives;
the folders are listed in docs/architecture.md ("The index folders") and named here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from harvestflow.settings import Settings, get_settings

MODULES = ("index", "transfer", "backup", "delete", "quarantine")
_DATA_WARC = re.compile(r"^(\d+)-(\d+)-\d{17}-\d{5}-.+\.warc(\.gz)?$")
_META_WARC = re.compile(r"^(\d+)-metadata-\d+\.warc(\.gz)?$")
_COLLECTION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


ARCHIVE_SUFFIXES = (".warc.gz", ".warc", ".arc.gz", ".arc")


def is_warc_name(name: str) -> bool:
    """A finished WARC or ARC file name (never the ``.open`` files a crawler is still writing).

    ARC files (legacy collections, retrospective deliveries) go through the chain like WARCs.
    """
    return name.endswith(ARCHIVE_SUFFIXES) and not name.startswith(".")


def harvest_id_of(name: str) -> int | None:
    """The harvest definition id in a data WARC name ``<job>-<harvest>-<ts17>-<serial>-<host>``."""
    match = _DATA_WARC.match(name)
    return int(match.group(2)) if match else None


def job_id_of(name: str) -> int | None:
    match = _DATA_WARC.match(name) or _META_WARC.match(name)
    return int(match.group(1)) if match else None


@dataclass(frozen=True)
class Layout:
    """Paths of the chain for one settings object."""

    data_dir: Path
    workers: int
    formats: tuple[str, ...]
    collections: dict[int, str]

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> Layout:
        settings = settings or get_settings()
        section = settings["indexing"]
        collections = {}
        for key, name in (section.get("collections") or {}).items():
            if not _COLLECTION_NAME.match(str(name)):
                raise ValueError(f"[indexing.collections] {key}: bad collection name {name!r}")
            collections[int(key)] = str(name)
        formats = tuple(section.get("cdx_formats") or ("cdx11",))
        for fmt in formats:
            if fmt not in ("cdx11", "cdxj"):
                raise ValueError(f"[indexing] cdx_formats: unknown format {fmt!r}")
        return cls(
            settings.data_dir, max(1, int(section.get("index_workers", 1))), formats, collections
        )

    # --- working directories ------------------------------------------------------------------
    def module_dir(self, module: str) -> Path:
        return self.data_dir / "indexing" / module

    def worker_dirs(self) -> list[Path]:
        return [self.module_dir("index") / f"w{i}" for i in range(1, self.workers + 1)]

    def lock_dir(self) -> Path:
        """Where the single modules (ingest, bigmerge, cleanarcrepository) keep their locks."""
        return self.data_dir / "locks"

    def quarantine_dir(self) -> Path:
        return self.module_dir("quarantine")

    # --- indexes --------------------------------------------------------------------------------
    def collection_of(self, harvest_id: int | None) -> str:
        return self.collections.get(harvest_id, "") if harvest_id is not None else ""

    def all_collections(self) -> list[str]:
        return ["", *sorted(set(self.collections.values()))]

    def index_root(self, collection: str = "") -> Path:
        root = self.data_dir / "index"
        return root / "collections" / collection if collection else root

    def cdx_daily_root(self, collection: str = "") -> Path:
        return self.index_root(collection) / "cdx" / "daily"

    def cdx_daily(self, day: date, collection: str = "") -> Path:
        return self.cdx_daily_root(collection) / day.isoformat()

    def path_daily(self, day: date, collection: str = "") -> Path:
        return self.index_root(collection) / "path" / "daily" / day.isoformat()

    def cdx_merged(self, collection: str = "") -> Path:
        return self.index_root(collection) / "cdx" / "merged"

    def path_merged(self, collection: str = "") -> Path:
        return self.index_root(collection) / "path" / "merged"

    def big_cdx(self, fmt: str, collection: str = "") -> Path:
        return self.index_root(collection) / "cdx" / ("big.cdxj" if fmt == "cdxj" else "big.cdx")

    def big_path(self, collection: str = "") -> Path:
        return self.index_root(collection) / "path" / "big.path"

    def dedup_dir(self, harvest_id: int, collection: str = "") -> Path:
        return self.index_root(collection) / "dedup" / str(harvest_id)
