"""The test tree's own rules: a test file's helpers and fixtures live in tests/support/ or a
conftest.py, never in another test file (importing one runs its tests' module twice and ties
two files together by names that look private); what several folders share lives in
tests/support/, never imported from another folder's conftest.py; a test file is named after
the module it tests.

``python -m tests.platform.test_test_tree`` lists the test files named after no module."""

from __future__ import annotations

import ast
from pathlib import Path

from harvestflow.settings import PROJECT_ROOT

TESTS = PROJECT_ROOT / "tests"


def _imported_test_modules(path: Path) -> list[str]:
    """The ``test_*`` modules ``path`` imports (absolute or relative, ``from x import test_y``
    included), and the conftest modules of other folders."""
    found = []
    own = ".".join(path.relative_to(PROJECT_ROOT).parent.parts)  # e.g. tests.harvest
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ("." * node.level) + (node.module or "")
            modules = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for module in modules:
            package, _, last = module.rpartition(".")
            if last == "conftest" and module.startswith("tests.") and package != own:
                found.append(f"{node.lineno}: {module}")  # another folder's conftest
            elif last.startswith("test_") and (
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


# tests/<folder>/ → the source folders whose modules its test files are named after
SOURCES = {
    "access": ("access",),
    "bench": ("bench",),
    "contracts": ("harvestflow/contracts",),
    "crawler": ("crawler",),
    "dags": ("dags",),
    "formats": ("harvestflow/formats",),
    "harvest": ("harvest",),
    "indexing": ("indexing",),
    "monitoring": ("harvestflow/monitoring",),
    "plugins": ("app/curator", "plugins"),
    "preservation": ("preservation",),
    "qa": ("qa",),
    "samplesite": ("app/demo/samplesite",),
    "search": ("search",),
}
# named after no one module, on purpose
EXEMPT_FOLDERS = {
    "platform": "rules over the whole tree, and the platform's own processes (services, up, "
    "workers, the wheel)",
    "faults": "faults injected into a whole running platform: end to end across the stages",
}
EXEMPT_FILES = {
    "tests/dags/test_dag_integrity.py": "the conventions of every DAG file",
    "tests/dags/test_failing_runs.py": "run states across the indexing and preservation DAGs",
    "tests/dags/test_run_state_rules.py": "the run-state rule of every DAG",
    "tests/dags/test_harvest_workflows.py": "the one-off and broad-crawl DAGs end to end",
}
# the commands of a package (in app/cli/) are tested beside it: tests/<package>/test_cli*.py
ALSO = ("cli",)


def _module_names(folders: tuple[str, ...]) -> set[str]:
    names = set(ALSO)
    for folder in folders:
        root = PROJECT_ROOT / folder
        names.add(root.name)
        for path in root.rglob("*"):
            if path.suffix in (".py", ".c") and path.stem != "__init__":
                names.add(path.stem)
            elif path.is_dir() and (path / "__init__.py").exists():
                names.add(path.name)
    return names


def unnamed_test_files() -> list[str]:
    """Test files whose name is ``test_<module>`` or ``test_<module>_<aspect>`` for no module
    (or subpackage) of their folder's package, outside the exemptions."""
    unnamed = []
    names = {folder: _module_names(sources) for folder, sources in SOURCES.items()}
    for path in sorted(TESTS.rglob("test_*.py")):
        rel = path.relative_to(PROJECT_ROOT).as_posix()
        folder = path.relative_to(TESTS).parts[0]
        if folder in EXEMPT_FOLDERS or rel in EXEMPT_FILES:
            continue
        stem = path.stem.removeprefix("test_")
        known = names.get(folder, set())
        if stem not in known and not any(stem.startswith(m + "_") for m in known):
            unnamed.append(rel)
    return unnamed


def test_test_files_are_named_after_a_module_of_their_package() -> None:
    """``tests/<package>/test_<module>.py`` (``test_<module>_<aspect>.py`` when a module's
    tests take several files): a reader finds a module's tests by its name."""
    unnamed = unnamed_test_files()
    assert unnamed == [], "rename after the module they test:\n" + "\n".join(unnamed)


def test_the_exempt_test_files_exist() -> None:
    assert [f for f in EXEMPT_FILES if not (PROJECT_ROOT / f).exists()] == []


def _files_using(fixture: str) -> set[str]:
    """The test files with a function taking ``fixture`` (a test, or a fixture built on it)."""
    found = set()
    for path in TESTS.rglob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef) and fixture in {a.arg for a in node.args.args}:
                found.add(str(path.relative_to(PROJECT_ROOT)))
    return found


def test_every_file_on_a_session_platform_is_in_its_worker_group() -> None:
    """The files that use ``shared_up`` or ``demo_platform`` are sent to one pytest-xdist
    worker (tests/conftest.py), so the platform is built once per run: a file using one and
    missing from its list would build a second one in the other worker."""
    from tests.support.demo_fixture import DEMO_PLATFORM_FILES
    from tests.support.platform_up import SHARED_UP_FILES

    assert _files_using("shared_up") == set(SHARED_UP_FILES)
    assert _files_using("demo_platform") == set(DEMO_PLATFORM_FILES)


if __name__ == "__main__":
    print("\n".join(unnamed_test_files()))


def test_a_suite_started_in_the_background_starts_its_children_with_sigint_at_the_default() -> None:
    """Started with SIGINT ignored (a shell's ``&``, a CI runner), the suite must not pass that on
    to the `harvestflow up` it stops with SIGINT (each stop waited out its timeout)."""
    import subprocess
    import sys

    probe = (
        "import signal, subprocess, sys\n"
        "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "if sys.argv[1] == 'fixed':\n"
        "    from tests.support.environment import interrupt_as_from_a_terminal\n"
        "    interrupt_as_from_a_terminal()\n"
        "child = 'import signal; print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)'\n"
        "print(subprocess.run([sys.executable, '-c', child], capture_output=True, text=True,"
        " check=True).stdout.strip())\n"
    )
    run = [sys.executable, "-c", probe]
    ignored = {
        arg: subprocess.run(
            [*run, arg], capture_output=True, text=True, check=True, cwd=PROJECT_ROOT
        ).stdout.strip()
        for arg in ("as-inherited", "fixed")
    }
    assert ignored == {"as-inherited": "True", "fixed": "False"}
