"""Configurations that would crawl nothing (zero budget, no active seed) are left out of jobs."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa

from harvest import pipeline as p
from harvest.jobgen.model import ConfigInfo, HarvestLimits
from harvest.jobgen.skip import active_seeds, zero_budget
from harvest.oneoff import create_seedlist_harvest

LD = datetime(2026, 11, 22, 3, 0, tzinfo=UTC)


def test_active_seeds_are_the_non_blank_lines_not_commented_out():
    text = "http://a.test/\n  \n# http://old.a.test/\n  #http://x.a.test/\n https://b.a.test/ \n"
    assert active_seeds(text) == ["http://a.test/", "https://b.a.test/"]
    assert active_seeds("# all disabled\n\n") == []


def test_zero_budget_is_a_real_zero_on_either_side_not_unlimited():
    def c(objects, size):
        return ConfigInfo(1, "a.test", "t", objects, size)

    selective = HarvestLimits(snapshot=False)
    assert zero_budget(c(0, -1), selective) and zero_budget(c(-1, 0), selective)
    assert not zero_budget(c(-1, -1), selective) and not zero_budget(c(10, 1), selective)
    # a snapshot whose own byte budget is 0 leaves nothing to crawl for any configuration
    assert zero_budget(c(-1, -1), HarvestLimits(snapshot=True, max_bytes=0))


@pytest.mark.services
def test_configurations_that_would_crawl_nothing_are_skipped_and_counted(hdb, caplog):
    seeds = ["http://a.test/", "http://b.test/", "http://c.test/", "http://d.test/"]
    hid = create_seedlist_harvest(seeds, "default_selective", "manual__skip", engine=hdb)
    with hdb.begin() as c:
        c.execute(
            sa.text(
                "UPDATE seedlists s SET seeds = '# http://b.test/\n\n' FROM domains d"
                " WHERE d.domain_id = s.domain_id AND d.name = 'b.test'"
            )
        )
        c.execute(
            sa.text(
                "UPDATE seedlists s SET seeds = s.seeds || E'\n#http://a.test/old/' FROM domains d"
                " WHERE d.domain_id = s.domain_id AND d.name = 'a.test'"
            )
        )
        c.execute(
            sa.text(
                "UPDATE configurations c SET maxbytes = 0 FROM domains d"
                " WHERE d.domain_id = c.domain_id AND d.name = 'c.test'"
            )
        )
    with caplog.at_level(logging.WARNING, logger="harvest.jobgen.skip"):
        jobs = p.generate_jobs(hid, LD, engine=hdb)
    with hdb.connect() as c:
        rows = c.execute(
            sa.text(
                "SELECT j.job_index, j.num_configs, j.seedlist, array_agg(d.name ORDER BY d.name)"
                " AS domains FROM jobs j JOIN job_configs jc USING (job_id)"
                " JOIN configurations USING (config_id) JOIN domains d USING (domain_id)"
                " WHERE j.job_id = ANY(:j) GROUP BY j.job_id ORDER BY j.job_index"
            ),
            {"j": jobs},
        ).all()
    domains = sorted(d for r in rows for d in r.domains)
    assert domains == ["a.test", "d.test"]
    assert [r.job_index for r in rows] == list(range(len(rows)))  # no gaps
    assert sum(r.num_configs for r in rows) == 2
    seedlists = "\n".join(r.seedlist for r in rows).splitlines()
    assert sorted(seedlists) == ["http://a.test/", "http://d.test/"]  # commented-out seeds left out
    (message,) = [
        r.getMessage()
        for r in caplog.records
        if r.name == "harvest.jobgen.skip" and r.levelno >= logging.WARNING
    ]
    assert "2 configuration(s) left out" in message
    assert "1 with a zero object/byte budget, 1 without an active seed" in message
