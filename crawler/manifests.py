"""Links of adaptive-stream manifests: HLS playlists (``.m3u8``) and DASH MPDs (``.mpd``).

Why: a player fetches the segments of one rendition only while it plays, so a headless capture
gets a few seconds at best and replay stalls. The crawler reads the manifest itself and fetches
the segments as embeds (hop ``E``), of the renditions the template's ``media_renditions`` picks
(``extremes``: lowest and highest bandwidth; ``all``). Every list is bounded
(:data:`MAX_SEGMENTS` per rendition) against hostile manifests.
"""

from __future__ import annotations

import logging
import math
import re
from typing import Any
from urllib.parse import urljoin, urlsplit

from lxml import etree

# an element of lxml's tree (its class, Element, is private to lxml)
Element = Any

log = logging.getLogger(__name__)

MAX_SEGMENTS = 5000  # per rendition
HLS_TYPES = frozenset(
    {"application/vnd.apple.mpegurl", "application/x-mpegurl", "audio/mpegurl", "audio/x-mpegurl"}
)
DASH_TYPES = frozenset({"application/dash+xml"})
_ATTR = re.compile(r'([A-Z0-9-]+)=("[^"]*"|[^,]*)')
_DURATION = re.compile(
    r"^P(?:(?P<d>\d+(?:\.\d+)?)D)?(?:T(?:(?P<h>\d+(?:\.\d+)?)H)?(?:(?P<m>\d+(?:\.\d+)?)M)?"
    r"(?:(?P<s>\d+(?:\.\d+)?)S)?)?$"
)
_TEMPLATE_VAR = re.compile(r"\$(RepresentationID|Bandwidth|Number|Time)(?:%0(\d+)d)?\$|\$\$")

Link = tuple[str, str, str]


def manifest_kind(mime: str, url: str) -> str | None:
    """``"hls"``, ``"dash"`` or None, from the response's MIME type or else the URL's path."""
    if mime in HLS_TYPES:
        return "hls"
    if mime in DASH_TYPES:
        return "dash"
    path = urlsplit(url).path.lower()
    if path.endswith(".m3u8"):
        return "hls"
    if path.endswith(".mpd"):
        return "dash"
    return None


def _choose(renditions: list[tuple[float, list[str]]], choice: str) -> list[list[str]]:
    """The renditions' URL lists kept: all, or the lowest and highest bandwidth."""
    if choice == "all" or len(renditions) <= 2:
        return [urls for _, urls in renditions]
    ordered = sorted(renditions, key=lambda r: r[0])
    return [ordered[0][1], ordered[-1][1]]


def _attributes(line: str) -> dict[str, str]:
    return {k: v.strip('"') for k, v in _ATTR.findall(line.split(":", 1)[-1])}


def hls_links(text: str, base: str, choice: str = "extremes") -> list[Link]:
    """The URLs an HLS playlist refers to (variants chosen by ``choice``)."""
    lines = [ln.strip() for ln in text.splitlines()]
    if not lines or not lines[0].startswith("#EXTM3U"):
        return []
    links: list[Link] = []
    variants: list[tuple[float, list[str]]] = []
    segments: list[str] = []
    pending: dict[str, str] | None = None  # the #EXT-X-STREAM-INF waiting for its URI line
    for line in lines[1:]:
        if not line:
            continue
        if line.startswith("#EXT-X-STREAM-INF"):
            pending = _attributes(line)
        elif line.startswith(("#EXT-X-MEDIA:", "#EXT-X-MAP:", "#EXT-X-KEY:")):
            uri = _attributes(line).get("URI")
            if uri and not uri.startswith("data:"):
                links.append((urljoin(base, uri), "E", "hls"))
        elif line.startswith("#"):
            continue
        elif pending is not None:
            try:
                bandwidth = float(pending.get("BANDWIDTH", "0"))
            except ValueError:
                bandwidth = 0.0
            variants.append((bandwidth, [urljoin(base, line)]))
            pending = None
        elif len(segments) < MAX_SEGMENTS:
            segments.append(urljoin(base, line))
    for urls in _choose(variants, choice):
        links += [(u, "E", "hls") for u in urls]
    links += [(u, "E", "hls") for u in segments]
    return links


def _seconds(value: str | None) -> float | None:
    m = _DURATION.match(value or "")
    if not m or not any(m.groupdict().values()):
        return None
    parts = {k: float(v) if v else 0.0 for k, v in m.groupdict().items()}
    return parts["d"] * 86400 + parts["h"] * 3600 + parts["m"] * 60 + parts["s"]


def _local(el: Element) -> str:
    tag = el.tag if isinstance(el.tag, str) else ""
    return tag.rsplit("}", 1)[-1]


def _child(el: Element, name: str) -> Element | None:
    return next((c for c in el if _local(c) == name), None)


def _base(el: Element, base: str) -> str:
    found = _child(el, "BaseURL")
    return urljoin(base, (found.text or "").strip()) if found is not None else base


def _fill(template: str, rep_id: str, bandwidth: str, number: int, time: int) -> str:
    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        value = {"RepresentationID": rep_id, "Bandwidth": bandwidth}.get(m.group(1))
        if value is not None:
            return value
        n = number if m.group(1) == "Number" else time
        return f"{n:0{int(m.group(2))}d}" if m.group(2) else str(n)

    return _TEMPLATE_VAR.sub(sub, template)


def _template_urls(
    tpl: Element, base: str, rep_id: str, bandwidth: str, total: float | None
) -> list[str]:
    urls: list[str] = []
    init = tpl.get("initialization")
    if init:
        urls.append(urljoin(base, _fill(init, rep_id, bandwidth, 0, 0)))
    media = tpl.get("media")
    if not media:
        return urls
    number = int(tpl.get("startNumber") or 1)
    timeline = _child(tpl, "SegmentTimeline")
    times: list[int] = []
    if timeline is not None:
        t = 0
        for s in timeline:
            if _local(s) != "S":
                continue
            t = int(s.get("t") or t)
            d, r = int(s.get("d") or 0), int(s.get("r") or 0)
            for _ in range(max(r, 0) + 1):
                if len(times) >= MAX_SEGMENTS:
                    break
                times.append(t)
                t += d
    else:
        duration, scale = float(tpl.get("duration") or 0), float(tpl.get("timescale") or 1)
        if duration <= 0 or not total:
            return urls
        count = min(math.ceil(total / (duration / scale)), MAX_SEGMENTS)
        times = [int(i * duration) for i in range(count)]
    for i, t in enumerate(times):
        urls.append(urljoin(base, _fill(media, rep_id, bandwidth, number + i, t)))
    return urls


def dash_links(body: bytes, base: str, choice: str = "extremes") -> list[Link]:
    """The URLs a DASH MPD refers to (representations chosen by ``choice``, per set)."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)
    try:
        root = etree.fromstring(body, parser)
    except etree.XMLSyntaxError as exc:
        log.info("%s: not a readable MPD (%s)", base, exc)
        return []
    if _local(root) != "MPD":
        return []
    total = _seconds(root.get("mediaPresentationDuration"))
    links: list[Link] = []
    mpd_base = _base(root, base)
    for period in (p for p in root if _local(p) == "Period"):
        period_base = _base(period, mpd_base)
        length = _seconds(period.get("duration")) or total
        for aset in (a for a in period if _local(a) == "AdaptationSet"):
            set_base = _base(aset, period_base)
            set_tpl = _child(aset, "SegmentTemplate")
            reps: list[tuple[float, list[str]]] = []
            for rep in (r for r in aset if _local(r) == "Representation"):
                rep_base = _base(rep, set_base)
                rep_id, bandwidth = rep.get("id") or "", rep.get("bandwidth") or "0"
                tpl = _child(rep, "SegmentTemplate")
                tpl = tpl if tpl is not None else set_tpl
                seg_list = _child(rep, "SegmentList")
                if tpl is not None:
                    urls = _template_urls(tpl, rep_base, rep_id, bandwidth, length)
                elif seg_list is not None:
                    init = _child(seg_list, "Initialization")
                    urls = (
                        [urljoin(rep_base, init.get("sourceURL") or "")] if init is not None else []
                    )
                    urls += [
                        urljoin(rep_base, s.get("media") or "")
                        for s in seg_list
                        if _local(s) == "SegmentURL" and s.get("media")
                    ][:MAX_SEGMENTS]
                else:
                    urls = [rep_base] if rep_base != set_base else []
                try:
                    reps.append((float(bandwidth), urls))
                except ValueError:
                    reps.append((0.0, urls))
            for urls in _choose(reps, choice):
                links += [(u, "E", "dash") for u in urls]
    return links


def manifest_links(kind: str, body: bytes, base: str, choice: str = "extremes") -> list[Link]:
    """The links of an HLS or DASH manifest (``kind`` from :func:`manifest_kind`)."""
    if kind == "hls":
        return hls_links(body.decode("utf-8", "replace"), base, choice)
    return dash_links(body, base, choice)
