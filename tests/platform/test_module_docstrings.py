"""Module docstrings say what a module is and why, in a few lines: the detail belongs to the
code it describes (a class, a function) or to the manual, where it is kept true.

DAG files are left out: their docstring is the DAG's page in Airflow's UI (``doc_md``).
"""

from __future__ import annotations

import ast

from tests.support.source_tree import python_files

MAX_LINES = 15


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
    too_long = sorted(r for r, n in lines.items() if n > MAX_LINES)
    assert too_long == [], f"module docstrings over {MAX_LINES} lines: what and why only"
