"""Rights per collection: who may write in which collection of selection records.

Why per collection and one check: BnF gives each librarian write access to their own
collections, and partners accounts of their own; a global role (Airflow's) cannot say that. A
collection is the ``collection`` of the selection records (and of the definitions the transfer
makes from them). ``collection_roles`` (sql/060) gives a user a :class:`Role` in one collection
(or ``*``, every collection). A collection nobody was given a role in follows the users' global
roles, as before rights existed; once someone has a role in it, only the users named there may
write in it, each up to their role there; a global administrator may always. :func:`check` is
the one check the curator pages and the CLI call before every write of a collection's records
and definitions; a write of no collection (a domain, a template, a definition of none) needs the
role globally or in every collection (``*``). Grants and revokes are audited
(:func:`harvestflow.audit.record_audit`); refusals are logged.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import IntEnum

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from harvest.errors import HarvestError
from harvestflow.audit import record_audit

log = logging.getLogger(__name__)

EVERY = "*"  # a role in every collection


class Role(IntEnum):
    """What a user may do; each role may do what the lower ones may."""

    VIEWER = 1  # see the pages
    CURATOR = 2  # edit selection records and annotations, comment
    ENGINEER = 3  # control running jobs, edit definitions and traps
    ADMIN = 4  # everything, in every collection; give roles

    @property
    def label(self) -> str:
        return LABELS[self]

    @classmethod
    def parse(cls, word: str) -> Role:
        """A role from its label or stored name (``crawl engineer``, ``engineer``...)."""
        text = word.strip().lower().replace("_", " ").replace("-", " ")
        for role, names in _NAMES.items():
            if text in names:
                return role
        raise RightsError(
            f"role {word[:40]!r}: expected one of viewer, curator, engineer, administrator"
        )


LABELS = {
    Role.VIEWER: "viewer",
    Role.CURATOR: "curator",
    Role.ENGINEER: "crawl engineer",
    Role.ADMIN: "administrator",
}
# the global role of a command's ``--user``: who runs it holds the database's password, and the
# roles given per collection (and in ``*``) still bound what it writes; where a collection
# names nobody, a curator's
COMMAND_LINE = Role.CURATOR

_STORED = {Role.VIEWER: "viewer", Role.CURATOR: "curator", Role.ENGINEER: "engineer",
           Role.ADMIN: "administrator"}  # fmt: skip
_NAMES = {
    role: {_STORED[role], LABELS[role], *(("admin",) if role is Role.ADMIN else ())}
    for role in Role
}


class RightsError(HarvestError, ValueError):
    """A grant that cannot be stored (unknown role, empty collection or user)."""


class Forbidden(RightsError):
    """A write the user's role in that collection does not allow; says who, what and where."""


@dataclass(frozen=True)
class Grant:
    collection: str
    username: str
    role: Role
    granted_by: str
    granted_at: datetime


def _name(value: str, what: str, limit: int) -> str:
    text = (value or "").strip()
    if not text or len(text) > limit or "\x00" in text:
        raise RightsError(f"{what} {value[:40]!r}: want 1 to {limit} characters")
    return text


def grants(
    conn: Connection, *, collection: str | None = None, username: str | None = None
) -> list[Grant]:
    """The roles given (of one collection, one user, or all), by collection then user."""
    rows = conn.execute(
        sa.text(
            "SELECT collection, username, role, granted_by, granted_at FROM collection_roles"
            " WHERE (CAST(:c AS text) IS NULL OR collection = :c)"
            " AND (CAST(:u AS text) IS NULL OR username = :u) ORDER BY collection, username"
        ),
        {"c": collection, "u": username},
    ).all()
    return [Grant(r.collection, r.username, Role.parse(r.role), r.granted_by, r.granted_at)
            for r in rows]  # fmt: skip


def grant(conn: Connection, collection: str, username: str, role: Role, by: str) -> Grant:
    """Give ``username`` ``role`` in ``collection`` (replacing the role they had there)."""
    collection = _name(collection, "collection", 500)
    username = _name(username, "user", 200)
    by = _name(by, "who gives the role", 200)
    old = {g.username: g.role for g in grants(conn, collection=collection, username=username)}
    row = conn.execute(
        sa.text(
            "INSERT INTO collection_roles (collection, username, role, granted_by)"
            " VALUES (:c, :u, :r, :b) ON CONFLICT (collection, username) DO UPDATE"
            " SET role = EXCLUDED.role, granted_by = EXCLUDED.granted_by, granted_at = now()"
            " RETURNING granted_at"
        ),
        {"c": collection, "u": username, "r": _STORED[role], "b": by},
    ).one()
    before = old[username].label if username in old else None
    record_audit(conn, by, "rights.grant", f"collection {collection}",
                 {"user": username, "before": before, "after": role.label})  # fmt: skip
    return Grant(collection, username, role, by, row.granted_at)


def revoke(conn: Connection, collection: str, username: str, by: str) -> Grant:
    """Take ``username``'s role in ``collection`` away (RightsError when they had none)."""
    by = _name(by, "who takes the role", 200)
    row = conn.execute(
        sa.text(
            "DELETE FROM collection_roles WHERE collection = :c AND username = :u"
            " RETURNING collection, username, role, granted_by, granted_at"
        ),
        {"c": collection.strip(), "u": username.strip()},
    ).one_or_none()
    if row is None:
        raise RightsError(f"{username!r} has no role in collection {collection!r}")
    gone = Grant(row.collection, row.username, Role.parse(row.role), row.granted_by,
                 row.granted_at)  # fmt: skip
    record_audit(conn, by, "rights.revoke", f"collection {gone.collection}",
                 {"user": gone.username, "before": gone.role.label, "after": None})  # fmt: skip
    return gone


def role_in(conn: Connection, username: str, collection: str, global_role: Role) -> Role:
    """``username``'s role in ``collection``: see the module's docstring."""
    if global_role >= Role.ADMIN:
        return Role.ADMIN
    rows = conn.execute(
        sa.text(
            "SELECT collection, username, role FROM collection_roles"
            " WHERE collection IN (:c, :every)"
        ),
        {"c": collection, "every": EVERY},
    ).all()
    mine = [Role.parse(r.role) for r in rows if r.username == username]
    if any(r.collection == collection for r in rows):  # restricted: its own users only
        return max(mine, default=Role.VIEWER)
    return max([global_role, *mine])


def role_everywhere(conn: Connection, username: str, global_role: Role) -> Role:
    """``username``'s role for a write of no collection: their global role, or the one given
    them in every collection (``*``) when higher."""
    given = conn.execute(
        sa.text("SELECT role FROM collection_roles WHERE collection = :every AND username = :u"),
        {"every": EVERY, "u": username},
    ).scalar()
    return max(global_role, Role.parse(given)) if given else global_role


def lowest(
    conn: Connection, username: str, collections: Iterable[str], global_role: Role
) -> tuple[Role, str | None]:
    """``username``'s lowest role among ``collections`` and the collection it is in (none
    given: their role outside collections, :func:`role_everywhere`, and None);
    :class:`RightsError` for a name no collection can have (a NUL byte, over 500 characters)."""
    found: tuple[Role, str | None] | None = None
    for collection in dict.fromkeys(c.strip() for c in collections):
        if "\x00" in collection or len(collection) > 500:  # no collection is named so
            raise RightsError(f"collection {collection[:40]!r}: not a collection's name")
        role = role_in(conn, username, collection, global_role)
        if found is None or role < found[0]:
            found = (role, collection)
    return found or (role_everywhere(conn, username, global_role), None)


def allows(
    conn: Connection,
    username: str | None,
    collections: Iterable[str],
    needed: Role,
    global_role: Role,
) -> bool:
    """Whether :func:`check` would let ``username`` write (a page shows its forms then)."""
    try:
        return bool(username) and lowest(conn, str(username), collections, global_role)[0] >= needed
    except RightsError:
        return False


def check(
    conn: Connection,
    username: str | None,
    collections: Iterable[str],
    needed: Role,
    global_role: Role,
    *,
    what: str = "change",
) -> str:
    """The user, when their role in every one of ``collections`` (none: outside collections)
    is at least ``needed``; :class:`Forbidden` naming the collection where it is not, logged."""
    if not username:
        raise Forbidden("writes need an authenticated user")
    role, collection = lowest(conn, username, collections, global_role)
    if role >= needed:
        return username
    where = "" if collection is None else f" in collection {collection!r}"
    log.warning("rights: %s refused to %s (%s%s)", what, username, role.label, where)
    there = "" if collection is None else " there"
    raise Forbidden(
        f"{username} is a {role.label}{where}: to {what}{there}, this needs the {needed.label} role"
    )
