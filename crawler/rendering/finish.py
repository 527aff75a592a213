"""The frontier steps of a rendered page, in an order a crash (kill -9) mid-render survives.

Why not ``CrawlContext.finish_capture`` after the render: a render takes seconds; a crawler
killed then would find the page still queued on resume and capture it a second time. So the
page is marked done, with its plain links queued, *before* the render, in one transaction that
also keeps what its crawl.log line and metadata record need (``rendering:<key>`` in the state's
meta table). After the render, the rendered DOM's links are added, the record and the line are
written and the entry removed. A resumed job writes the line and record of a page whose render
was cut short from that entry (annotation ``render-interrupted``): the page is neither fetched
again nor missing from crawl.log and the reports.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from typing import TYPE_CHECKING

from crawler import state as st
from crawler.crawllog_writer import LogEntry
from crawler.warc.records import metadata_record, page_fields

if TYPE_CHECKING:
    import scrapy

    from crawler.context import Capture, CrawlContext

log = logging.getLogger(__name__)

PREFIX = "rendering:"
Link = tuple[str, str, str]


def begin_render(
    ctx: CrawlContext, request: scrapy.Request, cap: Capture, links: list[Link]
) -> list[scrapy.Request]:
    """The page done and its plain links queued, before the render (one transaction)."""
    hf = dict(request.meta["hf"], url=request.url)
    entry = {
        "url": request.url,
        "hf": hf,
        "cap": {
            "status": cap.status,
            "size": cap.size,
            "digest": cap.digest,
            "mime": cap.mime,
            "record_id": cap.record_id,
            "date": cap.date,
            "fetch_start": cap.fetch_start.isoformat(),
            "duration_ms": cap.duration_ms,
            "annotations": cap.annotations,
        },
        "links": links,
        "tries": request.meta.get("retry_times", 0),
    }
    ctx.state.begin()
    new = ctx.frontier.consider_all(links, hf)
    ctx.state.finish(hf["key"], st.FrontierState.DONE, cap.status, cap.size, cap.counted)
    ctx.state.set_meta(PREFIX + hf["key"], json.dumps(entry))
    ctx.frontier.commit()
    return new


def end_render(
    ctx: CrawlContext,
    request: scrapy.Request,
    cap: Capture,
    links: list[Link],
    rendered: list[Link],
) -> list[scrapy.Request]:
    """After the render: the DOM's links, the metadata record, the crawl.log line."""
    hf = dict(request.meta["hf"], url=request.url)
    ctx.records.write(
        metadata_record(
            request.url, cap.date, cap.record_id, page_fields(hf, cap.duration_ms, links + rendered)
        )
    )
    ctx.state.begin()
    new = ctx.frontier.consider_all(rendered, hf)
    ctx.state.db.execute("DELETE FROM meta WHERE key=?", (PREFIX + hf["key"],))
    ctx.commit_logged(ctx.capture_entry(request, cap), ctx.frontier.commit)
    ctx.count_capture(cap)
    return new


def finish_interrupted(ctx: CrawlContext) -> int:
    """Line and record of each page whose render a crash cut short (on resume)."""
    rows = ctx.state.db.execute(
        "SELECT key, value FROM meta WHERE key LIKE ? ORDER BY key", (PREFIX + "%",)
    ).fetchall()
    for key, value in rows:
        try:
            entry = json.loads(value)
            hf, c = entry["hf"], entry["cap"]
            links = [(u, h, x) for u, h, x in entry["links"]]
            fields = page_fields(hf, c["duration_ms"], links)
            ctx.records.write(metadata_record(entry["url"], c["date"], c["record_id"], fields))
            annotations = [*c["annotations"], "render-interrupted"]
            if entry.get("tries"):
                annotations.insert(0, f"{entry['tries'] + 1}t")
            ctx.crawl_log.write(
                LogEntry(
                    c["status"],
                    entry["url"],
                    hf.get("hops", ""),
                    hf.get("via"),
                    mime=c["mime"],
                    size=c["size"],
                    fetch_start=dt.datetime.fromisoformat(c["fetch_start"]),
                    duration_ms=c["duration_ms"],
                    digest=c["digest"],
                    seed=hf.get("seed"),
                    annotations=annotations,
                )
            )
            log.warning("render of %s cut short by a crash: logged, not rendered", entry["url"])
        except (ValueError, KeyError, TypeError) as exc:
            log.error("state entry %s unreadable (%s): left out", key, exc)
        ctx.state.begin()
        ctx.state.db.execute("DELETE FROM meta WHERE key=?", (key,))
        ctx.state.commit()
    return len(rows)
