"""Module names that say what the module is: none shadows the standard library (``import
inspect`` run from inside ``harvest/`` found ours), and the names the restructuring made
unique (three ``crawllog.py``, two ``capture.py``, three ``dedup.py``, two ``retry.py``) stay so."""

from __future__ import annotations

import sys
from collections import defaultdict

from tests.support.source_tree import python_files

UNIQUE = ("crawllog", "capture", "dedup", "retry", "inspect", "queue")


def _modules() -> dict[str, list[str]]:
    found: dict[str, list[str]] = defaultdict(list)
    for path, rel in python_files():
        found[path.stem].append(rel)
    return found


def test_no_module_shadows_the_standard_library() -> None:
    shadows = [
        p for name, paths in _modules().items() if name in sys.stdlib_module_names for p in paths
    ]
    assert not shadows, f"modules named like the standard library's: {shadows}"


def test_the_names_made_unique_stay_unique() -> None:
    modules = _modules()
    repeated = {name: modules[name] for name in UNIQUE if len(modules.get(name, [])) > 1}
    assert not repeated, f"one module name, several modules: {repeated}"
