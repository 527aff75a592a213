"""What the replay service serves: ZipNum indexes of the big merges, plus what is not merged yet.

Why two parts: the big CDXJ files (one per index root: the archive's own and one per
``[indexing.collections]`` collection) hold almost everything and are rebuilt as ZipNum indexes
after each big merge (:func:`reindex`). What came later — the per-file CDXJ files the chain
wrote since, and the continuous crawl's live files until the chain has indexed their WARCs — is
served as flat files through a folder of links per collection that pywb re-lists whenever it
changes (:func:`refresh`, cheap, run by ``access serve`` every few seconds and after each merge;
many small files are compacted into one, :mod:`access.compact`).

No capture is served twice: a per-file CDXJ file is left out of the links once the ZipNum was
built from a big file that included it (the ZipNum's state records, for each merged daily file
the big file included, the per-file files it was made of); a live file is left out as soon as
the chain has written the per-file CDXJ of its WARC. The collection ``all`` is every root; a
collection of ``[indexing.collections]`` is its own root.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from access import compact, zipnum
from access.config import ALL, AccessConfig
from harvestflow.atomic import fsync_dir
from harvestflow.settings import Settings, SettingsError, get_settings
from indexing.crashpoints import crashpoint
from indexing.files import Lock, single_instance
from indexing.layout import Layout, job_id_of

log = logging.getLogger(__name__)

ZIPNUM_LINK = ".zipnum"  # `<coll>.zipnum`: not an extension pywb's folder listing reads


@dataclass(frozen=True)
class Root:
    """One index root of the chain: ``tag`` names it in link names and ZipNum states."""

    tag: str
    collection: str  # "" = the archive's own root
    path: Path
    daily: Path  # its per-day CDX folders (indexing's Layout.cdx_daily_root)


def roots(layout: Layout) -> list[Root]:
    return [
        Root(f"c-{c}" if c else "main", c, layout.index_root(c), layout.cdx_daily_root(c))
        for c in layout.all_collections()
    ]


def access_collections(layout: Layout) -> dict[str, list[Root]]:
    """pywb collection name → the index roots it serves (``all``: every root)."""
    every = roots(layout)
    colls = {ALL: every}
    for root in every:
        if root.collection:
            if root.collection == ALL:
                raise SettingsError("[indexing.collections]: 'all' is the whole archive's name")
            colls[root.collection] = [root]
    return colls


def live_dir(settings: Settings) -> Path:
    """The continuous crawl's live collection (``<continuous base_dir>/live``)."""
    base = str(settings.get("continuous", "base_dir", "") or "")
    return (Path(base) if base else settings.path("continuous")) / "live"


def _require_cdxj(layout: Layout) -> None:
    if "cdxj" not in layout.formats:
        raise SettingsError(
            "[indexing] cdx_formats must include 'cdxj': the replay service reads CDXJ"
        )


def _signature(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns]


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _covered(layout: Layout, root: Root) -> dict[str, list[str]]:
    """Per merged daily file in the big CDXJ: the per-file CDXJ names it was made of.

    A merged file re-merged since the big merge (late files) is recorded with no names: its
    per-file files stay served as flat files until the next big merge and reindex.
    """
    big = layout.big_cdx("cdxj", root.collection)
    state = _read_json(big.with_name(big.name + ".state.json"))
    covered: dict[str, list[str]] = {}
    for name, sig in state.items():
        merged = layout.cdx_merged(root.collection) / name
        record = _read_json(merged.with_name(merged.name + ".inputs.json"))
        same = merged.exists() and _signature(merged) == sig
        covered[name] = [n for n, _size in record.get("inputs", [])] if same else []
    return covered


def _inputs(layout: Layout, colls: dict[str, list[Root]]) -> dict[str, dict[str, Any]]:
    """Per collection: each root's big CDXJ signature and what it covers."""
    out: dict[str, dict[str, Any]] = {}
    for coll, rts in colls.items():
        out[coll] = {}
        for root in rts:
            big = layout.big_cdx("cdxj", root.collection)
            if big.exists():
                out[coll][root.tag] = {
                    "big": str(big),
                    "signature": _signature(big),
                    "covered": _covered(layout, root),
                }
    return out


def reindex(settings: Settings | None = None, *, force: bool = False) -> dict[str, Any]:
    """Build the ZipNum index of every access collection whose big CDXJ files changed.

    Idempotent: a collection whose inputs (size and mtime of each big CDXJ) are those of its
    last build is left alone unless ``force``. Runs under the big merge's lock, so the big file
    and its record of included daily files are read consistently. Then :func:`refresh`.
    """
    settings = settings or get_settings()
    layout = Layout.from_settings(settings)
    _require_cdxj(layout)
    cfg = AccessConfig.from_settings(settings)
    colls = access_collections(layout)
    result: dict[str, Any] = {"built": {}, "unchanged": []}
    with single_instance(layout.lock_dir(), Lock.BIGMERGE):
        inputs = _inputs(layout, colls)
        for coll in colls:
            out_dir = cfg.zipnum_dir(coll)
            last = zipnum.read_state(out_dir, coll)
            if not force and last.get("inputs") == inputs[coll] and cfg.summary(coll).exists():
                result["unchanged"].append(coll)
                continue
            bigs = [Path(v["big"]) for v in inputs[coll].values()]
            built = zipnum.build(
                zipnum.merged_lines(bigs) if bigs else iter(()),
                out_dir,
                coll,
                block_lines=cfg.block_lines,
                shard_blocks=cfg.shard_blocks,
                state={"inputs": inputs[coll]},
            )
            result["built"][coll] = {"lines": built.lines, "blocks": built.blocks}
    result["recent"] = refresh(settings)
    return result


class Lister:
    """Listings of the per-file CDXJ folders and ZipNum states, re-read only when changed.

    Why: ``access serve`` refreshes every few seconds, and the chain keeps every day's per-file
    files; one ``stat`` per day folder (and per state file) is what a pass costs once warm. A
    folder changed in the last two seconds is listed again (coarse file-system clocks).
    """

    def __init__(self) -> None:
        self._dirs: dict[Path, tuple[int, list[str]]] = {}
        self._states: dict[Path, tuple[int, dict[str, Any]]] = {}

    def cdxj_names(self, folder: Path) -> list[str]:
        try:
            mtime = folder.stat().st_mtime_ns
        except FileNotFoundError:
            return []
        hit = self._dirs.get(folder)
        if hit and hit[0] == mtime and time.time_ns() - mtime > 2_000_000_000:
            return hit[1]
        names = sorted(p.name for p in folder.glob("*.cdxj") if not p.name.startswith("."))
        self._dirs[folder] = (mtime, names)
        return names

    def state(self, cfg: AccessConfig, coll: str) -> dict[str, Any]:
        path = cfg.zipnum_dir(coll) / f"{coll}.state.json"
        try:
            mtime = path.stat().st_mtime_ns
        except FileNotFoundError:
            return {}
        hit = self._states.get(path)
        if hit and hit[0] == mtime:
            return hit[1]
        state = zipnum.read_state(cfg.zipnum_dir(coll), coll)
        self._states[path] = (mtime, state)
        return state


def _day_dirs(root: Root) -> list[Path]:
    return sorted(root.daily.iterdir()) if root.daily.is_dir() else []


def _recent_files(
    coll_roots: list[Root], state: dict[str, Any], lister: Lister
) -> Iterator[tuple[str, Path]]:
    """(link name, target) of the per-file CDXJ files the collection's ZipNum lacks."""
    built = state.get("inputs") or {}
    for root in coll_roots:
        covered = (built.get(root.tag) or {}).get("covered") or {}
        for day_dir in _day_dirs(root):
            skip = set(covered.get(day_dir.name + ".cdxj", []))
            for name in lister.cdxj_names(day_dir):
                if name not in skip:
                    yield f"{root.tag}--{day_dir.name}--{name}", day_dir / name


_WARC_DAY = re.compile(r"-(\d{8})\d{9}-")


def day_index_files(layout: Layout, lister: Lister) -> Iterator[tuple[int, str, Path]]:
    """(job id, link name ``<root tag>--<day>--<name>``, file) of each per-file CDXJ the chain
    wrote in the day folders of every index root."""
    for root in roots(layout):
        for day_dir in _day_dirs(root):
            for name in lister.cdxj_names(day_dir):
                job = job_id_of(name.removesuffix(".cdxj"))
                if job is not None:
                    yield job, f"{root.tag}--{day_dir.name}--{name}", day_dir / name


def job_index_files(layout: Layout, live: Path, lister: Lister) -> Iterator[tuple[int, str, Path]]:
    """(job id, link name, file) of each per-file CDXJ a job's view and definition serve flat.

    The chain's per-file files of every index root (``<root tag>--<day>--<name>``) and the
    continuous crawl's live files the chain has not indexed yet (``live--<name>``, the names
    ``all`` links them under), each found by the job id that starts its WARC's name.
    """
    yield from day_index_files(layout, lister)
    for name in _live_files(layout, live, lister):
        job = job_id_of(name.removesuffix(".cdxj"))
        if job is not None:
            yield job, f"live--{name}", live.resolve() / name


def _live_files(layout: Layout, live: Path, lister: Lister) -> list[str]:
    """The live index files whose WARC the chain has not indexed yet (served until it has)."""
    return [n for n in lister.cdxj_names(live) if not _indexed_by_chain(layout, n, lister)]


def _indexed_by_chain(layout: Layout, cdxj_name: str, lister: Lister) -> bool:
    """Whether the chain wrote a per-file CDXJ for this live file's WARC.

    Only the day folders from the day before the WARC's own timestamp on are looked at (the
    chain indexes a file after it is written); a name without a timestamp is looked for in all.
    """
    match = _WARC_DAY.search(cdxj_name)
    since = f"{match.group(1)[:4]}-{match.group(1)[4:6]}-{match.group(1)[6:]}" if match else ""
    for root in roots(layout):
        for day_dir in _day_dirs(root):
            if day_dir.name >= _day_before(since) and cdxj_name in lister.cdxj_names(day_dir):
                return True
    return False


def _day_before(iso_day: str) -> str:
    try:
        return (date.fromisoformat(iso_day) - timedelta(days=1)).isoformat()
    except ValueError:
        return ""


def _gen_of(folder: Path, entry: Path) -> int | None:
    """The generation number of ``.<folder name>.<n>`` beside ``folder``, else None."""
    prefix = f".{folder.name}."
    rest = entry.name[len(prefix) :] if entry.name.startswith(prefix) else ""
    return int(rest) if rest.isdigit() else None


def sync_links(folder: Path, want: dict[str, Path]) -> tuple[int, int]:
    """Make ``folder`` hold exactly the symbolic links ``want`` (name → target), in one step.

    Why a swap: pywb lists the folder for each lookup, and a compaction replaces many links by
    one; removing then adding would hide captures for a moment, adding then removing would
    answer them twice. So ``folder`` is a symbolic link to a generation folder
    ``.<name>.<n>`` beside it: a change fills the next generation, then renames a new link
    over ``folder`` (atomic). The previous generation stays for a lookup still reading it;
    older ones (and what a killed run left) are removed. A real folder from before is moved
    aside once.
    """
    link = folder
    wanted = {name: str(target) for name, target in want.items()}
    if _current_links(link) == wanted and link.is_symlink():
        return 0, 0  # the common case of a refresh pass: no lock taken
    link.parent.mkdir(parents=True, exist_ok=True)
    with single_instance(link.parent, f"links-{link.name}"):  # serve's loop, the DAG, the CLI
        return _swap_links(link, wanted)


def _current_links(link: Path) -> dict[str, str]:
    """What the folder links now (name → target; "" for an entry that is not a link)."""
    current: dict[str, str] = {}
    if link.is_dir():
        for entry in link.iterdir():
            current[entry.name] = os.readlink(entry) if entry.is_symlink() else ""
    return current


def _swap_links(link: Path, wanted: dict[str, str]) -> tuple[int, int]:
    current = _current_links(link)  # again, under the lock: another process may have swapped
    if current == wanted and link.is_symlink():
        return 0, 0
    parent = link.parent
    gens = [g for e in parent.iterdir() if (g := _gen_of(link, e)) is not None]
    gen = max(gens, default=0) + 1
    new = parent / f".{link.name}.{gen}"
    new.mkdir()
    for name, target in wanted.items():
        (new / name).symlink_to(target)
    fsync_dir(new)
    crashpoint("access.links.built")
    previous = Path(os.readlink(link)).name if link.is_symlink() else ""
    if link.exists() and not link.is_symlink():  # a real folder of links (older versions)
        legacy = link
        previous = f".{link.name}.0"
        legacy.rename(parent / previous)
    tmp = parent / f".{link.name}.{os.getpid()}.link.tmp"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(new.name)
    os.replace(tmp, link)  # a symbolic link, not file content: no fsync to do
    fsync_dir(parent)
    for entry in parent.iterdir():
        if _gen_of(link, entry) is not None and entry.name not in (new.name, previous):
            shutil.rmtree(entry, ignore_errors=True)
        elif entry.name.startswith(f".{link.name}.") and entry.name.endswith(".link.tmp"):
            entry.unlink(missing_ok=True)
    added = sum(1 for n, t in wanted.items() if current.get(n) != t)
    removed = sum(1 for n, t in current.items() if wanted.get(n) != t)
    return added, removed


def refresh(settings: Settings | None = None, lister: Lister | None = None) -> dict[str, Any]:
    """Point each collection's folder of flat index files at what its ZipNum does not have yet.

    Cheap (directory listings and symbolic links, no index data read; with a long-lived
    ``lister``, one ``stat`` per folder once warm) and idempotent; pywb re-lists a folder whose
    mtime changed, so new captures are served without a restart.
    """
    settings = settings or get_settings()
    layout = Layout.from_settings(settings)
    cfg = AccessConfig.from_settings(settings)
    lister = lister or Lister()
    live = live_dir(settings) / "index"
    result: dict[str, Any] = {}
    for coll, rts in access_collections(layout).items():
        state = lister.state(cfg, coll)
        want = dict(_recent_files(rts, state, lister))
        if coll == ALL:
            for name in _live_files(layout, live, lister):
                want[f"live--{name}"] = live.resolve() / name
        want = compact.apply(cfg, coll, want, cfg.recent_dir(coll))
        flat = len(want)
        # the ZipNum's summary and loc too: one swap moves pywb to a new build and off the
        # flat files it took in at once (its config names `<coll>.zipnum` in this folder)
        want.update(zipnum.served_links(cfg.zipnum_dir(coll), coll, state, ZIPNUM_LINK))
        added, removed = sync_links(cfg.recent_dir(coll), want)
        result[coll] = {"files": flat, "added": added, "removed": removed}
        if added or removed:
            log.info("access %s: %d flat index file(s) (+%d -%d)", coll, len(want), added, removed)
    return result
