"""The readers' home page's content: guided tours and collections, as the service publishes it.

Why a file written at publish time: the gateway serves ``/`` on every reader's request, while
the tours and the collections change only when a curator edits a tour or a harvest lands; the
publish step (:mod:`access.publish`: ``access serve`` at start and every
``refresh_interval_s``, the tours CLI at once) reads them from the harvest database and writes
``<access>/home.json``, which the gateway re-reads when it changes (:class:`HomeFile`). The page
itself is rendered in the reader's language by :mod:`access.pages`.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any

from access.config import ALL, DEFINITION_PREFIX, AccessConfig
from access.tours import Tour
from harvest.growth import definition_totals
from harvestflow.atomic import atomic_write_text
from harvestflow.db_reads import Bind, read

log = logging.getLogger(__name__)


def path(cfg: AccessConfig) -> Path:
    return cfg.root / "home.json"


def _day(value: Any) -> str | None:
    return value.date().isoformat() if value is not None else None


def _when(capture: str) -> str:
    """A capture's chosen timestamp as a day, month or year (YYYY[-MM[-DD]])."""
    parts = [capture[:4], capture[4:6], capture[6:8]]
    return "-".join(p for p in parts if len(p) == 2 or len(p) == 4)


def build(
    engine: Bind,
    tours: list[Tour],
    collections: list[str],
    curated: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The home page's content: the tours, then ``all``, each definition collection served
    (``harvest-<id>``) with its description, captures and date range, and the curated
    collections (``curated``: name, title, description, captures; :mod:`access.curated`)."""
    ids = [int(c.removeprefix(DEFINITION_PREFIX)) for c in collections
           if c.startswith(DEFINITION_PREFIX) and c[len(DEFINITION_PREFIX):].isdigit()]  # fmt: skip
    totals = read(engine, ("definition_totals", tuple(ids)), lambda c: definition_totals(c, ids))
    listed = []
    for hid, t in totals.items():
        listed.append({
            "name": f"{DEFINITION_PREFIX}{hid}", "title": t["name"], "kind": t["kind"],
            "description": t["comments"] or "", "captures": t["captures"],
            "first": _day(t["first"]), "last": _day(t["last"]),
        })  # fmt: skip
    firsts = [c["first"] for c in listed if c["first"]]
    lasts = [c["last"] for c in listed if c["last"]]
    whole = {
        "name": ALL, "title": None, "kind": None, "description": None,
        "captures": sum(c["captures"] for c in listed),
        "first": min(firsts, default=None), "last": max(lasts, default=None),
    }  # fmt: skip
    return {
        "tours": [
            {
                "name": t.name, "title": t.title, "description": t.description,
                "sites": [
                    {"url": s.url, "capture": s.capture, "collection": s.collection,
                     "title": s.title, "description": s.description, "when": _when(s.capture)}
                    for s in t.sites
                ],
            }
            for t in tours
        ],
        "collections": [whole, *listed, *[
            {"name": c["name"], "title": c["title"], "kind": None,
             "description": c["description"], "captures": c["captures"], "first": None,
             "last": None} for c in curated or []]],
    }  # fmt: skip


def write(cfg: AccessConfig, content: dict[str, Any]) -> Path:
    """Write ``<access>/home.json`` if it changed (atomic rename)."""
    target = path(cfg)
    text = json.dumps(content, indent=1, sort_keys=True) + "\n"
    try:
        if target.read_text(encoding="utf-8") == text:
            return target
    except FileNotFoundError:
        pass
    atomic_write_text(target, text)
    return target


class HomeFile:
    """The published content, re-read when the file changed (its modification time and size)."""

    def __init__(self, cfg: AccessConfig) -> None:
        self.path = path(cfg)
        self._seen: tuple[int, int] | None = None
        self._content: dict[str, Any] = {"tours": [], "collections": []}
        self._lock = threading.Lock()

    def content(self) -> dict[str, Any]:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return {"tours": [], "collections": []}  # not published yet
        with self._lock:
            if self._seen != (st.st_mtime_ns, st.st_size):
                try:
                    self._content = json.loads(self.path.read_text(encoding="utf-8"))
                    self._seen = (st.st_mtime_ns, st.st_size)
                except (OSError, ValueError) as exc:  # keep the last good one
                    log.warning("%s: unreadable (%s); the last content is served", self.path, exc)
            return self._content
