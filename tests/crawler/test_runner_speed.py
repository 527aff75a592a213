"""ScheduleOutputMiddleware (a speed change) keeps the crawl's behaviour: a callback's
Requests are scheduled in order, where Scrapy consumed them, and anything else passes on."""

from __future__ import annotations

import asyncio
from typing import Any

import scrapy
from scrapy.http import HtmlResponse

from crawler.spider import ScheduleOutputMiddleware


class _Engine:
    def __init__(self) -> None:
        self.scheduled: list[str] = []

    def crawl(self, request: scrapy.Request) -> None:
        self.scheduled.append(request.url)


class _Crawler:
    def __init__(self) -> None:
        self.engine = _Engine()


def _output() -> list[Any]:
    return [
        scrapy.Request("http://example.org/a"),
        {"an": "item"},
        scrapy.Request("http://example.org/b"),
        scrapy.Request("http://example.org/c"),
    ]


def test_schedule_output_in_order_items_passed_on() -> None:
    crawler: Any = _Crawler()
    mw = ScheduleOutputMiddleware.from_crawler(crawler)
    response = HtmlResponse("http://example.org/", body=b"<html></html>")
    rest = mw.process_spider_output(response, iter(_output()))
    assert crawler.engine.scheduled == []  # lazy: consumed where Scrapy consumes the output
    assert list(rest) == [{"an": "item"}]
    assert crawler.engine.scheduled == [f"http://example.org/{c}" for c in "abc"]


def test_schedule_output_async() -> None:
    crawler: Any = _Crawler()
    mw = ScheduleOutputMiddleware.from_crawler(crawler)
    response = HtmlResponse("http://example.org/", body=b"<html></html>")

    async def agen() -> Any:
        for o in _output():
            yield o

    async def collect() -> list[Any]:
        return [o async for o in mw.process_spider_output_async(response, agen())]

    assert asyncio.run(collect()) == [{"an": "item"}]
    assert crawler.engine.scheduled == [f"http://example.org/{c}" for c in "abc"]


# what a crawl process imports when its job renders nothing and has no job control (the
# crawler's components for `python -m crawler --seed … --render none`, built the way Scrapy
# builds them: each setting merged with its _BASE, every key imported to match it with the
# base's entries), and the partitioned job's parent: neither needs the renderer's HTTP client
# (aiohttp), SQLAlchemy's job actions nor Scrapy's remote control
_PLAIN_CRAWL = """
import json, sys
from pathlib import Path
from scrapy.settings import Settings
from scrapy.utils.misc import load_object
from crawler import command_line as cli, jobspec, runner
import crawler.spider
parser = cli.argparse.ArgumentParser()
cli.add_arguments(parser)
args = parser.parse_args(["--out", sys.argv[1], "--render", "none", "--seed", "http://a.example/"])
job = Path(sys.argv[1]) / "job.json"
job.write_text(json.dumps(cli.adhoc_spec(args)))
s = Settings(runner.scrapy_settings(jobspec.load(job)))
for key in ("DOWNLOADER_MIDDLEWARES", "SPIDER_MIDDLEWARES", "EXTENSIONS"):
    for path in s.get_component_priority_dict_with_base(key):
        load_object(path)
for path in s.getdict("DOWNLOAD_HANDLERS").values():
    if path is not None:
        load_object(path)
print(json.dumps(sorted(sys.modules)))
"""


def _modules(code: str, *args: str) -> set[str]:
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_a_crawl_that_renders_nothing_loads_no_renderer(tmp_path) -> None:
    loaded = _modules(_PLAIN_CRAWL, str(tmp_path))
    assert "crawler.spider" in loaded and "crawler.statslog" in loaded  # the check ran
    assert "crawler.rendering.renderer" not in loaded
    assert "aiohttp" not in loaded


def test_a_partitioned_jobs_parent_loads_no_sqlalchemy_without_job_control() -> None:
    code = "import json, sys, crawler.partitioned_run; print(json.dumps(sorted(sys.modules)))"
    loaded = _modules(code)
    assert "crawler.partitioning.control_relay" in loaded
    assert "sqlalchemy" not in loaded and "scrapy" not in loaded


def test_a_crawl_without_leases_loads_neither_sqlalchemy_nor_scrapys_remote_control(
    tmp_path,
) -> None:
    loaded = _modules(_PLAIN_CRAWL, str(tmp_path))
    assert "crawler.statslog" in loaded and "crawler.ownerwatch" in loaded  # the check ran
    assert "crawler.leases" not in loaded and "sqlalchemy" not in loaded
    assert "scrapy.extensions.remote_control" not in loaded and "aiohttp" not in loaded
