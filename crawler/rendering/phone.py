"""The phone pass of a rendered page: the page rendered a second time at a phone's viewport,
pixel ratio, touch and user agent (template setting ``render_phone``: ``none``, ``seeds`` or
``all`` rendered pages).

Why a second pass: responsive sites load other resources on a phone — ``<picture>`` sources
and ``srcset`` candidates chosen by media query, stylesheets of ``media="(max-width…)"``,
scripts that sniff the user agent or the screen — and a reader on a phone gets a page the
desktop pass never requested. The pass runs in the same tab (crawler/rendering/renderer.py), after the
desktop one: what both layouts load is served back from the first capture, what only the
phone layout loads is captured through the crawl like any request of the page; its screenshots
are kept beside the desktop ones (``urn:screenshot-phone:URL``, ``urn:screenshot-phone-full:URL``).

The emulated user agent is the browser's (``navigator.userAgent``, client hints), so scripts
choose their phone variant; the requests themselves reach sites through the crawl, under the
job's user agent like every other request (the archive identifies itself).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from crawler.rendering.cdp import CdpError

if TYPE_CHECKING:
    from crawler.rendering.cdp import Browser

log = logging.getLogger(__name__)

PHONE_MODES = ("none", "seeds", "all")
# a common phone of the day (CSS pixels, ratio): Google Pixel 7
WIDTH, HEIGHT, RATIO = 412, 915, 2.625
PHONE_AGENT = (
    "Mozilla/5.0 (Linux; Android 14; Pixel 7) AppleWebKit/537.36 (KHTML, like Gecko)"
    " Chrome/131.0.0.0 Mobile Safari/537.36"
)
# the screenshots' kinds of the phone pass (the desktop pass's: viewport, full)
PHONE_KINDS = {"viewport": "phone", "full": "phone-full"}


def wants_phone(mode: str, hf: dict[str, Any]) -> bool:
    """Whether a rendered page gets the phone pass: ``seeds`` (hops only redirects) or
    ``all``."""
    if mode == "all":
        return True
    return mode == "seeds" and str(hf.get("hops", "")).strip("R") == ""


def phone_metrics(height: int = HEIGHT) -> dict[str, Any]:
    """``Emulation.setDeviceMetricsOverride``'s parameters of the phone (``height``: a
    full-page screenshot's)."""
    return {"width": WIDTH, "height": height, "deviceScaleFactor": RATIO, "mobile": True}


def desktop_metrics(width: int, height: int) -> dict[str, Any]:
    """The same for the desktop window at ``width`` (its own pixel ratio kept: 0)."""
    return {"width": width, "height": height, "deviceScaleFactor": 0, "mobile": False}


def phone_agent(job_agent: str) -> str:
    """The phone's user agent, the job's own after it (a site's logs still name the archive)."""
    return f"{PHONE_AGENT} {job_agent}".strip()


async def emulate_phone(browser: Browser, session: str, job_agent: str) -> None:
    """The tab made a phone before it navigates: viewport, pixel ratio, touch, user agent."""
    await browser.send("Emulation.setDeviceMetricsOverride", phone_metrics(), session=session)
    await browser.send(
        "Emulation.setTouchEmulationEnabled",
        {"enabled": True, "maxTouchPoints": 5},
        session=session,
    )
    await browser.send(
        "Emulation.setUserAgentOverride",
        {
            "userAgent": phone_agent(job_agent),
            "platform": "Linux armv8l",
            "userAgentMetadata": {
                "platform": "Android",
                "platformVersion": "14",
                "architecture": "",
                "model": "Pixel 7",
                "mobile": True,
            },
        },
        session=session,
    )


async def end_phone(browser: Browser, session: str, job_agent: str) -> bool:
    """The tab a desktop again for its next page; False if the browser did not answer (the
    renderer then restarts it)."""
    try:
        await browser.send("Emulation.clearDeviceMetricsOverride", session=session)
        await browser.send(
            "Emulation.setTouchEmulationEnabled", {"enabled": False}, session=session
        )
        # an empty user agent ends the override: the one the browser was started with
        await browser.send(
            "Emulation.setUserAgentOverride", {"userAgent": job_agent}, session=session
        )
    except CdpError as exc:
        log.warning("phone emulation not ended: %s", exc)
        return False
    return True
