"""Each stage owns its tables: no other package writes SQL against them, it calls the owner.

Scans the SQL text of every module (string literals, docstrings left out) for ``FROM``,
``JOIN``, ``INTO`` and ``UPDATE`` of the tables that sql/*.sql creates, and fails on a table
named outside its owner (the curator pages too: they read through each stage's views, e.g.
harvest/views.py, qa/views.py). The exceptions left are
listed below with why each is still there (none at the moment).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from harvestflow.settings import PROJECT_ROOT
from tests.support.source_tree import python_files

HARVEST_TABLES = [
    "templates",
    "domains",
    "seedlists",
    "configurations",
    "config_seedlists",
    "schedules",
    "harvestchannel",
    "harvestdefinitions",
    "partialharvests",
    "fullharvests",
    "harvest_configs",
    "jobs",
    "job_configs",
    "job_reports",
    "historyinfo",
    "global_crawler_trap_lists",
    "global_crawler_trap_expressions",
    "selection_records",
    "preload_runs",
    "preload_sources",
    "domain_origins",
    "dns_checks",
    "redirect_checks",
    "harvest_runs",
    "preload_seeds",
    "continuous_seeds",
    "continuous_launches",
    "continuous_url_state",
    "continuous_noise_rules",
    "continuous_host_policy",
    "continuous_runs",
    "target_annotations",
    "job_qa_comments",
]
OWNERS = {
    **dict.fromkeys(HARVEST_TABLES, "harvest"),
    "index_manifest": "indexing",
    **dict.fromkeys(
        ["arks", "preservation_packages", "preservation_files", "preservation_events", "preservation_stats",
         "preservation_copies", "preservation_audits"], "preservation"
    ),
    "qa_stats": "qa",
    "qa_reports": "qa",
    **dict.fromkeys(["fulltext_docs", "fulltext_captures", "fulltext_files"], "search"),
    **dict.fromkeys(["access_rules", "access_tours", "access_tour_sites"], "access"),
    **dict.fromkeys(["access_missing_urls", "access_patches"], "access"),
    **dict.fromkeys(["access_curated", "access_curated_captures"], "access.curated"),
    "host_leases": "crawler",
    "job_leases": "crawler",
    "host_lease_waiters": "crawler",
    "credentials": "harvestflow.credentials",
    "job_actions": "harvestflow.job_actions",
    "audit_log": "harvestflow.audit",
    "selection_history": "harvest",
    "definition_history": "harvest",
    "collection_roles": "harvest.rights",
    "saved_searches": "harvest.selection.saved_searches",
    **dict.fromkeys(["documents", "document_captures", "document_pages", "document_links",
                     "document_files", "document_versions"], "indexing.documents"),
}  # fmt: skip

# (module, table): what is still there, and why (none left: the ARC-repository clean-up is
# handed preservation.records.file_preserved by the DAG and the CLI)
KNOWN: set[tuple[str, str]] = set()

TABLE_RE = re.compile(r"\b(?:FROM|JOIN|INTO|UPDATE)\s+([a-z_][a-z0-9_]*)\b")


def created_tables() -> set[str]:
    names: set[str] = set()
    for sql in sorted((PROJECT_ROOT / "sql").glob("*.sql")):
        text = sql.read_text(encoding="utf-8")
        names |= set(re.findall(r"CREATE TABLE (?:IF NOT EXISTS )?([a-z_]+)\s*\(", text))
    return names


def sql_strings(path: Path) -> list[str]:
    """The module's string literals that are not docstrings."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        and id(node) not in docstrings
    ]  # fmt: skip


def foreign_tables() -> set[tuple[str, str]]:
    tables = set(OWNERS)
    found: set[tuple[str, str]] = set()
    for path, rel in python_files():
        module = rel.removesuffix(".py").replace("/", ".").removesuffix(".__init__")
        for text in sql_strings(path):
            for table in TABLE_RE.findall(text):
                owner = OWNERS.get(table) if table in tables else None
                if owner and module != owner and not module.startswith(owner + "."):
                    found.add((module, table))
    return found


def test_every_table_has_an_owner() -> None:
    assert created_tables() - set(OWNERS) == set()


def test_no_package_writes_sql_on_another_stages_tables() -> None:
    found = foreign_tables()
    assert sorted(found - KNOWN) == []
    assert sorted(KNOWN - found) == []  # an exception fixed: take it off the list
