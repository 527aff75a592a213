"""``harvestflow db migrate``: the harvest database's schema, brought up to date."""

from __future__ import annotations

import argparse


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    """Register ``db migrate``."""
    p = subparsers.add_parser("db", help="harvest database maintenance")
    dbsub = p.add_subparsers(dest="db_command", required=True)
    m = dbsub.add_parser("migrate", help="apply the SQL migrations not yet applied")
    m.set_defaults(func=cmd_db_migrate)


def cmd_db_migrate(args: argparse.Namespace) -> int:
    from harvestflow import db

    applied = db.migrate()
    print("applied: " + (", ".join(applied) if applied else "nothing (schema up to date)"))
    return 0
