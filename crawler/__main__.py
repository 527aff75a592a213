"""``python -m crawler``: the crawl command (same options as ``harvestflow crawl``)."""

from __future__ import annotations

import argparse
import gc
import sys

from crawler.command_line import add_arguments, run_from_args


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m crawler", description="Run one crawl job.")
    add_arguments(parser)
    return run_from_args(parser.parse_args(argv))


def without_fsspec() -> None:
    """Make ``import fsspec`` fail in this process: warcio then opens files with ``open()``.

    Why: warcio imports fsspec whenever it is installed (Airflow's task SDK installs it), only
    for its command-line tools' ``fsspec_open(URL)``; the crawler hands warcio open files. That
    import scanned the entry points of every installed distribution (~300 here), ~0.05-0.09
    CPU-s of every crawl process. Only this process's entry does it: a process that imports
    the crawler as a library (a test, a task) keeps fsspec.
    """
    sys.modules.setdefault("fsspec", None)  # type: ignore[arg-type]  # None: "not importable"


if __name__ == "__main__":
    without_fsspec()
    status = main()
    # The job is done (files closed, summary.json written, SUMMARY printed) and the process
    # exits: what it built is frozen out of the cyclic collector, so the interpreter's
    # collections at exit do not walk Scrapy's, Twisted's and the crawl's objects once more
    # (~0.6 CPU-s per crawl process measured, ~0.05 left). Nothing is lost: Python never
    # promised finalizers at exit, and the crawl's own files are closed by crawler.runner.finish.
    gc.freeze()
    raise SystemExit(status)
