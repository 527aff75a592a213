"""``harvestflow access ...``: the replay service (registered through :func:`add_cli`).

- ``access setup``: create the replay virtualenv with pywb (``access/setup-replay.sh``);
- ``access serve``: pywb + our WARC resolver until Ctrl-C (what ``harvestflow up`` starts);
- ``access reindex [--force]``: rebuild the ZipNum indexes whose big CDXJ changed, refresh the
  flat files not merged yet (what the ``indexing_merge`` DAG runs after its big merge);
- ``access config``: print the generated pywb configuration.
"""

from __future__ import annotations

import argparse
import json


def cmd_setup(args: argparse.Namespace) -> int:
    from access.service import setup

    setup()
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from access.service import ReplayService

    return ReplayService().serve_forever()


def cmd_reindex(args: argparse.Namespace) -> int:
    from access.index import reindex

    print(json.dumps(reindex(force=args.force), indent=1, sort_keys=True))
    return 0


def cmd_config(args: argparse.Namespace) -> int:
    from access.pywbconfig import render

    print(render(), end="")
    return 0


def add_cli(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("access", help="the replay service (pywb): setup, serve, reindex")
    acc = p.add_subparsers(dest="access_command", required=True)
    s = acc.add_parser("setup", help="create the replay virtualenv with pywb (idempotent)")
    s.set_defaults(func=cmd_setup)
    s = acc.add_parser("serve", help="serve replay (pywb + WARC resolver) until Ctrl-C")
    s.set_defaults(func=cmd_serve)
    s = acc.add_parser("reindex", help="rebuild ZipNum and collection indexes (idempotent)")
    s.add_argument("--force", action="store_true", help="rebuild even if the inputs are unchanged")
    s.set_defaults(func=cmd_reindex)
    s = acc.add_parser("config", help="print the generated pywb config.yaml")
    s.set_defaults(func=cmd_config)
