"""``harvestflow crawl``: the crawl process's own command line (crawler.command_line).

The options live with the crawler because DAG tasks start ``python -m crawler`` (which must not
import this layer); this module only registers them on the harvestflow command.
"""

from __future__ import annotations

from typing import Any

from crawler.command_line import add_arguments, run_from_args


def add_cli(subparsers: Any) -> None:
    """Register ``crawl`` on the harvestflow CLI's subparsers."""
    parser = subparsers.add_parser("crawl", help="run one crawl job (or an ad-hoc crawl)")
    add_arguments(parser)
    parser.set_defaults(func=run_from_args)
