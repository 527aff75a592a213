"""Compaction of the flat index files served until the merges: many small files become one.

Why: until the nightly merge pywb opens every per-file CDXJ of the day for every lookup, and a
broad-crawl day is thousands of files. A group reaching ``[access] compact_min_files`` files is
merged into one sorted file, written before its record of inputs (each through a temporary
name, so a killed run leaves nothing half done), and the served folder swaps to it atomically
(:func:`access.index.sync_links`): pywb answers the same captures throughout.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from access import zipnum
from access.config import AccessConfig
from harvestflow.atomic import atomic_write_text, commit, tmp_path
from indexing.crashpoints import crashpoint

log = logging.getLogger(__name__)

SUFFIX = ".cdxj"
RECORD = ".inputs.json"
_MARK = "compact-"


@dataclass(frozen=True)
class Compacted:
    """One compacted file and the link names (→ index files) it holds."""

    path: Path
    group: str
    inputs: dict[str, str]

    @property
    def link_name(self) -> str:
        return f"{self.group}--{_MARK}{self.path.stem}{SUFFIX}"


def group_of(link_name: str) -> str | None:
    """``<root tag>--<day>`` of a day's per-file link, ``live`` of a live one; else None (the
    ZipNum's summary and loc, already compacted files)."""
    parts = link_name.split("--")
    if not link_name.endswith(SUFFIX) or _MARK in link_name:
        return None
    if parts[0] == "live" and len(parts) >= 2:
        return "live"
    return f"{parts[0]}--{parts[1]}" if len(parts) >= 3 else None


def _records(folder: Path) -> Iterator[Compacted]:
    if not folder.is_dir():
        return
    for record in sorted(folder.glob(f"*{RECORD}")):
        data = folder / (record.name.removesuffix(RECORD) + SUFFIX)
        try:
            info = json.loads(record.read_text())
        except (OSError, ValueError):
            continue
        if data.exists():
            yield Compacted(data, str(info["group"]), dict(info["inputs"]))


def _digest(inputs: dict[str, str]) -> str:
    return hashlib.sha1("\n".join(sorted(inputs)).encode()).hexdigest()[:24]


def _write(folder: Path, group: str, inputs: dict[str, str], sources: list[Path]) -> Compacted:
    """The compacted file of ``sources`` holding ``inputs`` (kept if already complete)."""
    digest = _digest(inputs)
    data = folder / f"{digest}{SUFFIX}"
    record = folder / f"{digest}{RECORD}"
    done = Compacted(data, group, inputs)
    if record.exists() and data.exists():
        return done
    folder.mkdir(parents=True, exist_ok=True)
    tmp = tmp_path(data)
    try:
        with open(tmp, "wb") as out:
            for line in zipnum.merged_lines(sources):
                out.write(line)
        commit(tmp, data)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    crashpoint("access.compact.written")
    atomic_write_text(record, json.dumps({"group": group, "inputs": inputs}, sort_keys=True))
    crashpoint("access.compact.recorded")
    log.info("access: %d index file(s) of %s compacted into %s", len(inputs), group, data)
    return done


def _choose(records: list[Compacted], want: dict[str, Path]) -> list[Compacted]:
    """Usable records (every input still wanted, same file), largest first, none overlapping."""
    chosen: list[Compacted] = []
    taken: set[str] = set()
    for rec in sorted(records, key=lambda r: (-len(r.inputs), r.path.name)):
        if any(
            name in taken or name not in want or str(want[name]) != target
            for name, target in rec.inputs.items()
        ):
            continue
        chosen.append(rec)
        taken.update(rec.inputs)
    return chosen


def _compact_group(
    folder: Path, group: str, singles: dict[str, Path], used: list[Compacted], min_files: int
) -> list[Compacted]:
    """The group's records after compacting what reached the threshold."""
    if len(singles) >= min_files:
        inputs = {name: str(path) for name, path in singles.items()}
        used = [*used, _write(folder, group, inputs, sorted(singles.values()))]
        singles = {}
    if len(used) >= min_files:
        inputs = {name: target for rec in used for name, target in rec.inputs.items()}
        used = [_write(folder, group, inputs, [rec.path for rec in used])]
    return used


def apply(
    cfg: AccessConfig, coll: str, want: dict[str, Path], served: Path, *, build: bool = True
) -> dict[str, Path]:
    """``want`` (link name → index file) with compacted files in place of their inputs.

    With ``build``, groups at the threshold are compacted first (an input that cannot be read
    or is not sorted leaves its group served file by file this time, logged). Records that no
    longer fit and that ``served`` (the folder pywb reads now) does not link are removed.
    """
    folder = cfg.compact_dir(coll)
    records = list(_records(folder))
    used = _choose(records, want)
    min_files = cfg.compact_min_files
    if build and min_files > 1:
        by_group: dict[str, list[Compacted]] = {}
        for rec in used:
            by_group.setdefault(rec.group, []).append(rec)
        covered = {name for rec in used for name in rec.inputs}
        singles: dict[str, dict[str, Path]] = {}
        for name, target in want.items():
            group = group_of(name)
            if group and name not in covered:
                singles.setdefault(group, {})[name] = target
        used = []
        for group in sorted(set(by_group) | set(singles)):
            try:
                used += _compact_group(
                    folder, group, singles.get(group, {}), by_group.get(group, []), min_files
                )
            except (OSError, zipnum.ZipNumError) as exc:
                log.error(
                    "access %s: cannot compact %s (%s); served file by file", coll, group, exc
                )
                used += by_group.get(group, [])
    out = dict(want)
    for rec in used:
        for name in rec.inputs:
            out.pop(name, None)
        out[rec.link_name] = rec.path
    _prune(folder, records, used, served)
    return out


def _prune(folder: Path, records: list[Compacted], used: list[Compacted], served: Path) -> None:
    """Remove records not used and not linked by ``served``, and what a killed run left
    (temporary files over ten minutes old)."""
    if folder.is_dir():
        for tmp in folder.glob(".*.tmp"):
            try:
                if time.time() - tmp.stat().st_mtime > 600:
                    tmp.unlink()
            except FileNotFoundError:
                pass
    keep = {rec.path for rec in used}
    try:
        linked = {p.resolve() for p in served.iterdir()} if served.is_dir() else set()
    except OSError:
        return
    for rec in records:
        if rec.path not in keep and rec.path.resolve() not in linked:
            rec.path.with_name(rec.path.stem + RECORD).unlink(missing_ok=True)
            rec.path.unlink(missing_ok=True)
