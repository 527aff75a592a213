"""Private Scrapy, Twisted and warcio parts are used in crawler/internals.py only.

Why: each private part is a place a library upgrade can break the crawler without notice.
Kept in one module, each with the reason no public API does, an upgrade is checked in one
place (and the versions it was checked with are pinned: test_internals_versions.py). This reads the
source: in the crawler, an import of a private module or name, an import from
``scrapy.core``, or an attribute with a leading underscore read off anything but
``self``/``cls``; in the other packages, the imports. Each is named with its file and line.
"""

from __future__ import annotations

import ast
from pathlib import Path

import crawler

PACKAGE = Path(crawler.__file__).parent
ROOT = PACKAGE.parent
# the other packages that may use these libraries (warcio: indexing, harvest, curator pages)
OTHERS = ("harvestflow", "harvest", "indexing", "qa", "preservation", "access", "search")
LIBRARIES = ("scrapy", "twisted", "warcio")
ALLOWED_MODULE = "internals.py"
# underscore names that are public by convention (namedtuple methods, os._exit)
PUBLIC_UNDERSCORE = {"_replace", "_asdict", "_fields", "_exit"}


def _private_module(module: str) -> bool:
    parts = module.split(".")
    return parts[0] in LIBRARIES and (
        module.startswith("scrapy.core") or any(p.startswith("_") for p in parts)
    )


def _findings(path: Path, attributes: bool = True) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    where = path.relative_to(ROOT)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if _private_module(node.module):
                found.append(f"{where}:{node.lineno}: from {node.module} import …")
            elif node.module.split(".")[0] in LIBRARIES:
                for alias in node.names:
                    if alias.name.startswith("_"):
                        found.append(f"{where}:{node.lineno}: {node.module}.{alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _private_module(alias.name):
                    found.append(f"{where}:{node.lineno}: import {alias.name}")
        elif attributes and isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            if node.attr.startswith("__") or node.attr in PUBLIC_UNDERSCORE:
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            found.append(f"{where}:{node.lineno}: ….{node.attr}")
    return found


def test_private_library_parts_are_used_in_internals_only() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name != ALLOWED_MODULE:
            found += _findings(path)
    for package in OTHERS:
        for path in sorted((ROOT / package).rglob("*.py")):
            found += _findings(path, attributes=False)
    assert found == []


def test_internals_names_the_reason_for_each_private_import() -> None:
    """Every private import in internals.py sits under a comment (the why)."""
    path = PACKAGE / ALLOWED_MODULE
    lines = path.read_text(encoding="utf-8").splitlines()
    for node in ast.walk(ast.parse("\n".join(lines))):
        if isinstance(node, ast.ImportFrom) and node.module and _private_module(node.module):
            above = lines[node.lineno - 2].strip()
            assert above.startswith("#"), f"{path.name}:{node.lineno}: no comment above"
