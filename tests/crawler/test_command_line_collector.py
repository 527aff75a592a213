"""A crawl process starts with the cyclic collector off and crawls with it on.

Why: start-up (imports, Scrapy's set-up) builds objects that live as long as the process, and
collecting them over and over was ~0.1 CPU-s of every crawl process
(crawler.command_line.run_from_args); the crawl itself must still collect its garbage, and a
caller in the same process (the harvestflow CLI) gets the collector back as it was.
"""

from __future__ import annotations

import argparse
import gc
import json
from pathlib import Path
from typing import Any, ClassVar

import pytest

from crawler import EXIT_REFUSED, jobspec, runner
from crawler.command_line import add_arguments, run_from_args


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(argv))


@pytest.mark.parametrize("enabled", [True, False])
def test_the_crawl_command_gives_the_collector_back_as_it_found_it(tmp_path, enabled) -> None:
    args = _args("--seed", "notaurl", "--out", str(tmp_path / "out"))
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        assert run_from_args(args) == EXIT_REFUSED
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


class _Process:
    """Stands for Scrapy's CrawlerProcess: records the collector while the crawl runs."""

    seen: ClassVar[dict[str, Any]] = {}

    def __init__(self, settings: dict[str, Any]) -> None:
        pass

    def create_crawler(self, spider: Any) -> Any:
        return argparse.Namespace()

    def crawl(self, crawler: Any) -> None:
        pass

    def start(self) -> None:
        _Process.seen = {
            "enabled": gc.isenabled(),
            "frozen": gc.get_freeze_count(),
            "young": gc.get_threshold()[0],
        }


def test_the_crawl_runs_with_the_collector_on_what_start_up_built_frozen(
    tmp_path: Path, monkeypatch
) -> None:
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"job_id": 5, "seeds": ["http://a.example.test/"]}))
    spec = jobspec.load(job)
    monkeypatch.setattr("scrapy.crawler.CrawlerProcess", _Process)
    monkeypatch.setattr(runner, "attach", lambda crawler, ctx: None)
    monkeypatch.setattr(runner, "finish", lambda ctx, job_file: ctx.state.close())
    thresholds = gc.get_threshold()
    was = gc.isenabled()
    gc.disable()  # as the crawl command leaves it while the process starts
    try:
        runner.run_spec(spec, tmp_path / "out")
        after = gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()
    assert _Process.seen["enabled"] is True
    assert _Process.seen["frozen"] > 0
    assert _Process.seen["young"] == runner.GC_YOUNG_THRESHOLD
    # the end (reports, metadata WARC) collects too; start-up's objects unfrozen again
    assert after is True
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == thresholds
