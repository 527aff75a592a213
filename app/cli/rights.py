"""``harvestflow rights grant|revoke|list``: roles per collection (:mod:`harvest.rights`).

Who runs the command holds the database's password, so may give any role; who gave it is
recorded (``--user``, default ``$USER``) with the change in the audit log. The curator pages and
the other commands that write a collection's records check these roles (:func:`rights.check`).
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys


def _user(args: argparse.Namespace) -> str:
    return str(args.user or os.environ.get("USER") or getpass.getuser())


def cmd_rights(args: argparse.Namespace) -> int:
    from harvest import rights
    from harvest.common import engine_or_default

    try:
        with engine_or_default(None).begin() as conn:
            if args.rights_command == "grant":
                done = rights.grant(
                    conn, args.collection, args.username, rights.Role.parse(args.role), _user(args)
                )
                print(f"{done.username} is a {done.role.label} in collection {done.collection!r}")
            elif args.rights_command == "revoke":
                gone = rights.revoke(conn, args.collection, args.username, _user(args))
                print(f"{gone.username} is no longer a {gone.role.label} in {gone.collection!r}")
            else:
                found = rights.grants(conn, collection=args.collection, username=args.username)
                if args.json:
                    print(json.dumps([{"collection": g.collection, "user": g.username,
                                       "role": g.role.label, "granted_by": g.granted_by,
                                       "granted_at": g.granted_at.isoformat()} for g in found],
                                     indent=1))  # fmt: skip
                for g in [] if args.json else found:
                    print(f"{g.collection}\t{g.username}\t{g.role.label}\t"
                          f"given by {g.granted_by} {g.granted_at:%Y-%m-%d %H:%M}")  # fmt: skip
    except rights.RightsError as exc:
        print(f"harvestflow rights: {exc}", file=sys.stderr)
        return 1
    return 0


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "rights", help="roles per collection (viewer, curator, engineer, administrator)"
    )
    sub = p.add_subparsers(dest="rights_command", required=True)
    g = sub.add_parser("grant", help="give a user a role in a collection ('*': every one)")
    g.add_argument("collection")
    g.add_argument("username")
    g.add_argument("role", help="viewer, curator, engineer or administrator")
    g.add_argument("--user", help="who gives it (default $USER)")
    g.set_defaults(func=cmd_rights)
    r = sub.add_parser("revoke", help="take a user's role in a collection away")
    r.add_argument("collection")
    r.add_argument("username")
    r.add_argument("--user", help="who takes it (default $USER)")
    r.set_defaults(func=cmd_rights)
    ls = sub.add_parser("list", help="the roles given, by collection")
    ls.add_argument("--collection", default=None)
    ls.add_argument("--username", default=None)
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=cmd_rights)
