"""``harvestflow ark verify``: the syntax and NOID check character of ARK identifiers, as
preservation checks the ARKs it mints."""

from __future__ import annotations

import argparse


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    """Register ``ark verify``."""
    ark = subparsers.add_parser("ark", help="ARK identifiers")
    ark_sub = ark.add_subparsers(dest="ark_command", required=True)
    p = ark_sub.add_parser("verify", help="check the syntax and NOID check character of ARKs")
    p.add_argument("ark", nargs="+", help="e.g. ark:/99999/hf00018")
    p.set_defaults(func=cmd_ark_verify)


def cmd_ark_verify(args: argparse.Namespace) -> int:
    from preservation.ark import verify

    bad = 0
    for value in args.ark:
        check = verify(value)
        print(f"{check.ark}\t{'valid' if check.valid else 'INVALID'}\t{check.reason}")
        bad += not check.valid
    return 1 if bad else 0
