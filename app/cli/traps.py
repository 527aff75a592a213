"""``harvestflow traps``: the global crawler-trap lists (every crawl applies the active ones)."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    """Add ``traps`` and its subcommands."""
    p = subparsers.add_parser("traps", help="global crawler-trap lists")
    sub = p.add_subparsers(dest="traps_command", required=True)
    load = sub.add_parser("load", help="create or replace a global list from a file")
    load.add_argument("name")
    load.add_argument("file", type=Path)
    load.add_argument("--inactive", action="store_true")
    load.set_defaults(func=cmd_traps_load)


def cmd_traps_load(args: argparse.Namespace) -> int:
    from harvest.traps import load_global_trap_list

    count = load_global_trap_list(args.name, args.file, active=not args.inactive)
    print(f"global crawler-trap list {args.name}: {count} expressions")
    return 0
