"""ZipNum sharded index: the layout pywb and the Internet Archive read for large collections.

Why: a national archive's flat CDXJ is tens of gigabytes. ZipNum cuts the sorted lines into
gzip blocks of ``block_lines`` lines in shard files, with a small summary (``<name>.idx``, one
line a block) and a loc file (part → shard path); a lookup searches the summary and inflates a
block or two. Each build writes new part names, then the loc, then the summary (temporary name,
rename), so pywb keeps serving while a build swaps in; the previous generation stays one build.
"""

from __future__ import annotations

import heapq
import json
import logging
import os
import zlib
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from access.errors import AccessError
from harvestflow.atomic import atomic_write_text, commit, tmp_path
from harvestflow.formats.cdx import line_key

log = logging.getLogger(__name__)

SHARD_SUFFIX = ".cdxj.gz"
EMPTY_KEY = b"! 00000000000000"
# An empty gzip member (header, empty deflate block, CRC and size: inflates to nothing) after
# each block, so that no two blocks are contiguous. Why: pywb's zipnum reader merges contiguous
# blocks of a shard into one read of up to ``max_blocks`` blocks and parses every summary line
# of that run before it inflates the first block: a prefix lookup of a large site with
# ``limit=100`` parsed ~80 summary lines for the 2 blocks it needed (~0.9 ms of pywb's CPU,
# 2026-11-30, in-process over bench/run access-lookups's data). Apart, each block is read as
# soon as its summary line is, and a limit stops the reads; the cost is an open and a read per
# block instead of per run (a calendar of 30,000 captures: 300 reads). Any gzip reader reads
# a shard the same; 20 bytes a block.
BLOCK_GAP = zlib.compressobj(6, zlib.DEFLATED, 31).flush()


class ZipNumError(AccessError, ValueError):
    """Input that cannot become a ZipNum index (unsorted lines, not CDXJ), with where."""


@dataclass
class BuildResult:
    summary: Path
    lines: int
    blocks: int
    shards: list[Path]
    generation: int


def block_key(line: bytes) -> bytes:
    """``<urlkey> <timestamp>`` of a CDXJ (or CDX) line: the summary's key for its block."""
    key = line_key(line)
    if key is None:
        raise ZipNumError(f"not a CDXJ line: {line[:120]!r}")
    return key


def merged_lines(inputs: list[Path]) -> Iterator[bytes]:
    """The lines of byte-sorted ``inputs`` in byte order, each line once, order checked."""
    with ExitStack() as stack:
        files = [stack.enter_context(open(p, "rb", buffering=1 << 20)) for p in inputs]
        source: Iterable[bytes] = files[0] if len(files) == 1 else heapq.merge(*files)
        prev = b""
        for n, raw in enumerate(source, 1):
            line = raw if raw.endswith(b"\n") else raw + b"\n"
            if line <= prev:
                if line == prev:
                    continue
                raise ZipNumError(
                    f"input line {n} {line[:120]!r} sorts before the line above it:"
                    f" {', '.join(map(str, inputs))} must be byte-order sorted (LC_ALL=C)"
                )
            prev = line
            yield line


class _ShardWriter:
    """Appends gzip blocks to shard files; returns one summary line per block.

    Each block is appended with its own open/close, so that many builders at once (one per
    harvest definition, :mod:`access.definition_index`) hold no file open between blocks.
    """

    def __init__(self, out_dir: Path, name: str, generation: int, shard_blocks: int) -> None:
        self.out_dir = out_dir
        self.prefix = f"{name}-{generation:06d}"
        self.shard_blocks = shard_blocks
        self.shards: list[tuple[str, Path, Path]] = []  # part, tmp, final
        self.offset = 0
        self.in_shard = 0
        self.blocks = 0

    def _next_shard(self) -> None:
        part = f"{self.prefix}-{len(self.shards):02d}"
        final = self.out_dir / (part + SHARD_SUFFIX)
        tmp = tmp_path(final)
        self.shards.append((part, tmp, final))
        self.offset = 0
        self.in_shard = 0

    def write_block(self, lines: list[bytes]) -> bytes:
        """One gzip member of ``lines``; no lines: the empty index's single empty block, keyed
        ``!`` (before every SURT), since pywb fails on a summary without lines."""
        if not self.shards or self.in_shard >= self.shard_blocks:
            self._next_shard()
        comp = zlib.compressobj(6, zlib.DEFLATED, 31)  # 31: a gzip member
        data = comp.compress(b"".join(lines)) + comp.flush()
        part, tmp, _ = self.shards[-1]
        with open(tmp, "ab") as fh:  # fsync'd by commit() when the shard is renamed
            fh.write(data + BLOCK_GAP)
        key = block_key(lines[0]) if lines else EMPTY_KEY
        row = b"%s\t%s\t%d\t%d\t%d\n" % (key, part.encode(), self.offset, len(data), self.blocks)
        self.offset += len(data) + len(BLOCK_GAP)
        self.in_shard += 1
        self.blocks += 1
        return row

    def loc_lines(self) -> bytes:
        """The loc file: each part's shard, by absolute path."""
        return b"".join(f"{part}\t{final.absolute()}\n".encode() for part, _, final in self.shards)

    def discard(self) -> None:
        for _, tmp, _ in self.shards:
            tmp.unlink(missing_ok=True)


def _state_file(out_dir: Path, name: str) -> Path:
    return out_dir / f"{name}.state.json"


def read_state(out_dir: Path, name: str) -> dict[str, Any]:
    """What the last build recorded (``generation``, ``inputs``, caller's ``extra``), or {}."""
    try:
        data = json.loads(_state_file(out_dir, name).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


class Builder:
    """A ZipNum index written line by line: :meth:`add` sorted lines, then :meth:`finish`.

    Why a class: :func:`build` writes one index from one stream; the per-definition indexes
    are written all at once from one pass over the big CDXJ files, each line to its
    definition's builder.
    """

    def __init__(
        self,
        out_dir: Path,
        name: str,
        *,
        block_lines: int = 100,
        shard_blocks: int = 100000,
    ) -> None:
        out_dir.mkdir(parents=True, exist_ok=True)
        self.out_dir = out_dir
        self.name = name
        self.block_lines = block_lines
        self.generation = int(read_state(out_dir, name).get("generation", 0)) + 1
        self.writer = _ShardWriter(out_dir, name, self.generation, shard_blocks)
        self.summary_rows: list[bytes] = []
        self.block: list[bytes] = []
        self.lines = 0

    def add(self, line: bytes) -> None:
        """One CDXJ line (ending in a newline), in byte order after the previous one."""
        self.block.append(line)
        self.lines += 1
        if len(self.block) >= self.block_lines:
            self.summary_rows.append(self.writer.write_block(self.block))
            self.block = []

    def finish(self, state: dict[str, Any] | None = None) -> BuildResult:
        """Put the shards, loc, summary and ``state`` in place (in that order); old ones go."""
        out_dir, name = self.out_dir, self.name
        summary, loc = out_dir / f"{name}.idx", out_dir / f"{name}.loc"
        gen_summary, gen_loc = generation_files(out_dir, name, self.generation)
        summary_tmp, loc_tmp = tmp_path(gen_summary), tmp_path(gen_loc)
        try:
            if self.block or self.lines == 0:
                self.summary_rows.append(self.writer.write_block(self.block))
                self.block = []
            for _, tmp, final in self.writer.shards:
                commit(tmp, final)
            loc_tmp.write_bytes(self.writer.loc_lines())
            commit(loc_tmp, gen_loc)  # the loc first: parts named in the summary resolve
            summary_tmp.write_bytes(b"".join(self.summary_rows))
            commit(summary_tmp, gen_summary)
            for gen_file, fixed in ((gen_loc, loc), (gen_summary, summary)):
                linked = tmp_path(fixed)
                os.link(gen_file, linked)
                commit(linked, fixed)
        except BaseException:
            self.discard()
            summary_tmp.unlink(missing_ok=True)
            loc_tmp.unlink(missing_ok=True)
            raise
        generation, n = self.generation, self.lines
        atomic_write_text(
            _state_file(out_dir, name),
            json.dumps({**(state or {}), "generation": generation, "lines": n}),
        )
        _remove_old_generations(out_dir, name, keep=(generation, generation - 1))
        shards = [final for _, _, final in self.writer.shards]
        log.info(
            "zipnum %s: %d lines, %d blocks, %d shard(s)",
            summary,
            n,
            self.writer.blocks,
            len(shards),
        )
        return BuildResult(summary, n, self.writer.blocks, shards, generation)

    def discard(self) -> None:
        """Remove what an unfinished build wrote (its temporary shards)."""
        self.writer.discard()


def build(
    lines: Iterable[bytes],
    out_dir: Path,
    name: str,
    *,
    block_lines: int = 100,
    shard_blocks: int = 100000,
    state: dict[str, Any] | None = None,
) -> BuildResult:
    """Write the ZipNum index ``<out_dir>/<name>.idx`` (+ ``.loc``, shards) of sorted ``lines``.

    ``lines`` are byte-sorted CDXJ lines ending in a newline (:func:`merged_lines`). ``state``
    is recorded beside the summary once everything is in place (what the caller needs to know
    later, e.g. which inputs it was built from). Shards of generations older than the previous
    one are removed.
    """
    builder = Builder(out_dir, name, block_lines=block_lines, shard_blocks=shard_blocks)
    try:
        for line in lines:
            builder.add(line)
    except BaseException:
        builder.discard()
        raise
    return builder.finish(state)


def _remove_old_generations(out_dir: Path, name: str, keep: tuple[int, ...]) -> None:
    for path in out_dir.glob(f"{name}-*{SHARD_SUFFIX}"):
        gen = path.name[len(name) + 1 :].split("-", 1)[0]
        if gen.isdigit() and int(gen) not in keep:
            path.unlink(missing_ok=True)
    for path in [*out_dir.glob(f"{name}-g*.idx"), *out_dir.glob(f"{name}-g*.loc")]:
        gen = path.stem[len(name) + 2 :]
        if gen.isdigit() and int(gen) not in keep:
            path.unlink(missing_ok=True)


def generation_files(out_dir: Path, name: str, generation: int) -> tuple[Path, Path]:
    """The summary and loc of one build, under names no later build reuses."""
    stem = f"{name}-g{generation:06d}"
    return out_dir / f"{stem}.idx", out_dir / f"{stem}.loc"


def served_links(out_dir: Path, name: str, state: dict[str, Any], ext: str) -> dict[str, Path]:
    """Links for a served folder to the summary (``<name><ext>``) and loc (``<name>.loc``) of
    the build ``state`` describes; {} when there is none. The folder is swapped whole, so
    pywb reads a build's index with exactly the flat files that build did not take in."""
    generation = state.get("generation")
    if not isinstance(generation, int):
        return {}
    summary, loc = generation_files(out_dir, name, generation)
    if not summary.exists():  # built by an older version: the fixed names
        summary, loc = out_dir / f"{name}.idx", out_dir / f"{name}.loc"
        if not summary.exists():
            return {}
    return {f"{name}{ext}": summary, f"{name}.loc": loc}


def ensure_empty(out_dir: Path, name: str) -> Path:
    """An empty ZipNum index if none exists yet (pywb needs the summary file to start)."""
    summary = out_dir / f"{name}.idx"
    if not summary.exists():
        build(iter(()), out_dir, name, state={"inputs": {}})
    return summary


def iter_lines(summary: Path) -> Iterator[bytes]:
    """Every CDXJ line of a ZipNum index, in order (for checks and tests)."""
    base = summary.parent
    locs = dict(
        line.split("\t", 1) for line in summary.with_suffix(".loc").read_text().splitlines()
    )
    with open(summary, "rb") as idx:
        for row in idx:
            key, part, offset, length = row.rstrip(b"\n").split(b"\t")[:4]
            with open(base / locs[part.decode()].strip(), "rb") as fh:
                fh.seek(int(offset))
                data = zlib.decompress(fh.read(int(length)), 31)
            if key == EMPTY_KEY and not data:
                continue
            yield from data.splitlines(keepends=True)
