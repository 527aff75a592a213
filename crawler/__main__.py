"""``python -m crawler``: the crawl command (same options as ``harvestflow crawl``)."""

from __future__ import annotations

import argparse

from crawler.command_line import add_arguments, run_from_args


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m crawler", description="Run one crawl job.")
    add_arguments(parser)
    return run_from_args(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
