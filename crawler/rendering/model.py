"""What the renderer works with, apart from the browser: the template's rendering settings, a
page's outcome and screenshots, and the scripts a tab runs in the page.

Why apart: :mod:`crawler.rendering.renderer` drives Chromium and the tabs' requests; these are plain data
and constants that the screenshot writer and the tests read too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings


@dataclass(frozen=True)
class Action:
    """One behaviour's action on a page: a report line and a crawl.log annotation."""

    behaviour: str  # consent | site | expand | load-more | autofetch | play | page
    action: str  # accept | reject | hide | kept | run | failed | open | click | fetch | left
    count: int
    detail: str = ""

    @property
    def annotation(self) -> str:
        if self.behaviour == "consent":
            who = re.sub(r"[^A-Za-z0-9._-]+", "-", self.detail)[:40] or "-"
            return "consent:kept" if self.action == "kept" else f"consent:{self.action}:{who}"
        if self.behaviour == "page":
            return "left-page"
        if self.behaviour == "site":
            return f"behaviour:{re.sub(r'[^A-Za-z0-9._-]+', '-', self.detail)[:40]}"
        short = {"expand": "expanded", "load-more": "clicks", "play": "played"}
        return f"{short.get(self.behaviour, self.behaviour)}:{self.count}"


ANCHORS_JS = """(() => {
  const out = new Set();
  for (const a of document.querySelectorAll('a[href], area[href]')) {
    if (a.href && /^https?:/i.test(a.href)) out.add(a.href);
  }
  return Array.from(out);
})()"""
SCROLL_JS = """(() => {
  window.scrollBy(0, Math.max(window.innerHeight - 40, 100));
  const h = Math.max(document.documentElement.scrollHeight, document.body ? document.body.scrollHeight : 0);
  return [Math.ceil(window.scrollY + window.innerHeight), h];
})()"""
HEIGHT_JS = """Math.max(document.documentElement.scrollHeight,
  document.body ? document.body.scrollHeight : 0)"""
# the page's visible text, as the QA pass compares it (crawler/rendering/qa_compare.py)
TEXT_JS = "document.body ? document.body.innerText : ''"
MAX_ERRORS = 50  # JavaScript errors kept per page load


def exception_message(params: dict[str, Any]) -> str:
    """The message of a ``Runtime.exceptionThrown`` event (its first line)."""
    details = params.get("exceptionDetails") or {}
    exc = details.get("exception") or {}
    text = str(exc.get("description") or details.get("text") or "error")
    return text.splitlines()[0][:500] if text else "error"


class PageErrors:
    """The uncaught JavaScript errors of one page load (a tab's ``Runtime`` events)."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def on_event(self, method: str, params: dict[str, Any]) -> None:
        if method == "Runtime.exceptionThrown" and len(self.messages) < MAX_ERRORS:
            self.messages.append(exception_message(params))


@dataclass(frozen=True)
class RenderSettings:
    """The template's rendering values, read from the crawl's Scrapy settings."""

    render: str
    render_tabs: int
    render_page_timeout_s: float
    render_min_wait_s: float
    render_max_scrolls: int
    render_pages_per_tab: int
    render_max_memory_mb: int
    render_consent: str
    render_consent_wait_s: float
    render_max_clicks: int
    render_max_expanders: int
    render_media: bool
    render_max_media: int
    render_site_behaviours: str
    render_phone: str
    render_video: str
    render_video_timeout_s: float
    render_behaviour_timeout_s: float
    download_timeout_s: float
    max_response_bytes: int
    retries: int
    user_agent: str
    resolve: dict[str, str]

    @classmethod
    def from_settings(cls, s: BaseSettings) -> RenderSettings:
        return cls(
            render=s.get("HARVESTFLOW_RENDER", "none"),
            render_tabs=s.getint("HARVESTFLOW_RENDER_TABS"),
            render_page_timeout_s=s.getfloat("HARVESTFLOW_RENDER_PAGE_TIMEOUT_S"),
            render_min_wait_s=s.getfloat("HARVESTFLOW_RENDER_MIN_WAIT_S"),
            render_max_scrolls=s.getint("HARVESTFLOW_RENDER_MAX_SCROLLS"),
            render_pages_per_tab=s.getint("HARVESTFLOW_RENDER_PAGES_PER_TAB"),
            render_max_memory_mb=s.getint("HARVESTFLOW_RENDER_MAX_MEMORY_MB"),
            render_consent=s.get("HARVESTFLOW_RENDER_CONSENT", "accept"),
            render_consent_wait_s=s.getfloat("HARVESTFLOW_RENDER_CONSENT_WAIT_S", 5.0),
            render_max_clicks=s.getint("HARVESTFLOW_RENDER_MAX_CLICKS", 20),
            render_max_expanders=s.getint("HARVESTFLOW_RENDER_MAX_EXPANDERS", 50),
            render_media=s.getbool("HARVESTFLOW_RENDER_MEDIA", True),
            render_max_media=s.getint("HARVESTFLOW_RENDER_MAX_MEDIA", 200),
            render_site_behaviours=s.get("HARVESTFLOW_RENDER_SITE_BEHAVIOURS", ""),
            render_phone=s.get("HARVESTFLOW_RENDER_PHONE", "none"),
            render_video=s.get("HARVESTFLOW_RENDER_VIDEO", "none"),
            render_video_timeout_s=s.getfloat("HARVESTFLOW_RENDER_VIDEO_TIMEOUT_S", 300.0),
            render_behaviour_timeout_s=s.getfloat("HARVESTFLOW_RENDER_BEHAVIOUR_TIMEOUT_S", 10.0),
            download_timeout_s=s.getfloat("DOWNLOAD_TIMEOUT"),
            max_response_bytes=s.getint("HARVESTFLOW_MAX_RESPONSE_BYTES"),
            retries=s.getint("RETRY_TIMES"),
            user_agent=s.get("USER_AGENT", ""),
            resolve=dict(s.getdict("HARVESTFLOW_RESOLVE")),
        )


# the record URI of each kind of screenshot: its prefix before the page's URL
SCREENSHOT_PREFIXES = {
    "viewport": "urn:screenshot:",
    "full": "urn:screenshot-full:",
    "phone": "urn:screenshot-phone:",  # the phone pass (crawler/rendering/phone.py)
    "phone-full": "urn:screenshot-phone-full:",
}


@dataclass
class Screenshot:
    kind: str  # a key of SCREENSHOT_PREFIXES
    png: bytes

    @property
    def uri_prefix(self) -> str:
        return SCREENSHOT_PREFIXES[self.kind]


@dataclass
class RenderOutcome:
    links: list[tuple[str, str, str]] = field(default_factory=list)
    screenshots: list[Screenshot] = field(default_factory=list)
    error: str = ""
    resources: int = 0
    actions: list[Action] = field(default_factory=list)  # what the behaviours did
    videos: list[dict[str, Any]] = field(default_factory=list)  # yt-dlp's info JSON
    # what the QA pass compares the replay with (crawler/rendering/qa_pass.py; only when QA is on)
    text: str = ""
    js_errors: list[str] = field(default_factory=list)
