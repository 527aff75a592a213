"""Every third-party module the platform's packages import is provided by a distribution
declared directly in pyproject.toml's ``dependencies``.

Why directly, not through the dependency tree: what a dependency requires is its own choice and
changes with its releases (Airflow's api-server brings FastAPI and uvicorn today; Scrapy could
drop a library it no longer needs), and the version range our code needs is ours to state. A
module reached only through another distribution's requirements works until that distribution
is upgraded, which is how ``websockets`` (crawler/rendering/cdp.py) and ``brotli`` (crawler/inflate.py)
came to be used undeclared. The walk reads the import statements (``ast``, nothing imported);
imports under ``if TYPE_CHECKING:`` never run and are left out, as lint-imports leaves them out.
tests/platform/test_wheel_install.py then proves the declared list is enough: the wheel installed
with its dependencies into an empty virtualenv runs.
"""

from __future__ import annotations

import ast
import importlib.metadata as md
import sys
import tomllib
from collections.abc import Iterable, Iterator

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from harvestflow.settings import PROJECT_ROOT
from tests.support.source_tree import PLATFORM_PACKAGES

PLATFORM = PLATFORM_PACKAGES
# the data packages, and the modules Airflow imports from the dags and plugins folders
# (both folders are on Airflow's sys.path: hf_common, hf_harvest_tasks, ...)
FIRST_PARTY = (
    set(PLATFORM)
    | {"sql", "config"}
    | {p.stem for folder in ("dags", "plugins") for p in (PROJECT_ROOT / folder).glob("*.py")}
)


def declared() -> set[str]:
    project = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]
    return {canonicalize_name(Requirement(r).name) for r in project["dependencies"]}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported_modules(tree: ast.AST) -> Iterator[str]:
    """The absolute module names a module's import statements name, at any depth (imports
    inside functions run too), except under ``if TYPE_CHECKING:``."""
    yield from _imports_in(ast.iter_child_nodes(tree))


def _imports_in(nodes: Iterable[ast.AST]) -> Iterator[str]:
    for node in nodes:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _imports_in(node.orelse)
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module
        yield from _imports_in(ast.iter_child_nodes(node))


def third_party_imports() -> dict[str, set[str]]:
    """Imported module -> the platform files importing it, for modules neither ours nor stdlib."""
    found: dict[str, set[str]] = {}
    for package in PLATFORM:
        for path in sorted((PROJECT_ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            for module in imported_modules(tree):
                top = module.split(".")[0]
                if top in FIRST_PARTY or top in sys.stdlib_module_names:
                    continue
                found.setdefault(module, set()).add(str(path.relative_to(PROJECT_ROOT)))
    return found


def providers(module: str, index: dict[str, list[str]]) -> set[str]:
    """The installed distributions providing ``module``.

    A top-level name several distributions share (the ``airflow`` namespace: core, task SDK,
    providers; ``backports``) is narrowed to the ones holding the module's own files, trying
    ``a.b.c``, then ``a.b``, then ``a`` (``from a.b import c`` may name a function c)."""
    parts = module.split(".")
    candidates = index.get(parts[0], [])
    if len(candidates) <= 1:
        return {canonicalize_name(d) for d in candidates}
    for depth in range(len(parts), 1, -1):
        stem = "/".join(parts[:depth])
        holding = set()
        for name in candidates:
            files = md.distribution(name).files or []
            if any(str(f).startswith(stem + "/") or str(f).startswith(stem + ".") for f in files):
                holding.add(canonicalize_name(name))
        if holding:
            return holding
    return {canonicalize_name(d) for d in candidates}


def test_the_walk_finds_the_imports_that_run_and_not_the_type_only_ones() -> None:
    tree = ast.parse(
        "import a.b\nfrom c.d import e\nfrom . import f\nfrom .g import h\n"
        "def run():\n    import lazy\n"
        "if TYPE_CHECKING:\n    import typing_only\nelse:\n    import at_runtime\n"
        "if typing.TYPE_CHECKING:\n    import typing_only_too\n"
    )
    assert sorted(imported_modules(tree)) == ["a.b", "at_runtime", "c.d", "lazy"]


def test_the_walk_maps_a_shared_namespace_to_the_distribution_holding_the_module() -> None:
    index = md.packages_distributions()
    assert providers("airflow.sdk", index) == {"apache-airflow-task-sdk"}
    assert providers("airflow.plugins_manager", index) == {"apache-airflow-core"}
    assert providers("websockets", index) == {"websockets"}


def test_every_third_party_import_is_a_declared_dependency() -> None:
    index = md.packages_distributions()
    wanted = declared()
    found = third_party_imports()
    # the walk sees the platform's imports (an empty walk would pass anything)
    assert {"scrapy", "sqlalchemy", "airflow.sdk", "websockets"} <= set(found)
    undeclared: dict[str, set[str]] = {}  # distribution (or module) -> files importing it
    for module, files in sorted(found.items()):
        provided_by = providers(module, index)
        if not provided_by & wanted:
            for name in sorted(provided_by) or [f"{module} (not installed)"]:
                undeclared.setdefault(name, set()).update(files)
    assert undeclared == {}, (
        "imported by the platform but not declared in pyproject.toml [project] dependencies: "
        + "; ".join(f"{d} (by {', '.join(sorted(f)[:3])})" for d, f in undeclared.items())
    )
