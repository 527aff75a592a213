"""The manual's reference pages, written from the code at every build (an MkDocs hook).

Why generated: a table of commands, settings or DAG parameters copied by hand is right on the
day it is written and wrong a few commits later. These pages are made from what runs: the
``harvestflow`` argparse parser (``app.cli.main.build_parser``, which mounts every stage's
commands), ``config/harvestflow.toml`` (every default, with its comment) and the DAG files of
``dags/`` (their Params and ``doc_md``). They exist only in the built site, never in ``docs/``,
so there is nothing to forget to regenerate.

``mkdocs.yml`` names this file under ``hooks``; MkDocs calls :func:`on_files`, which adds the
pages as generated files. ``python docs/gen_reference.py OUT_DIR`` writes them to a folder,
to read them without building the site.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import os
import re
import sys
import tempfile
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def _project_root() -> Path:
    """The checkout or installation whose code the pages describe (not this file's folder: a
    copy of docs/ built elsewhere still documents the installed platform)."""
    from harvestflow.settings import PROJECT_ROOT

    return PROJECT_ROOT


ROOT = _project_root()
SETTINGS_FILE = ROOT / "config" / "harvestflow.toml"
DAGS_DIR = ROOT / "dags"
ENV_PREFIX = "HARVESTFLOW_"

log = logging.getLogger("mkdocs.hooks.gen_reference")


def _text(text: str) -> str:
    """Plain text (a comment, a help string) for Markdown: ``<data_dir>`` stays visible instead
    of being taken for an HTML tag."""
    return text.replace("&", "&amp;").replace("<", "&lt;")


def _cell(text: str) -> str:
    """Text for one Markdown table cell: one line, pipes escaped."""
    return _text(" ".join(text.split())).replace("|", "\\|")


def _code(text: str) -> str:
    """Inline code that survives backticks inside (Markdown's longer-fence rule)."""
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


# --- the command line ------------------------------------------------------------------------


@dataclass
class Command:
    """One command of the parser tree: its words after ``harvestflow`` and its parser."""

    path: tuple[str, ...]
    parser: argparse.ArgumentParser
    help: str = ""
    children: list[Command] = field(default_factory=list)

    @property
    def name(self) -> str:
        return " ".join(("harvestflow", *self.path))


def _walk(parser: argparse.ArgumentParser, path: tuple[str, ...], help: str) -> Command:
    command = Command(path, parser, help)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            seen: set[int] = set()
            for name, sub in action.choices.items():
                if id(sub) in seen:  # an alias of a command already listed
                    continue
                seen.add(id(sub))
                command.children.append(_walk(sub, (*path, name), helps.get(name, "")))
    return command


def command_tree() -> Command:
    """The parser of the ``harvestflow`` command, as a tree of commands."""
    from app.cli.main import build_parser

    return _walk(build_parser(), (), "")


def iter_commands(command: Command) -> Iterator[Command]:
    yield command
    for child in command.children:
        yield from iter_commands(child)


def _argument_row(action: argparse.Action) -> str:
    if action.option_strings:
        names = ", ".join(_code(o) for o in action.option_strings)
        if action.nargs != 0:
            metavar = action.metavar or action.dest.upper()
            names += f" {_code(str(metavar))}"
    else:
        names = _code(str(action.metavar or action.dest))
        if action.nargs in ("*", "+", argparse.REMAINDER):
            names += " …"
    choices = ", ".join(_code(str(c)) for c in action.choices) if action.choices else ""
    default = ""
    takes_value = action.option_strings and action.nargs != 0
    if takes_value and action.default not in (None, [], "", argparse.SUPPRESS):
        default = _code(str(action.default))
    required = "yes" if action.required or not action.option_strings else ""
    help_text = (action.help or "").replace("%(default)s", str(action.default))
    help_text = help_text.replace("%%", "%")
    return (
        "| " + " | ".join(_cell(x) for x in (names, help_text, choices, default, required)) + " |"
    )


def cli_markdown() -> str:
    root = command_tree()
    out = [
        "# Command line",
        "",
        "Every command and option of `harvestflow`, read from its argument parser when this",
        "manual was built (`harvestflow --help` and `harvestflow COMMAND --help` print the same).",
        "The stage commands run the same library code as the DAGs. A command that needs the",
        "harvest database while it is not running says so in one line (exit 2).",
        "",
    ]
    commands = list(iter_commands(root))
    out += ["| command | what it does |", "|---|---|"]
    for command in commands[1:]:
        if not command.children:
            out.append(f"| [{_code(command.name)}](#{_anchor(command)}) | {_cell(command.help)} |")
    out.append("")
    for command in commands:
        level = "#" * min(2 + max(len(command.path) - 1, 0), 4)
        out += [f"{level} {command.name} {{ #{_anchor(command)} }}", ""]
        description = command.parser.description or command.help
        if description:
            out += [description.strip(), ""]
        usage = command.parser.format_usage().strip().removeprefix("usage: ")
        out += ["```text", usage, "```", ""]
        rows = [
            _argument_row(a)
            for a in command.parser._actions
            if not isinstance(a, argparse._HelpAction | argparse._SubParsersAction)
        ]
        if rows:
            out += [
                "| argument | meaning | choices | default | required |",
                "|---|---|---|---|---|",
            ]
            out += [*rows, ""]
        if command.children:
            out += [
                "Commands: "
                + ", ".join(f"[{_code(c.path[-1])}](#{_anchor(c)})" for c in command.children),
                "",
            ]
    return "\n".join(out)


def _anchor(command: Command) -> str:
    return "-".join(("harvestflow", *command.path)).replace("_", "-")


# --- the settings file -----------------------------------------------------------------------


@dataclass
class SettingsGroup:
    """Keys of one section that follow one comment block (or none)."""

    comment: list[str] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)


@dataclass
class SettingsSection:
    name: str
    groups: list[SettingsGroup] = field(default_factory=list)


_HEADER = re.compile(r"^\[([A-Za-z0-9_.\-\"]+)\]\s*(?:#.*)?$")
_KEY = re.compile(r'^("[^"]+"|[A-Za-z0-9_\-]+)\s*=')


def settings_sections(text: str) -> tuple[list[str], list[SettingsSection]]:
    """The file's opening comment and its sections, each key with the comment above it.

    A comment block belongs to the keys written under it, up to the next comment or blank
    line; one at the end of a section (nothing under it) is kept as the section's last note.
    """
    preamble: list[str] = []
    sections: list[SettingsSection] = []
    pending: list[str] = []
    current: SettingsGroup | None = None
    depth = 0  # inside a multi-line array or inline table
    for raw in text.splitlines():
        line = raw.strip()
        if depth:
            depth += line.count("[") + line.count("{") - line.count("]") - line.count("}")
            continue
        if not line:
            if not sections and pending:
                preamble, pending = pending, []
            current = None
            continue
        if line.startswith("#"):
            pending.append(line.lstrip("#").strip())
            current = None
            continue
        header = _HEADER.match(line)
        if header:
            if pending and sections:
                sections[-1].groups.append(SettingsGroup(pending, []))
            elif pending:
                preamble = pending
            pending, current = [], None
            sections.append(SettingsSection(header.group(1)))
            continue
        key = _KEY.match(line)
        if key and sections:
            if current is None or pending:
                current = SettingsGroup(pending, [])
                sections[-1].groups.append(current)
                pending = []
            current.keys.append(key.group(1).strip('"'))
            value = line.split("=", 1)[1].split("#", 1)[0]
            depth = value.count("[") + value.count("{") - value.count("]") - value.count("}")
    if pending and sections:
        sections[-1].groups.append(SettingsGroup(pending, []))
    return preamble, sections


def _lookup(data: dict[str, Any], dotted: str) -> dict[str, Any]:
    for part in dotted.split("."):
        data = data.get(part.strip('"'), {})
    return data


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, int):
        return f"{value:_}" if abs(value) >= 100_000 else str(value)
    return str(value)


def _comment_text(lines: list[str]) -> str:
    """A comment block as a paragraph; a line starting a list or an example keeps its line."""
    return _text("\n".join(lines).strip())


def settings_markdown() -> str:
    text = SETTINGS_FILE.read_text()
    data = tomllib.loads(text)
    preamble, sections = settings_sections(text)
    out = [
        "# Settings",
        "",
        "Every setting of `config/harvestflow.toml`, with its default and the comment above it",
        "in the file, read from the file when this manual was built.",
        "",
        _comment_text(preamble),
        "",
        "A key of a top-level section is overridden by the environment variable in its row;",
        "a key of a nested section (`[a.b]`) through its parent's variable, whose value is then",
        "a TOML inline table (`HARVESTFLOW_CONTINUOUS__POLICY='{min_wait_s = 600.0}'` replaces the",
        "whole table).",
        "",
    ]
    for section in sections:
        values = _lookup(data, section.name)
        top = "." not in section.name
        out += [f"## [{section.name}] {{ #{section.name.replace('.', '-')} }}", ""]
        for group in section.groups:
            if group.comment:
                out += [_comment_text(group.comment), ""]
            if not group.keys:
                continue
            out += ["| key | default | environment |", "|---|---|---|"]
            for key in group.keys:
                env = f"{ENV_PREFIX}{section.name.upper()}__{key.upper()}" if top else ""
                default = _toml_value(values.get(key))
                out.append(f"| {_code(key)} | {_code(default)} | {_code(env) if env else '—'} |")
            out.append("")
    return "\n".join(out)


# --- the DAGs --------------------------------------------------------------------------------


def dag_files() -> list[Path]:
    ignored = {
        line.strip()
        for line in (DAGS_DIR / ".airflowignore").read_text().splitlines()
        if line.strip()
    }
    return sorted(p for p in DAGS_DIR.glob("*.py") if p.name not in ignored)


def load_dags() -> list[Any]:
    """Each DAG file's ``dag``, imported as Airflow's dag-processor imports it.

    DAG files do no work at import (their tasks import the libraries when they run), and
    ``airflow.sdk`` needs no database, so this is a parse, not a start. AIRFLOW_HOME goes to a
    temporary folder when unset, so that a build never writes into ``~/airflow``.
    """
    os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="hf-docs-airflow-"))
    if str(DAGS_DIR) not in sys.path:
        sys.path.insert(0, str(DAGS_DIR))
    dags = []
    for path in dag_files():
        spec = importlib.util.spec_from_file_location(f"hf_docs_dag_{path.stem}", path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        dags.append(module.dag)
    return dags


def _describe_schedule(schedule: Any) -> str:
    """A DAG's ``schedule`` in words: cron presets and expressions, the Assets that wake it."""
    if schedule is None:
        return "manual"
    if isinstance(schedule, str):
        return _code(schedule)
    if hasattr(schedule, "uri"):
        return f"Asset {_code(schedule.uri)}"
    if hasattr(schedule, "asset_condition") and hasattr(schedule, "timetable"):
        return (
            f"{_describe_schedule(schedule.asset_condition)} or "
            f"{_describe_schedule(schedule.timetable)}"
        )
    if hasattr(schedule, "expression"):
        return _code(str(schedule.expression))
    objects = getattr(schedule, "objects", None)
    if objects is not None:
        word = " or " if type(schedule).__name__ == "AssetAny" else " and "
        return word.join(_describe_schedule(o) for o in objects)
    if isinstance(schedule, list | tuple):
        return " and ".join(_describe_schedule(o) for o in schedule)
    return str(schedule)


def _schedule(dag: Any) -> str:
    return _describe_schedule(getattr(dag, "schedule", None))


def _demote(markdown: str, by: int) -> str:
    """Headings of a DAG's doc_md moved ``by`` levels down (outside code fences)."""
    out, fenced = [], False
    for line in markdown.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if not fenced and re.match(r"#{1,6} ", line):
            line = "#" * by + line
        out.append(line)
    return "\n".join(out)


def _param_rows(dag: Any) -> list[str]:
    rows = []
    for name in dag.params:
        param = dag.params.get_param(name)
        schema = dict(getattr(param, "schema", {}) or {})
        description = param.description or schema.get("description") or ""
        kind = schema.get("type", "")
        kind = " or ".join(kind) if isinstance(kind, list) else str(kind)
        bounds = [
            f"{k} {schema[k]}"
            for k in ("minimum", "maximum", "minLength", "pattern", "enum", "format")
            if k in schema
        ]
        default = json.dumps(param.value, ensure_ascii=False, default=str)
        rows.append(
            "| "
            + " | ".join(
                (
                    _code(name),
                    _cell(kind),
                    _code(default),
                    _cell(description),
                    _cell("; ".join(bounds)),
                )
            )
            + " |"
        )
    return rows


def dags_markdown() -> str:
    dags = load_dags()
    out = [
        "# DAGs",
        "",
        "Every DAG of `dags/`, with its schedule, tags, the Params of its trigger form and its",
        "documentation (`doc_md`, the *Docs* of its page in Airflow's UI), read from the DAG",
        "files when this manual was built.",
        "",
        "| DAG | schedule | tags |",
        "|---|---|---|",
    ]
    for dag in dags:
        tags = ", ".join(sorted(dag.tags or []))
        out.append(
            f"| [{_code(dag.dag_id)}](#{dag.dag_id.replace('_', '-')}) | {_cell(_schedule(dag))} | {tags} |"
        )
    out.append("")
    for dag in dags:
        out += [f"## {dag.dag_id} {{ #{dag.dag_id.replace('_', '-')} }}", ""]
        out += [
            f"Schedule: {_cell(_schedule(dag))}. Tags: {', '.join(sorted(dag.tags or [])) or '—'}.",
            "",
        ]
        rows = _param_rows(dag)
        if rows:
            out += [
                "| Param | type | default | description | constraints |",
                "|---|---|---|---|---|",
            ]
            out += [*rows, ""]
        else:
            out += ["No Params.", ""]
        doc = (dag.doc_md or "").strip()
        if doc:
            out += [_demote(doc, 2), ""]
    return "\n".join(out)


# --- MkDocs ----------------------------------------------------------------------------------

PAGES = {
    "reference/cli.md": cli_markdown,
    "reference/settings.md": settings_markdown,
    "reference/dags.md": dags_markdown,
}


def on_files(files: Any, config: Any) -> Any:
    """MkDocs hook: add the reference pages, generated now, to the site's files."""
    from mkdocs.structure.files import File

    for uri, make in PAGES.items():
        existing = files.get_file_from_path(uri)
        if existing is not None:
            files.remove(existing)
        files.append(File.generated(config, uri, content=make()))
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="write the generated reference pages")
    parser.add_argument("out", type=Path, help="folder to write reference/*.md into")
    args = parser.parse_args(argv)
    for uri, make in PAGES.items():
        target = args.out / uri
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(make() + "\n")
        print(target)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
