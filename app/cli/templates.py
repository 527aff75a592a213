"""``harvestflow templates list|show|check|add``: the crawl templates, shipped and the
institution's own (``[harvest] templates_dir``), each file checked before use (harvest.office); ``add`` refused unless its ``--user`` is a crawl
engineer (given the role in every collection, ``*``), as :data:`harvest.office.office_rights.TEMPLATES`
says.
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from pathlib import Path


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``templates`` subcommands."""
    p = subparsers.add_parser("templates", help="crawl templates: shipped and the institution's")
    sub = p.add_subparsers(dest="templates_command", required=True)
    ls = sub.add_parser("list", help="templates with their folder and the running jobs using them")
    ls.set_defaults(func=cmd_list)
    show = sub.add_parser("show", help="a template's full spec (defaults filled in), as JSON")
    show.add_argument("name")
    show.set_defaults(func=cmd_show)
    check = sub.add_parser("check", help="check template files (keys, values, the crawler's check)")
    check.add_argument("files", nargs="+", type=Path)
    check.set_defaults(func=cmd_check)
    add = sub.add_parser("add", help="check a file and add it to the institution's templates")
    add.add_argument("file", type=Path)
    add.add_argument("--user", default=None, help="recorded in the audit (default: login)")
    add.set_defaults(func=cmd_add)


def cmd_list(args: argparse.Namespace) -> int:
    from harvest.office.template_admin import list_templates

    print(f"{'name':<24} {'source':<14} {'loaded':<7} running jobs  description")
    for t in list_templates():
        jobs = ",".join(map(str, t["running_jobs"])) or "-"
        loaded = "yes" if t["loaded"] else "no"
        print(f"{t['name']:<24} {t['source']:<14} {loaded:<7} {jobs:<13} {t['description']}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from harvest.office.definition_form import OfficeError
    from harvest.office.template_admin import show_template
    from harvest.templates import TemplateError

    try:
        found = show_template(args.name)
    except (OfficeError, TemplateError) as exc:
        print(f"harvestflow templates: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(found, indent=1, sort_keys=True))
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    """Exit 0 when every file is a usable template, 1 otherwise (each bad one named)."""
    from harvest.templates import TemplateError, load_template_file

    bad = 0
    for path in args.files:
        try:
            name, _, _ = load_template_file(path)
        except TemplateError as exc:
            print(f"refused: {exc}", file=sys.stderr)
            bad += 1
            continue
        print(f"ok: {path}: template {name}")
    return 1 if bad else 0


def cmd_add(args: argparse.Namespace) -> int:
    from harvest.common import engine_or_default
    from harvest.office.definition_form import OfficeError
    from harvest.office.office_rights import TEMPLATES
    from harvest.office.template_admin import add_template
    from harvest.rights import COMMAND_LINE, RightsError
    from harvest.templates import institution_dir

    try:
        engine = engine_or_default(None)
        with engine.connect() as conn:
            user = TEMPLATES.check(conn, args.user or getpass.getuser(), COMMAND_LINE)
        name = add_template(args.file, user, engine=engine)
    except (OfficeError, RightsError, OSError) as exc:
        print(f"harvestflow templates add: refused: {exc}", file=sys.stderr)
        return 1
    print(f"template {name} added to {institution_dir()} and loaded")
    return 0
