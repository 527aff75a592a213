"""Near-real-time index: each closed WARC of a continuous run, replayable minutes after the fetch.

Why a small live collection: the nightly merge makes captures findable the next day; a news
archive wants them at once. Right after each bounded run, every closed data WARC is linked into
``<live>/warcs/`` and indexed with the chain's own CDX code into ``<live>/index/<file>.cdxj``
(sorted in byte order, written through a temporary name). pywb reads a directory of CDXJ files
as one index, so a capture is replayable as soon as its file's CDXJ lands. The WARCs still go
through the regular indexing chain later; the live index is a cache that can be rebuilt.
"""

from __future__ import annotations

import logging
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from indexing.cdx import index_warc, sorted_lines, write_lines_atomic

log = logging.getLogger(__name__)


@dataclass
class LiveIndexResult:
    files: list[str] = field(default_factory=list)
    lines: int = 0
    damaged: list[str] = field(default_factory=list)


def _place(src: Path, dest: Path) -> None:
    """Hard link (same file system) or copy through a temporary name."""
    if dest.exists():
        return
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    try:
        os.link(src, tmp)
    except OSError:
        shutil.copyfile(src, tmp)
    os.replace(tmp, dest)


def index_closed_warcs(warcs: list[Path], live_dir: Path) -> LiveIndexResult:
    """Link each WARC into the live collection and write its CDXJ (already indexed: skipped)."""
    live_dir = Path(live_dir)
    (live_dir / "warcs").mkdir(parents=True, exist_ok=True)
    (live_dir / "index").mkdir(parents=True, exist_ok=True)
    result = LiveIndexResult()
    for path in warcs:
        cdxj = live_dir / "index" / (path.name + ".cdxj")
        if cdxj.exists():
            continue
        _place(path, live_dir / "warcs" / path.name)
        indexed = index_warc(path)
        if indexed.damage is not None:
            log.error("%s: damaged at %s; indexed up to there", path, indexed.damage)
            result.damaged.append(path.name)
        lines = sorted_lines(indexed.lines("cdxj"))
        write_lines_atomic(lines, cdxj)
        result.files.append(path.name)
        result.lines += len(lines)
    log.info("live index: %d file(s), %d line(s)", len(result.files), result.lines)
    return result


def pywb_config(live_dir: Path, collection: str = "live") -> Path:
    """A pywb ``config.yaml`` serving the live collection (for a replay node or a test)."""
    live_dir = Path(live_dir)
    (live_dir / "index").mkdir(parents=True, exist_ok=True)
    (live_dir / "warcs").mkdir(parents=True, exist_ok=True)
    config = live_dir / "config.yaml"
    text = (
        "collections:\n"
        f"  {collection}:\n"
        f"    index_paths: {live_dir / 'index'}/\n"
        f"    archive_paths: {live_dir / 'warcs'}/\n"
    )
    tmp = config.with_name(".config.yaml.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, config)
    return config
