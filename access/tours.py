"""Guided tours: curated, described lists of entry points into the archive (harvest DB).

Why in the database: curators manage them from the CLI on any machine, and the replay
service's home page (:mod:`access.home`) is regenerated from them while it serves. A tour has a
short name (its handle on the CLI and the anchor on the home page), a title and a description;
each site is a URL with the capture chosen for it (a 14-digit timestamp, or a prefix of one:
pywb replays the nearest capture) and the collection it is replayed from (default ``all``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import sqlalchemy as sa

from access.config import ALL, COLL_NAME
from access.errors import AccessError
from harvestflow.db_reads import Bind, read

_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_CAPTURE = re.compile(r"^[0-9]{4,14}$")


class TourError(AccessError, ValueError):
    """A tour or site that cannot be stored, named with the value at fault."""


@dataclass(frozen=True)
class Site:
    position: int
    url: str
    capture: str
    collection: str = ALL
    title: str = ""
    description: str = ""


@dataclass(frozen=True)
class Tour:
    tour_id: int
    name: str
    title: str
    description: str
    created_by: str
    sites: list[Site] = field(default_factory=list)


def add(engine: sa.Engine, name: str, title: str, description: str = "", *, user: str) -> Tour:
    if not _NAME.match(name):
        raise TourError(f"tour name {name!r}: lower-case letters, digits and '-'")
    if not title.strip():
        raise TourError("a tour needs a title")
    with engine.begin() as conn:
        if conn.execute(sa.text("SELECT 1 FROM access_tours WHERE name = :n"), {"n": name}).first():
            raise TourError(f"tour {name!r} exists already")
        tour_id = conn.execute(
            sa.text(
                "INSERT INTO access_tours (name, title, description, created_by)"
                " VALUES (:n, :t, :d, :u) RETURNING tour_id"
            ),
            {"n": name, "t": title, "d": description, "u": user},
        ).scalar_one()
    return Tour(int(tour_id), name, title, description, user)


def _tour_id(conn: sa.Connection, name: str) -> int:
    tour_id = conn.execute(
        sa.text("SELECT tour_id FROM access_tours WHERE name = :n"), {"n": name}
    ).scalar()
    if tour_id is None:
        raise TourError(f"no tour named {name!r}")
    return int(tour_id)


def add_site(
    engine: sa.Engine,
    name: str,
    url: str,
    capture: str,
    *,
    collection: str = ALL,
    title: str = "",
    description: str = "",
) -> Site:
    """Append a site (an entry point with its chosen capture) to a tour."""
    if not re.match(r"^https?://[^\s/]+", url) or any(c.isspace() for c in url):
        raise TourError(f"site URL {url!r}: want http(s)://host/…")
    if not _CAPTURE.match(capture):
        raise TourError(f"capture {capture!r}: want a timestamp YYYY[MMDDhhmmss] (4-14 digits)")
    if not COLL_NAME.match(collection):
        raise TourError(f"collection {collection!r}: not a collection name")
    with engine.begin() as conn:
        tour_id = _tour_id(conn, name)
        position = conn.execute(
            sa.text(
                "SELECT coalesce(max(position), 0) + 1 FROM access_tour_sites WHERE tour_id = :t"
            ),
            {"t": tour_id},
        ).scalar_one()
        conn.execute(
            sa.text(
                "INSERT INTO access_tour_sites (tour_id, position, url, capture, collection,"
                " title, description) VALUES (:t, :p, :u, :c, :coll, :ti, :d)"
            ),
            {
                "t": tour_id,
                "p": position,
                "u": url,
                "c": capture,
                "coll": collection,
                "ti": title,
                "d": description,
            },
        )
    return Site(int(position), url, capture, collection, title, description)


def remove_site(engine: sa.Engine, name: str, position: int) -> None:
    with engine.begin() as conn:
        deleted = conn.execute(
            sa.text("DELETE FROM access_tour_sites WHERE tour_id = :t AND position = :p"),
            {"t": _tour_id(conn, name), "p": position},
        ).rowcount
    if not deleted:
        raise TourError(f"tour {name!r} has no site {position}")


def remove(engine: sa.Engine, name: str) -> None:
    with engine.begin() as conn:
        conn.execute(
            sa.text("DELETE FROM access_tours WHERE tour_id = :t"), {"t": _tour_id(conn, name)}
        )


def all_tours(bind: Bind) -> list[Tour]:
    """Every tour with its sites, in creation order (``bind``: an engine, or a refresh pass's
    reads)."""
    return read(bind, "access_tours", _all_tours)


def _all_tours(conn: sa.Connection) -> list[Tour]:
    tours = conn.execute(
        sa.text(
            "SELECT tour_id, name, title, description, created_by FROM access_tours"
            " ORDER BY tour_id"
        )
    ).all()
    sites = conn.execute(
        sa.text(
            "SELECT tour_id, position, url, capture, collection, title, description"
            " FROM access_tour_sites ORDER BY tour_id, position"
        )
    ).all()
    by_tour: dict[int, list[Site]] = {}
    for s in sites:
        by_tour.setdefault(int(s[0]), []).append(Site(int(s[1]), *s[2:]))
    return [Tour(int(t[0]), t[1], t[2], t[3], t[4], by_tour.get(int(t[0]), [])) for t in tours]


def get(engine: sa.Engine, name: str) -> Tour:
    for tour in all_tours(engine):
        if tour.name == name:
            return tour
    raise TourError(f"no tour named {name!r}")
