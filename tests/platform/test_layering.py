"""The import layering (pyproject.toml ``[tool.importlinter]``) holds, and a broken rule fails.

Core (the ``harvestflow`` package) <- stage libraries (crawler < harvest < search < indexing <
qa | preservation < access) <- ``app`` (CLI, demo, curator pages, runtime): each layer a folder;
no module cycles inside a package; no library imports Airflow. Checked by import-linter's own
``lint-imports``, as pre-commit runs it. The second test copies the packages, adds one bad
import per rule and expects ``lint-imports`` to name the broken contract: the check can fail.
Beyond the contracts (whose cycle rule compares the siblings of a package), no module of the
whole graph imports itself through others, counting the imports under ``TYPE_CHECKING`` and
those inside functions.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harvestflow.settings import PROJECT_ROOT

PACKAGES = (
    "app",
    "harvestflow",
    "harvest",
    "crawler",
    "indexing",
    "preservation",
    "qa",
    "access",
    "search",
)
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` on the packages under ``root`` with ``root``'s pyproject.toml."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


CYCLES = """
import sys
import grimp

graph = grimp.build_graph(*sys.argv[1:], exclude_type_checking_imports=False, cache_dir=None)
index, low, stack, on_stack, order = {}, {}, [], set(), [0]
sys.setrecursionlimit(100_000)


def visit(module):
    index[module] = low[module] = order[0]
    order[0] += 1
    stack.append(module)
    on_stack.add(module)
    for imported in graph.find_modules_directly_imported_by(module):
        if imported not in index:
            visit(imported)
            low[module] = min(low[module], low[imported])
        elif imported in on_stack:
            low[module] = min(low[module], index[imported])
    if low[module] == index[module]:
        component = []
        while True:
            member = stack.pop()
            on_stack.discard(member)
            component.append(member)
            if member == module:
                break
        if len(component) > 1:
            print(" ".join(sorted(component)))


for module in sorted(graph.modules):
    if module not in index:
        visit(module)
"""


def import_cycles(root: Path) -> list[str]:
    """The cycles of the packages' import graph under ``root``, one line of modules each
    (strongly connected components of grimp's graph, as import-linter builds it)."""
    done = subprocess.run(
        [sys.executable, "-c", CYCLES, *PACKAGES],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.splitlines()


def test_the_import_graph_has_no_cycle() -> None:
    assert import_cycles(PROJECT_ROOT) == []


def test_the_layering_contracts_hold() -> None:
    done = lint_imports(PROJECT_ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout, done.stdout


@pytest.fixture(scope="module")
def tree_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Python files of the packages and the pyproject.toml, in a directory of their own."""
    root = tmp_path_factory.mktemp("layering")
    for name in PACKAGES:
        shutil.copytree(
            PROJECT_ROOT / name,
            root / name,
            ignore=lambda d, names: [
                n for n in names if not n.endswith(".py") and not (Path(d) / n).is_dir()
            ],
        )
    shutil.copy(PROJECT_ROOT / "pyproject.toml", root / "pyproject.toml")
    return root


BAD_IMPORTS = [
    # (module that gets the import, the import, the contract that must break, its message)
    ("crawler/scope.py", "import app.cli.main", "core <- stage libraries", "crawler is not allowed to import app"),
    ("qa/hosts.py", "import app.curator.webapp", "core <- stage libraries", "qa is not allowed to import app"),
    ("harvest/jobs.py", "import indexing.manifest", "core <- stage libraries", "harvest is not allowed to import indexing"),
    ("harvestflow/db.py", "import harvest.jobs", "core <- stage libraries", "harvestflow is not allowed to import harvest"),
    ("harvestflow/s3.py", "import app.runtime.up", "core <- stage libraries", "harvestflow is not allowed to import app"),
    ("preservation/records.py", "import airflow.sdk", "no library imports Airflow", "preservation.records -> airflow"),
    ("access/zipnum.py", "import pywb.utils.binsearch", "no library imports pywb", "access.zipnum -> pywb"),
    ("indexing/cdx.py", "from surt import surt", "no library imports pywb", "indexing.cdx -> surt"),
    ("qa/crawltable.py", "import qa.daily", "no import cycles", "No cycles are allowed in qa"),
    ("qa/hosts.py", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import qa.daily", "no import cycles", "No cycles are allowed in qa"),
]  # fmt: skip


@pytest.mark.parametrize(("target", "statement", "contract", "message"), BAD_IMPORTS)
def test_a_bad_import_breaks_its_contract(
    tree_copy: Path, target: str, statement: str, contract: str, message: str
) -> None:
    path = tree_copy / target
    original = path.read_text(encoding="utf-8")
    try:
        path.write_text(original + f"\n{statement}  # added by the test\n", encoding="utf-8")
        done = lint_imports(tree_copy)
    finally:
        path.write_text(original, encoding="utf-8")
    assert done.returncode == 1, done.stdout + done.stderr
    # a contract's status line: "NAME BROKEN", or "NAME BROKEN (1 ignored import)"
    status = re.compile(r" BROKEN( \(\d+ ignored imports?\))?$")
    broken = [line for line in done.stdout.splitlines() if status.search(line)]
    assert len(broken) == 1 and broken[0].startswith(contract), done.stdout
    assert message in done.stdout, done.stdout


@pytest.mark.parametrize(
    "statement",
    [
        "def _later() -> None:\n    from crawler.runner import run_job  # noqa: F401",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import crawler.runner",
    ],
    ids=["in-a-function", "type-checking"],
)
def test_a_hidden_import_cycle_is_found(tree_copy: Path, statement: str) -> None:
    """The crawler package importing its runner back (which imports the package's error) is
    a cycle, whether the import waits in a function or only serves type checking."""
    path = tree_copy / "crawler" / "__init__.py"
    original = path.read_text(encoding="utf-8")
    try:
        path.write_text(original + f"\n{statement}\n", encoding="utf-8")
        found = import_cycles(tree_copy)
    finally:
        path.write_text(original, encoding="utf-8")
    assert len(found) == 1 and {"crawler", "crawler.runner"} <= set(found[0].split()), found
