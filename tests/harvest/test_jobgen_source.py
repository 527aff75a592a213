"""The best earlier harvest chosen in SQL is the one NetarchiveSuite's sequential rule picks."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from harvest.domains import ensure_config
from harvest.jobgen.expectation import best_history
from harvest.jobgen.model import HistoryEntry
from harvest.jobgen.source import stream_configs
from harvest.snapshot import create_snapshot_definition

pytestmark = pytest.mark.services


def test_sql_best_history_matches_the_sequential_rule_in_both_query_forms(hdb):
    rnd = random.Random(7)
    n = 300
    with hdb.begin() as c:
        ids = [
            ensure_config(c, f"d{i}.test", template="default_snapshot").config_id for i in range(n)
        ]
        other = c.execute(
            sa.text(
                "INSERT INTO harvestdefinitions (name, kind) VALUES ('h', 'full') RETURNING harvest_id"
            )
        ).scalar_one()
        expected: dict[int, HistoryEntry | None] = {}
        base = datetime(2020, 1, 1, tzinfo=UTC)
        for cid in ids:
            rows = []
            for _k in range(rnd.randint(0, 6)):
                # few distinct values so that ties (objects, dates) really happen
                rows.append(
                    (
                        rnd.choice([5, 50, 50, 700]),
                        rnd.randint(1, 10**6),
                        rnd.choice([0, 0, 1, 2, 4]),
                        base + timedelta(days=rnd.randint(0, 3)),
                    )
                )
            newest_first = []
            for objs, size, reason, when in rows:
                hid = c.execute(
                    sa.text(
                        "INSERT INTO historyinfo (stopreason, objectcount, bytecount, config_id,"
                        " harvest_id, harvest_time) VALUES (:r, :o, :b, :c, :h, :t)"
                        " RETURNING historyinfo_id"
                    ),
                    {"r": reason, "o": objs, "b": size, "c": cid, "h": other, "t": when},
                ).scalar_one()
                newest_first.append((when, hid, HistoryEntry(objs, size, reason)))
            newest_first.sort(key=lambda x: (x[0], x[1]), reverse=True)
            expected[cid] = best_history(tuple(e for _, _, e in newest_first))
    hid = create_snapshot_definition("snap", engine=hdb)
    for bulk in (True, False):
        with hdb.begin() as c:
            got = {
                cfg.config_id: (cfg.history[0] if cfg.history else None)
                for cfg in stream_configs(c, hid, bulk=bulk, fetch_size=37)
            }
        assert got == expected, f"bulk={bulk}"
    assert sum(1 for v in expected.values() if v is None) > 0  # never-harvested ones covered


def test_stopping_the_stream_early_releases_the_cursor(hdb):
    with hdb.begin() as c:
        for i in range(40):
            ensure_config(c, f"e{i}.test", template="default_snapshot")
    hid = create_snapshot_definition("snap", engine=hdb)
    with hdb.begin() as c:
        stream = stream_configs(c, hid, fetch_size=5)
        first = [next(stream).config_id for _ in range(7)]
        stream.close()  # the prefetch thread stops, the cursor closes
        assert first == sorted(first)
        # the connection is usable afterwards in the same transaction
        assert c.execute(sa.text("SELECT count(*) FROM configurations")).scalar() == 40


def test_the_configuration_name_is_streamed_in_both_query_forms(hdb):
    # the fixed-count generator sorts by it (NetarchiveSuite's ConfigNamesComparator)
    with hdb.begin() as c:
        ensure_config(c, "n1.test", config_name="zeta", template="default_snapshot")
        ensure_config(c, "n2.test", config_name="alpha", template="default_snapshot")
    hid = create_snapshot_definition("snap", engine=hdb)
    for bulk in (True, False):
        with hdb.begin() as c:
            names = [cfg.name for cfg in stream_configs(c, hid, bulk=bulk)]
        assert names == ["zeta", "alpha"], f"bulk={bulk}"
