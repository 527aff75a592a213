"""The CLI's one naming rule: each top-level command ``harvestflow X`` lives in ``app/cli/X.py``
(hyphens as underscores), which builds X and every subcommand under it; no module adds
subcommands to another's command, and every public module of app/cli is such a command (main.py
builds the parser and adds none). Checked on the parser main builds, recording which module
created each (sub)parser."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from app.cli import main as cli_main
from harvestflow.settings import PROJECT_ROOT

CLI_DIR = PROJECT_ROOT / "app" / "cli"


@pytest.fixture(scope="module")
def built() -> tuple[argparse.ArgumentParser, dict[int, str]]:
    """The harvestflow parser and, per parser id, the module whose code created it."""
    creators: dict[int, str] = {}
    original = argparse._SubParsersAction.add_parser

    def recording(self: argparse._SubParsersAction, name: str, **kwargs: Any) -> Any:
        parser = original(self, name, **kwargs)
        creators[id(parser)] = sys._getframe(1).f_globals["__name__"]
        return parser

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(argparse._SubParsersAction, "add_parser", recording)
        parser = cli_main.build_parser()
    return parser, creators


def _children(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.items()


def _subtree(parser: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, Any]]:
    for name, child in _children(parser):
        yield f"{path} {name}", child
        yield from _subtree(child, f"{path} {name}")


def test_each_top_level_command_and_its_subcommands_are_built_by_its_own_module(built) -> None:
    parser, creators = built
    misplaced = []
    commands = dict(_children(parser))
    assert commands, "the parser has no commands"
    for command, sub in commands.items():
        owner = "app.cli." + command.replace("-", "_")
        if creators[id(sub)] != owner:
            misplaced.append(f"harvestflow {command}: added by {creators[id(sub)]}, not {owner}")
        for path, child in _subtree(sub, f"harvestflow {command}"):
            if creators[id(child)] != owner:
                misplaced.append(f"{path}: added by {creators[id(child)]}, not {owner}")
    assert not misplaced, "\n".join(misplaced)


def test_every_public_cli_module_is_a_command_that_main_registers(built) -> None:
    parser, _ = built
    commands = {name.replace("-", "_") for name, _ in _children(parser)}
    modules = {
        path.stem
        for path in CLI_DIR.glob("*.py")
        if not path.stem.startswith("_") and path.stem != "main"
    }
    assert modules == commands, (
        f"modules that are no command: {sorted(modules - commands)};"
        f" commands without a module: {sorted(commands - modules)}"
    )
    registered = {module.__name__.rsplit(".", 1)[1] for module in cli_main.COMMAND_MODULES}
    assert registered == commands


def test_building_the_parser_imports_no_database_search_or_crawl_stack() -> None:
    """Every harvestflow command (``--help`` too) builds the whole parser first: the commands'
    implementations are imported when they run, so building it loads none of SQLAlchemy, the
    search backends, Scrapy or Airflow."""
    import json
    import subprocess

    code = (
        "import json, sys; from app.cli.main import build_parser; build_parser();"
        " print(json.dumps(sorted(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    loaded = set(json.loads(out.stdout.splitlines()[-1]))
    assert "app.cli.documents" in loaded and "app.cli.search" in loaded  # the check ran
    heavy = {"sqlalchemy", "search.backends", "indexing.fulltext", "scrapy", "airflow"}
    assert not heavy & loaded, sorted(heavy & loaded)
