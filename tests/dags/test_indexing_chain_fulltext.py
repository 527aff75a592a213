"""The indexing_chain DAG, run with `airflow dags test` on the session's PostgreSQL: a finished
job's WARC goes through the chain and its pages are searchable when the run ends."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from harvestflow import settings as settings_mod
from search.backends import get_backend
from search.query import parse_query
from tests.support.chainkit import wipe_chain_dirs
from tests.support.corpus import chain_job, pages
from tests.support.runstates import DagTests

pytestmark = [pytest.mark.airflow, pytest.mark.slow, pytest.mark.services]


def test_indexing_chain_run_makes_the_new_captures_searchable(
    airflow_ready: settings_mod.Settings, airflow_runs: DagTests, db_engine: sa.Engine
) -> None:
    services = airflow_ready
    wipe_chain_dirs(services.data_dir)
    items = pages()
    (name,) = chain_job(db_engine, services.data_dir, "dag", [items], run=False)
    proc = airflow_runs.run("indexing_chain")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with db_engine.connect() as conn:
        row = conn.execute(
            sa.text("SELECT status, extracted FROM fulltext_files WHERE file_name = :f"),
            {"f": name},
        ).one()
    assert tuple(row) == ("done", 6)
    hits = get_backend().search(parse_query('"salles de recherche"')).hits
    assert [h.url for h in hits] == [items[0].url]
