"""The replay service's refresh passes over the real harvest database (PostgreSQL): a pass that
finds nothing written since the last one makes one query, and every change committed — before a
pass, or by a transaction still open while a pass ran — is published by the next pass.

What is published is read back from the files pywb and the gateway read (the ACL file, the home
page's content), written by :func:`access.publish.publish` with the service's long-lived reads.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
import sqlalchemy as sa
from sqlalchemy import event

from access import home, rules, tours
from access.config import AccessConfig
from access.definitions import acl_file
from access.index import Lister
from access.publish import publish
from harvestflow import settings as settings_mod
from harvestflow.db_reads import Reads

pytestmark = pytest.mark.services


class Statements:
    """The statements the engine's connections run (the pings of a pool checkout are not)."""

    def __init__(self, engine: sa.Engine) -> None:
        self.seen: list[str] = []
        event.listen(engine, "before_cursor_execute", self._record)

    def _record(self, *args: object) -> None:  # conn, cursor, statement, parameters, ...
        self.seen.append(str(args[2]))

    def during(self, action: Callable[[], None]) -> list[str]:
        start = len(self.seen)
        action()
        return self.seen[start:]


def test_an_idle_pass_makes_one_query_and_the_next_pass_publishes_each_committed_change(
    db_engine: sa.Engine, access_settings: settings_mod.Settings
) -> None:
    settings = access_settings
    cfg = AccessConfig.from_settings(settings)
    lister = Lister()
    reads = Reads(db_engine)
    statements = Statements(db_engine)

    def one_pass() -> None:
        publish(settings, db_engine, lister, reads)

    first = statements.during(one_pass)
    assert len(first) > 5  # rules, licences, definitions, curated, tours, totals: all read
    # idle passes: where nothing at all was written since (another database's autovacuum may
    # write now and then: that pass reads everything again), the stamp is the only query
    idle = []
    for _ in range(5):
        before = reads.reused
        ran = statements.during(one_pass)
        idle.append((reads.reused - before, ran))
    reused = [ran for hit, ran in idle if hit]
    assert reused, "no pass found the database unchanged"
    assert all(len(ran) == 1 and "pg_current_wal_insert_lsn" in ran[0] for ran in reused), idle
    assert all(len(ran) == len(first) for hit, ran in idle if not hit), idle

    # a change committed between two passes: in force at the next
    rules.add(db_engine, "http://blocked.test/", "block", user="alice", reason="court order")
    one_pass()
    assert "test,blocked)/" in acl_file(cfg).read_text()
    tours.add(db_engine, "harbours", "Harbours", user="alice")
    one_pass()
    assert [t["name"] for t in json.loads(home.path(cfg).read_text())["tours"]] == ["harbours"]

    # a change made by a transaction open while a pass runs: not seen by that pass (not
    # committed), published by the next once committed (its commit changes the stamp)
    with db_engine.connect() as other:
        other.execute(sa.text("SELECT 1"))  # its transaction is open from here
        rules.remove(db_engine, "test,blocked)/", user="bob")  # committed at once
        one_pass()
        assert "test,blocked)/" not in acl_file(cfg).read_text()
        tour_id = other.execute(
            sa.text(
                "INSERT INTO access_tours (name, title, description, created_by)"
                " VALUES ('bridges', 'Bridges', '', 'carol') RETURNING tour_id"
            )
        ).scalar_one()
        assert tour_id
        one_pass()
        assert "bridges" not in home.path(cfg).read_text()
        other.commit()
    one_pass()
    names = [t["name"] for t in json.loads(home.path(cfg).read_text())["tours"]]
    assert names == ["harbours", "bridges"]


def test_a_publish_without_long_lived_reads_uses_one_connection(
    db_engine: sa.Engine, access_settings: settings_mod.Settings
) -> None:
    checkouts: list[object] = []
    event.listen(db_engine.pool, "checkout", lambda *args: checkouts.append(args[0]))
    publish(access_settings, db_engine)
    assert len(checkouts) == 1
