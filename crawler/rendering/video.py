"""yt-dlp on rendered pages of video platforms, as brozzler runs youtube-dl (template setting
``render_video``: ``none``, the default; ``platforms``: pages whose URL one of yt-dlp's site
extractors claims; ``all``: every rendered page, yt-dlp's generic extractor included).

Why yt-dlp: a platform's player fetches its video through scripts, signatures and adaptive
formats no behaviour reproduces; yt-dlp (public domain) knows each platform. Why through the
tab's recording proxy: every request yt-dlp makes — the page again, the platform's APIs, the
video file — reaches the sites through the crawl like the page's own requests (robots, the
host's politeness, budgets, one capture per URL, a crawl.log line with the page as via), so
the video is in the WARC as a response record of the page. yt-dlp runs as a child process
(killed at ``render_video_timeout_s``; its downloaded copy is deleted: the WARC holds the
bytes), and what it found (its info JSON: title, formats, the file it chose) is kept as a
``metadata`` record ``youtube-dl:URL`` of type ``application/vnd.youtube-dl_formats+json``,
the name and type brozzler gives it, tied to the page's response record.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import shutil
import sys
import tempfile
from typing import TYPE_CHECKING, Any

from crawler.rendering.behaviours.run import Action
from crawler.warc.records import sha1_digest, video_info_record
from harvestflow.formats.cdx import CdxEntry

if TYPE_CHECKING:
    from crawler.context import CrawlContext
    from crawler.rendering.model import RenderOutcome, RenderSettings
    from crawler.rendering.tab import RenderPage, TabWorker

log = logging.getLogger(__name__)

VIDEO_MODES = ("none", "platforms", "all")
VIDEO_INFO_TYPE = "application/vnd.youtube-dl_formats+json"
# a video no larger than the crawl takes (one file: no merge of separate audio and video,
# which would need ffmpeg)
FORMAT = "b[filesize<{max}]/b[filesize_approx<{max}]/b"
MAX_INFO_BYTES = 4 * 1024 * 1024  # yt-dlp's JSON kept (a platform's can list many formats)


@functools.cache
def _site_extractors() -> tuple[Any, ...]:
    from yt_dlp.extractor import gen_extractor_classes

    return tuple(ie for ie in gen_extractor_classes() if ie.IE_NAME != "generic")


def wants_video(mode: str, url: str) -> bool:
    """Whether yt-dlp is run for a rendered page (``platforms``: a site extractor of yt-dlp
    claims its URL)."""
    if mode == "all":
        return True
    if mode != "platforms":
        return False
    return any(ie.suitable(url) for ie in _site_extractors())


def command(url: str, proxy: str, workdir: str, t: RenderSettings) -> list[str]:
    """yt-dlp's command line: through ``proxy``, one video of the page, within the crawl's
    limits, its info JSON printed once the file is downloaded."""
    return [
        sys.executable,
        "-m",
        "yt_dlp",
        "--ignore-config",
        "--no-cache-dir",
        "--no-playlist",
        "--no-progress",
        "--no-part",
        "--no-mtime",
        "--proxy",
        proxy,
        # the proxy is the crawl's own on loopback, its certificates from the job's CA; the
        # crawl's fetch is what meets the site
        "--no-check-certificates",
        "--socket-timeout",
        str(int(t.download_timeout_s)),
        "--max-filesize",
        str(t.max_response_bytes),
        "-f",
        FORMAT.format(max=t.max_response_bytes),
        "-o",
        f"{workdir}/%(id).60s.%(ext)s",
        "--dump-single-json",
        "--no-simulate",
        url,
    ]


async def video_pass(
    tab: TabWorker, page: RenderPage, url: str, t: RenderSettings, outcome: RenderOutcome
) -> None:
    """yt-dlp run on the page through the tab's proxy (the page assigned to the tab, so its
    requests are the page's); the info JSON and an action (``video:1``, or ``video:0`` with
    why) added to ``outcome``."""
    workdir = tempfile.mkdtemp(prefix="hf-ytdlp-")
    tab.page = page
    proc = None
    try:
        proc = await asyncio.create_subprocess_exec(
            *command(url, tab.proxy.address, workdir, t),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={"PATH": "/usr/bin:/bin", "NO_PROXY": "", "no_proxy": ""},
        )
        out, err = await asyncio.wait_for(proc.communicate(), t.render_video_timeout_s)
    except TimeoutError:
        outcome.actions.append(Action("video", "failed", 0, "timeout"))
        log.warning("yt-dlp on %s: no end in %.0f s, killed", url, t.render_video_timeout_s)
        return
    finally:
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
        tab.page = None
        shutil.rmtree(workdir, ignore_errors=True)
    if proc.returncode != 0:
        why = err.decode("utf-8", "replace").strip().splitlines()[-1:] or ["exit"]
        log.info("yt-dlp on %s: %s", url, why[0][:300])
        if "Unsupported URL" not in why[0]:  # a page without a video is no failure
            outcome.actions.append(Action("video", "failed", 0, why[0]))
        return
    try:
        info = json.loads(out[:MAX_INFO_BYTES])
    except ValueError:
        outcome.actions.append(Action("video", "failed", 0, "unreadable info"))
        return
    outcome.videos.append(info)
    outcome.actions.append(Action("video", "download", 1, str(info.get("extractor") or "")))


def write_video_infos(ctx: CrawlContext, url: str, cap: Any, infos: list[dict[str, Any]]) -> None:
    """yt-dlp's info JSON of a page as ``youtube-dl:URL`` metadata records (with CDX lines)
    tied to the page's response record."""
    for info in infos:
        uri = f"youtube-dl:{url}"
        body = json.dumps(info, ensure_ascii=False, sort_keys=True).encode("utf-8")
        date = ctx.records.now_warc_date()
        ((name, offset, length),) = ctx.records.write(
            video_info_record(uri, date, body, VIDEO_INFO_TYPE, cap.record_id)
        )
        entry = CdxEntry(uri, date, VIDEO_INFO_TYPE, None, sha1_digest(body), length, offset)
        ctx.records.record_cdx(entry, name)
