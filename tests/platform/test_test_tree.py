"""The test tree's own rules: a test file's helpers and fixtures live in tests/support/ or a
conftest.py, never in another test file (importing one runs its tests' module twice and ties
two files together by names that look private)."""

from __future__ import annotations

import ast
from pathlib import Path

from harvestflow.settings import PROJECT_ROOT

TESTS = PROJECT_ROOT / "tests"


def _imported_test_modules(path: Path) -> list[str]:
    """The ``test_*`` modules ``path`` imports (absolute or relative, ``from x import test_y``
    included)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ("." * node.level) + (node.module or "")
            modules = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for module in modules:
            if module.rsplit(".", 1)[-1].startswith("test_") and (
                module.startswith("tests.") or module.startswith(".")
            ):
                found.append(f"{node.lineno}: {module}")
    return found


def test_no_test_file_imports_from_another_test_file() -> None:
    offenders = [
        f"{path.relative_to(PROJECT_ROOT)}:{line}"
        for path in sorted(TESTS.rglob("*.py"))
        for line in _imported_test_modules(path)
    ]
    assert offenders == [], "move shared helpers to tests/support/ or a conftest.py"
