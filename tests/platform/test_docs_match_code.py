"""The documentation matches the code: no reference to a document the repository does not
hold, a manual whose source layout names every package, and local links that lead somewhere.

Why a test: a docstring saying "see ARCHITECTURE §4" or "(issue 5)" sends a reader taking the
code over to a text they do not have; a package missing from the manual's layout page is a package
nobody finds. These drift one commit at a time, so they are checked on every run.
"""

from __future__ import annotations

import re
from pathlib import Path

from harvestflow.settings import PROJECT_ROOT
from tests.support.docs_reference import reference_generator

ROOT = PROJECT_ROOT
SKIP_DIRS = {
    ".git",
    ".venv",
    ".oracle-venv",
    ".replay-venv",
    "var",
    "build",
    "dist",
    "__pycache__",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
}
TEXT_SUFFIXES = {".py", ".md", ".toml", ".sh", ".c", ".sql", ".html", ".cfg", ".yaml", ".yml"}
# documents of the team's process, not of the repository
ELSEWHERE = re.compile(
    r"\bissues? ?#?\d+|\(#\d+\)|\bthe brief\b|\bthe lead's\b"
    r"|(?-i:\bARCHITECTURE(?:\.md)?\b|\bREFERENCE(?:\.md)? ?§|\bREFERENCE\.md)",
    re.IGNORECASE,
)
# applied migrations are checksummed by harvestflow.db: editing a comment in one would make
# every existing database refuse it, so their first lines keep the wording they shipped with
FROZEN = {
    "sql/009_continuous_crawl.sql",
    "sql/011_continuous_validators.sql",
    "sql/017_fulltext.sql",
}


def _text_files() -> list[Path]:
    found = [ROOT / "run"]
    stack = [ROOT]
    while stack:
        folder = stack.pop()
        for path in folder.iterdir():
            if path.is_dir():
                if path.name not in SKIP_DIRS and not path.name.endswith(".egg-info"):
                    stack.append(path)
            elif path.suffix in TEXT_SUFFIXES:
                found.append(path)
    return sorted(found)


def test_no_reference_to_documents_outside_the_repository() -> None:
    me = Path(__file__).resolve()
    hits = []
    for path in _text_files():
        rel = path.relative_to(ROOT).as_posix()
        if path.resolve() == me or rel in FROZEN:
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            match = ELSEWHERE.search(line)
            if match:
                hits.append(f"{rel}:{number}: {match.group(0)!r}")
    assert hits == []


def _layout_block() -> str:
    """The tree of the manual's source layout page (its first code block)."""
    page = (ROOT / "docs" / "explanation" / "layout.md").read_text()
    return page.split("```", 2)[1]


def test_the_manuals_layout_names_every_package() -> None:
    layout = _layout_block()
    top_level = {line.split()[0] for line in layout.splitlines() if line and not line[0].isspace()}
    nested = set(re.findall(r"^\s+([\w]+/)", layout, re.M))
    missing = []
    for init in sorted(ROOT.glob("*/**/__init__.py")):
        package = init.parent.relative_to(ROOT)
        if package.parts[0] in ("tests", "bench") or any(p in SKIP_DIRS for p in package.parts):
            continue
        if len(package.parts) == 1:
            if f"{package}/" not in top_level:
                missing.append(str(package))
        elif f"{package.parts[-1]}/" not in nested:
            missing.append(str(package))
    assert missing == []


# the manual's pages written at build time by docs/gen_reference.py (never files of docs/)
GENERATED = set(reference_generator().PAGES)


def test_local_links_of_the_readme_and_docs_lead_to_files() -> None:
    docs = ROOT / "docs"
    broken = []
    for doc in [ROOT / "README.md", *sorted(docs.rglob("*.md"))]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", doc.read_text()):
            if "://" in target:
                continue
            path = (doc.parent / target).resolve()
            if path.is_relative_to(docs) and path.relative_to(docs).as_posix() in GENERATED:
                continue
            if not path.exists():
                broken.append(f"{doc.relative_to(ROOT)}: {target}")
    assert broken == []
