"""Host-partitioned crawling, the child's side: who owns a URL, and the inbox hand-off.

Why partitions: one Scrapy process is bound to one core, so a job is crawled by N processes,
each owning the URLs of a set of hosts. The key is the budget domain when it has a limit (so
one process counts it exactly), else the host; keys go by CRC-32, stable across processes.
Why append-only inbox files: a URL for another partition is appended before the sender's
frontier commits, and the owner records how far it has read in the same transaction as the
URLs it adds, so a kill -9 loses no hand-off and a re-read is harmless.
"""

from __future__ import annotations

import json
import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from crawler.budget import Budgets
from harvestflow.atomic import atomic_write_text

STOP_FILE = "stop"


@dataclass(frozen=True)
class Partition:
    """This process's place in a partitioned job: ``index`` of ``count``, and the directory the
    parent and the children share (inboxes, status files, the stop file)."""

    index: int
    count: int
    coord_dir: Path

    def inbox(self, index: int) -> Path:
        return self.coord_dir / f"inbox-{index}.jsonl"

    def status_file(self, index: int) -> Path:
        return self.coord_dir / f"status-{index}.json"

    @property
    def stop_file(self) -> Path:
        return self.coord_dir / STOP_FILE


def partition_key(url: str, budgets: Budgets) -> str:
    """The budget domain of a URL if that domain has a limit, else its host[:port]."""
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        port = parts.port
    except ValueError:  # an invalid URL: any partition refuses it (-7), so any key will do
        return ""
    domain = budgets.domain_for(host)
    if budgets.limited(domain):
        return domain
    return f"{host}:{port}" if port else host


def seed_assignment(seeds: list[str], budgets: Budgets, count: int) -> dict[str, int]:
    """Partition of each seed's key, spreading the seeds' keys evenly over the partitions.

    Why not the hash alone: a job's work starts at its seeds, and a hash of a few keys is
    often lopsided (4 hosts on 2 processes split 3-1 more often than 2-2, leaving one core idle
    for half the crawl). Keys are dealt greedily, the key with the most seeds first, each to the
    partition with the fewest seeds so far. The result depends only on the frozen seed list, so
    every child, and every restart of the job, computes the same assignment. Keys first seen
    later (other hosts, a redirecting seed's target) go by the hash.
    """
    weight: dict[str, int] = {}
    for seed in seeds:
        try:
            key = partition_key(seed, budgets)
        except ValueError:  # a bad seed is refused by its owner (by hash) later
            continue
        weight[key] = weight.get(key, 0) + 1
    load = [0] * max(count, 1)
    assignment: dict[str, int] = {}
    for key in sorted(weight, key=lambda k: (-weight[k], k)):
        index = min(range(len(load)), key=lambda i: (load[i], i))
        assignment[key] = index
        load[index] += weight[key]
    return assignment


def owner_of(url: str, budgets: Budgets, count: int, pinned: dict[str, int] | None = None) -> int:
    """The partition index that crawls ``url``: its seed assignment if the URL's key has one
    (see :func:`seed_assignment`), else the CRC-32 of the key."""
    if count <= 1:
        return 0
    key = partition_key(url, budgets)
    if pinned:
        index = pinned.get(key)
        if index is not None:
            return index
    return zlib.crc32(key.encode("utf-8")) % count


class Outbox:
    """Hand-offs of one page, grouped by destination, written and fsync'd in one go."""

    def __init__(self, partition: Partition) -> None:
        self.partition = partition
        self.pending: dict[int, list[str]] = {}
        self.dirty: set[int] = set()
        self.sent = 0

    def add(self, owner: int, url: str, hop: str, context: str, parent: dict[str, Any]) -> None:
        line = json.dumps(
            [url, hop, context, parent.get("hops", ""), parent.get("url"), parent.get("seed")],
            separators=(",", ":"),
        )
        self.pending.setdefault(owner, []).append(line)

    def flush(self) -> None:
        """Append every pending line (call before the frontier commit)."""
        for owner, lines in self.pending.items():
            data = ("\n".join(lines) + "\n").encode("utf-8")
            fd = os.open(self.partition.inbox(owner), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, data)  # one write on an O_APPEND file: never interleaved
            finally:
                os.close(fd)
            self.sent += len(lines)
            self.dirty.add(owner)
        self.pending.clear()

    def sync(self) -> None:
        """fsync the inboxes written to since the last call (on a timer and at the end)."""
        for owner in sorted(self.dirty):
            fd = os.open(self.partition.inbox(owner), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        self.dirty.clear()


def complete_lines(path: Path, offset: int, limit: int = -1) -> tuple[list[bytes], int]:
    """The complete lines of an append-only file after ``offset`` (at most ``limit`` bytes read;
    a line still being written is left for the next call), and the offset after them."""
    try:
        with path.open("rb") as fh:
            fh.seek(offset)
            data = fh.read(limit)
    except FileNotFoundError:
        return [], offset
    end = data.rfind(b"\n") + 1
    return data[:end].splitlines(), offset + end


def read_inbox(path: Path, offset: int, limit: int = 1 << 20) -> tuple[list[list[Any]], int]:
    """Complete lines of an inbox from ``offset``; returns (entries, new offset)."""
    lines, offset = complete_lines(path, offset, limit)
    return [json.loads(line) for line in lines if line.strip()], offset


def write_status(path: Path, data: dict[str, Any]) -> None:
    """Atomically replace a child's status file (read by the parent)."""
    # rewritten on every tick and worthless after a crash: atomic, not fsync'd
    atomic_write_text(path, json.dumps(data), durable=False)


def read_status(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None
