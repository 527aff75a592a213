"""What a crawl process does not pay for as it starts, and what it still does.

The cyclic collector is off while it starts and on while it crawls: start-up (imports, Scrapy's
set-up) builds objects that live as long as the process, and collecting them over and over was
~0.1 CPU-s of every crawl process (crawler.command_line.run_from_args); the crawl itself must
still collect its garbage, and a caller in the same process (the harvestflow CLI) gets the
collector back as it was. ``python -m crawler`` does not import fsspec (crawler/__main__.py),
and warcio still writes and reads WARC records without it.
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


# python -m crawler's entry run in this interpreter (a refused seed: it returns at once), then a
# record written and read back with warcio, as crawler.warc does, in the same process
_ENTRY_THEN_WARCIO = """
import io, json, runpy, sys
sys.argv = ["crawler", "--seed", "notaurl", "--out", sys.argv[1]]
try:
    runpy.run_module("crawler", run_name="__main__")
except SystemExit as exc:
    status = exc.code
from warcio.archiveiterator import ArchiveIterator
from warcio.warcwriter import WARCWriter
buf = io.BytesIO()
writer = WARCWriter(buf, gzip=True)
writer.write_record(writer.create_warc_record("urn:x", "resource", payload=io.BytesIO(b"hi"),
                                              warc_content_type="text/plain"))
buf.seek(0)
read = [(r.rec_type, r.content_stream().read().decode()) for r in ArchiveIterator(buf)]
print(json.dumps({"status": status, "fsspec": repr(sys.modules.get("fsspec", "absent")),
                  "read": read}))
"""


def test_the_crawl_process_goes_without_fsspec_and_warcio_still_works(tmp_path) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _ENTRY_THEN_WARCIO, str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["status"] == EXIT_REFUSED  # the entry ran
    assert seen["fsspec"] == "None"  # not importable: never imported
    assert seen["read"] == [["resource", "hi"]]


def test_a_process_importing_the_crawler_keeps_fsspec(tmp_path) -> None:
    import subprocess
    import sys

    code = "import sys, crawler.__main__, crawler.warc.files; print('fsspec' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True"]  # imported by warcio as before
