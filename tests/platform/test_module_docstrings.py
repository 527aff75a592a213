"""Module docstrings say what a module is and why, in a few lines: the detail belongs to the
code it describes (a class, a function) or to the manual, where it is kept true.

DAG files are left out: their docstring is the DAG's page in Airflow's UI (``doc_md``).
"""

from __future__ import annotations

import ast

from tests.support.source_tree import python_files

MAX_LINES = 15
# longer still, to be cut to what and why: the list only shrinks (a file cut below the cap must
# leave it, so that it cannot grow back unseen)
LONG = {
    "app/curator/webapp.py",
    "app/demo/samplesite/routes.py",
    "crawler/credentials.py",
    "crawler/inflate.py",
    "crawler/jsextract.py",
    "crawler/leases.py",
    "crawler/manifests.py",
    "crawler/partitioned_run.py",
    "crawler/partitioning/control_relay.py",
    "crawler/partitioning/handoff.py",
    "crawler/rendering/archive.py",
    "crawler/rendering/behaviours/consent.py",
    "crawler/rendering/behaviours/sites.py",
    "crawler/rendering/chromium_user.py",
    "crawler/rendering/proxy.py",
    "crawler/rendering/qa_pass.py",
    "crawler/sitemaps.py",
    "harvest/continuous/run.py",
    "harvest/continuous/urlstate.py",
    "harvest/jobgen/fixed.py",
    "harvest/preload/__init__.py",
    "harvest/preload/sources.py",
    "harvest/preload/transfer.py",
    "harvest/selection/urlcheck.py",
    "harvestflow/contracts/jobdir.py",
    "harvestflow/contracts/jobspec.py",
    "harvestflow/formats/cdx.py",
    "harvestflow/formats/crawllog.py",
    "harvestflow/formats/postquery.py",
    "indexing/chain.py",
    "indexing/dedup_index.py",
    "indexing/dedup_merged.py",
    "indexing/delivery.py",
    "indexing/fulltext.py",
    "indexing/layout.py",
    "qa/crawllog_aggregate.py",
    "access/cdxaudit.py",
    "access/compact.py",
    "access/definition_index.py",
    "access/definitions.py",
    "access/jobviews.py",
    "access/pywbconfig.py",
    "access/readerquery.py",
    "access/resolver.py",
    "access/rules.py",
    "access/zipnum.py",
    "plugins/harvestflow_curator.py",
}


def _docstring_lines() -> dict[str, int]:
    found = {}
    for path, rel in python_files():
        if rel.startswith("dags/"):
            continue
        doc = ast.get_docstring(ast.parse(path.read_text()), clean=False)
        found[rel] = len(doc.strip().splitlines()) if doc else 0
    return found


def test_module_docstrings_stay_within_the_cap() -> None:
    lines = _docstring_lines()
    too_long = sorted(r for r, n in lines.items() if n > MAX_LINES and r not in LONG)
    assert too_long == [], f"module docstrings over {MAX_LINES} lines: what and why only"


def test_the_list_of_long_docstrings_only_shrinks() -> None:
    lines = _docstring_lines()
    fixed = sorted(r for r in LONG if lines.get(r, 0) <= MAX_LINES)
    assert fixed == [], "now within the cap (or gone): take them off LONG"
