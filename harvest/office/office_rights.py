"""Who may make each write of the back office and of a job's page: the collections it touches
and the role it needs, for the pages (403) and the CLI (a refusal) alike (:func:`rights.check`).

A definition belongs to its ``collections`` (its form's, or its selection records'): a curator
there may create, edit, deactivate and reactivate it; a cron schedule, or switching a snapshot
definition, needs a crawl engineer; an edit touches the collections it had and the one it moves
to. Domains, aliases and templates are of no collection and change every harvest of a domain:
a crawl engineer's (globally or in ``*``), as NetarchiveSuite keeps them with its harvest
administrators. A job's QA comment and patch harvest are a curator's of the job's definition's
collections (and of the record the directives change); an action on a running crawl stays a
crawl engineer's anywhere (:mod:`harvest.control`): stopping a runaway crawl never waits.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from harvest import rights
from harvest.definitions import collections_of, job_collections
from harvest.rights import Role
from harvest.selection.qa_feedback import job_records
from harvest.selection.record_search import collections_of as record_collections

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Needed:
    """What a write needs: the role, in every one of the collections (none: outside them)."""

    collections: tuple[str, ...]
    role: Role
    what: str
    outside: bool = False  # and outside collections too (a definition left in none)

    def check(self, conn: Connection, user: str | None, global_role: Role) -> str:
        """The user, when allowed (:class:`harvest.rights.Forbidden` naming why not)."""
        user = rights.check(conn, user, self.collections, self.role, global_role, what=self.what)
        if self.outside and self.collections:
            rights.check(conn, user, (), self.role, global_role, what=self.what)
        return user

    def allows(self, conn: Connection, user: str | None, global_role: Role) -> bool:
        """Whether :meth:`check` would let ``user`` write (a page shows its form then)."""
        wanted = [self.collections, *([()] if self.outside and self.collections else [])]
        return all(rights.allows(conn, user, c, self.role, global_role) for c in wanted)


DOMAINS = Needed((), Role.ENGINEER, "change domains, their configurations and aliases")
TEMPLATES = Needed((), Role.ENGINEER, "add crawl templates")


def _kind(conn: Connection, harvest_id: int) -> str | None:
    return conn.execute(
        sa.text("SELECT kind FROM harvestdefinitions WHERE harvest_id = :h"), {"h": harvest_id}
    ).scalar()


def definition_write(conn: Connection, harvest_id: int | None, values: Mapping[str, str]) -> Needed:
    """A definition created (``harvest_id`` None) or edited from a form's ``values``."""
    given = str(values.get("collection") or "").strip()
    before = collections_of(conn, harvest_id) if harvest_id is not None else None
    touched = dict.fromkeys([*(before or []), *([given] if given else [])])
    cron = str(values.get("schedule") or "").strip() == "cron"
    what = "give a definition a cron schedule" if cron else "edit definitions"
    return Needed(tuple(touched), Role.ENGINEER if cron else Role.CURATOR, what, not given)


def definition_switch(conn: Connection, harvest_id: int) -> Needed:
    """A definition deactivated or reactivated: a snapshot's needs a crawl engineer."""
    snapshot = _kind(conn, harvest_id) == "full"
    return Needed(
        tuple(collections_of(conn, harvest_id) or ()),
        Role.ENGINEER if snapshot else Role.CURATOR,
        "switch snapshot definitions off and on" if snapshot else "switch definitions off and on",
    )


def job_write(
    conn: Connection,
    job_id: int,
    what: str,
    *,
    record_id: int | None = None,
    directives: bool = False,
) -> Needed:
    """A curator's write about a job (a QA comment, a patch harvest): the collections of its
    definition, and of the record whose next harvest the comment's directives change (the one
    named, or the job's only one: :func:`harvest.selection.qa_feedback.write_comment`)."""
    touched = list(job_collections(conn, job_id) or [])
    if record_id is None and directives:
        records = job_records(conn, job_id)
        record_id = int(records[0]["record_id"]) if len(records) == 1 else None
    if record_id is not None:
        touched += record_collections(conn, [record_id]).values()
    return Needed(tuple(dict.fromkeys(touched)), Role.CURATOR, what)
