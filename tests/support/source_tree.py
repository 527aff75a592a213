"""The platform's source tree as the code-scanning tests read it: one package list, one walk.

Why: the tests that scan the source (atomic writes, S3 clients, module names, duplicate code,
table ownership, bare vocabulary literals) must look at the same tree; a package added to the
platform is added here once.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from harvestflow.settings import PROJECT_ROOT

PLATFORM_PACKAGES = (
    "app",
    "crawler",
    "harvest",
    "harvestflow",
    "indexing",
    "preservation",
    "qa",
    "access",
    "search",
    "dags",
    "plugins",
)


def python_files(
    packages: tuple[str, ...] = PLATFORM_PACKAGES, root: Path = PROJECT_ROOT
) -> Iterator[tuple[Path, str]]:
    """(path, its posix path relative to ``root``) of every ``.py`` file, package by package."""
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            yield path, path.relative_to(root).as_posix()
