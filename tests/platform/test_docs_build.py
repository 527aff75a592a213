"""The manual builds with warnings as errors, a broken link fails it, and its generated
reference pages list every command, option, setting and DAG Param the code has.

Why: the manual is the platform's front door for curators and engineers; a page that links
nowhere, or a reference that misses the option a reader looks for, fails them silently. The
reference pages are generated from the code at build time (docs/gen_reference.py); these tests
compare what they say with the parser, the settings file and the DAG files themselves, each
walked here independently of the generator.
"""

from __future__ import annotations

import argparse
import html
import logging
import re
import shutil
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from app.cli.main import build_parser
from harvestflow.settings import PROJECT_ROOT
from tests.support.docs_reference import reference_generator

ROOT = PROJECT_ROOT


@dataclass
class Build:
    returncode: int
    log: str  # what `mkdocs build` prints: its log lines ("WARNING -  ..."), then its abort


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.levelname} -  {record.getMessage()}")


def _build(config: Path, site: Path) -> Build:
    """``mkdocs build --strict -f config -d site``: MkDocs's own command, run in this process.

    Why not a child process: half of a build is the reference pages' import of Airflow and the
    DAG files (docs/gen_reference.py, ~4 CPU-s); here it is paid once for the file's two builds
    and its DAG test. What the command prints goes through the ``mkdocs`` logger (its hooks'
    loggers are under it), read here; ``--strict`` fails the build on any warning as before."""
    import click
    from mkdocs.__main__ import cli

    lines = _Lines()
    logger = logging.getLogger("mkdocs")
    logger.addHandler(lines)
    try:
        cli.main(["build", "--strict", "-f", str(config), "-d", str(site)], standalone_mode=False)
        returncode = 0
    except click.ClickException as exc:  # mkdocs's Abort: "Aborted with 1 warnings in ..."
        lines.lines.append(f"Error: {exc.format_message()}")
        returncode = exc.exit_code
    finally:
        logger.removeHandler(lines)
    return Build(returncode, "\n".join(lines.lines))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    build = _build(ROOT / "mkdocs.yml", out)
    assert build.returncode == 0, build.log[-5000:]
    assert "WARNING" not in build.log, build.log[-5000:]
    assert "Documentation built" in build.log, build.log[-5000:]  # its log was read
    return out


def test_the_manual_builds_with_warnings_as_errors(site: Path) -> None:
    for page in ("index.html", "tutorials/first-selective-harvest/index.html"):
        assert (site / page).is_file(), page
    for page in ("cli", "settings", "dags"):
        assert (site / "reference" / page / "index.html").is_file(), page
    # the generated pages are built, never kept in docs/ where they could go stale
    assert not (ROOT / "docs" / "reference").exists()


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    page = tmp_path / "docs" / "engineers" / "backups.md"
    page.write_text(page.read_text() + "\nSee [the old page](../engineers/restore.md).\n")
    build = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert build.returncode != 0
    assert "restore.md" in build.log


# --- the command line ------------------------------------------------------------------------


def _commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, (*path, name))


def _sections(markdown: str, heading: str, nested: bool = False) -> dict[str, str]:
    """{name: body} of the page's headings matching ``heading`` (its group 1 is the name); a
    body runs to the next heading, or with ``nested`` to the next one of its level or above."""
    headings = [(len(m.group(1)), m) for m in re.finditer(r"(?m)^(#+) .*$", markdown)]
    found = {}
    for number, (level, match) in enumerate(headings):
        named = re.match(rf"#+ {heading}", match.group(0))
        if not named:
            continue
        later = [m for lv, m in headings[number + 1 :] if not nested or lv <= level]
        end = later[0].start() if later else len(markdown)
        found[named.group(1).strip()] = markdown[match.end() : end]
    return found


def test_the_cli_reference_lists_every_command_and_option() -> None:
    page = reference_generator().cli_markdown()
    sections = _sections(page, r"(harvestflow(?: [\w-]+)*)")
    missing = []
    for path, parser in _commands(build_parser()):
        name = " ".join(("harvestflow", *path))
        if name not in sections:
            missing.append(name)
            continue
        body = sections[name]
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                continue
            for option in action.option_strings or [action.metavar or action.dest]:
                if f"`{option}`" not in body:
                    missing.append(f"{name} {option}")
            for choice in action.choices or []:
                if f"`{choice}`" not in body:
                    missing.append(f"{name} {action.dest}={choice}")
    assert missing == []


def test_the_built_cli_page_has_every_command(site: Path) -> None:
    built = html.unescape((site / "reference" / "cli" / "index.html").read_text())
    for path, _parser in _commands(build_parser()):
        anchor = "-".join(("harvestflow", *path)).replace("_", "-")
        assert f'id="{anchor}"' in built, anchor


# --- the settings ----------------------------------------------------------------------------


def _tables(data: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    for key, value in data.items():
        if isinstance(value, dict):
            name = f"{prefix}{key}"
            yield name, value
            yield from _tables(value, f"{name}.")


def test_the_settings_reference_lists_every_setting_with_its_default_and_comment() -> None:
    text = (ROOT / "config" / "harvestflow.toml").read_text()
    page = reference_generator().settings_markdown()
    sections = _sections(page, r"\[([\w.]+)\]")
    problems = []
    for name, table in _tables(tomllib.loads(text)):
        if name not in sections:
            problems.append(f"[{name}] missing")
            continue
        rows = {
            m.group(1): m.group(2)
            for m in re.finditer(r"(?m)^\| `([\w-]+)` \| `(.*?)` \|", sections[name])
        }
        for key, value in table.items():
            if isinstance(value, dict):
                continue
            if key not in rows:
                problems.append(f"[{name}] {key} missing")
            elif tomllib.loads(f"v = {rows[key]}")["v"] != value:
                problems.append(f"[{name}] {key}: {rows[key]} is not the file's {value!r}")
    # every comment of the file is on the page (where it says what a key is for)
    flat_page = " ".join(html.unescape(page).split())
    for line in text.splitlines():
        comment = line.strip().lstrip("#").strip()
        if line.strip().startswith("#") and comment and " ".join(comment.split()) not in flat_page:
            problems.append(f"comment not shown: {comment}")
    assert problems == []


# --- the DAGs --------------------------------------------------------------------------------


def test_the_dag_reference_lists_every_dag_with_its_params_and_docs() -> None:
    gen = reference_generator()
    page = gen.dags_markdown()
    sections = _sections(page, r"(\w+) \{", nested=True)
    ignored = set((ROOT / "dags" / ".airflowignore").read_text().split())
    files = sorted(p for p in (ROOT / "dags").glob("*.py") if p.name not in ignored)
    assert files
    problems = []
    for dag in gen.load_dags():
        if dag.dag_id not in sections:
            problems.append(f"{dag.dag_id} missing")
            continue
        body = sections[dag.dag_id]
        for param in dag.params:
            if f"| `{param}` |" not in body:
                problems.append(f"{dag.dag_id}: Param {param} missing")
        first_line = (dag.doc_md or "").strip().splitlines()[0].lstrip("# ")
        if first_line not in body:
            problems.append(f"{dag.dag_id}: doc_md missing")
    assert problems == []
    assert {p.stem for p in files} <= set(sections)
