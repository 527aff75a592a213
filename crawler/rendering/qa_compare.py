"""What the QA pass compares between a page's capture and its replay, and the page's score.

Why these measures (those of Browsertrix's QA, computed cheaply): the requests the archive could
not serve, the share of differing pixels between the two viewport screenshots at the top after
the same behaviours and scroll (not the full pages: the replay's full-page screenshot was a
fifth of its browser CPU, bench/render_qa, and what breaks below the fold is a missing request
or a changed text), a text similarity between the two DOM texts, and the JavaScript errors only
the replay raised. Pixels are compared at half resolution with Pillow: a channel differing by
more than ``PIXEL_TOLERANCE`` makes a pixel differ, the part one screenshot lacks differs. The
text similarity is the Dice coefficient of the word multisets: linear, order-blind (a moved
block is not broken), 1.0 for two empty pages.

The score (0–100) multiplies the share of the replay's requests served, the share of identical
pixels and the text similarity, halved when the replay raised new errors; below the template's
``qa_min_score`` a page is below threshold.
"""

from __future__ import annotations

import io
import re
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PIL import Image
    from scrapy.settings import BaseSettings

PIXEL_TOLERANCE = 24  # of 255, per channel
MAX_TEXT_CHARS = 2_000_000  # of a page's DOM text compared (a bigger one is compared cut)
# the parts of an error message that change from one load to the next (line:column, URLs with
# their query, numbers): left out when a replay's error is matched with the capture's
_VARIABLE = re.compile(r"https?://\S+|\d+")


@dataclass(frozen=True)
class QaSettings:
    """The template's QA values, read from the crawl's Scrapy settings."""

    qa: bool
    qa_patch: bool
    qa_page_budget_s: float
    qa_min_score: float
    qa_max_below_share: float

    @classmethod
    def from_settings(cls, s: BaseSettings) -> QaSettings:
        return cls(
            qa=s.getbool("HARVESTFLOW_QA", False),
            qa_patch=s.getbool("HARVESTFLOW_QA_PATCH", False),
            qa_page_budget_s=s.getfloat("HARVESTFLOW_QA_PAGE_BUDGET_S", 30.0),
            qa_min_score=s.getfloat("HARVESTFLOW_QA_MIN_SCORE", 80.0),
            qa_max_below_share=s.getfloat("HARVESTFLOW_QA_MAX_BELOW_SHARE", 0.2),
        )


def _image(png: bytes) -> Image.Image:
    from PIL import Image  # Pillow: only in a crawl that checks its pages

    image = Image.open(io.BytesIO(png))
    image.load()
    return image.convert("RGB").reduce(2)


def pixel_diff_share(capture_png: bytes, replay_png: bytes) -> float:
    """The share (0–1) of pixels that differ between two screenshots (see the module doc)."""
    from PIL import ImageChops

    a, b = _image(capture_png), _image(replay_png)
    width, height = max(a.width, b.width), max(a.height, b.height)
    common = (min(a.width, b.width), min(a.height, b.height))
    box = (0, 0, *common)
    diff = ImageChops.difference(a.crop(box), b.crop(box))
    r, g, bl = diff.split()
    channel = ImageChops.lighter(ImageChops.lighter(r, g), bl)
    differing = channel.point(lambda v: 255 if v > PIXEL_TOLERANCE else 0).histogram()[255]
    differing += width * height - common[0] * common[1]
    return differing / (width * height)


def text_similarity(capture: str, replay: str) -> float:
    """The Dice coefficient (0–1) of the two texts' word multisets."""
    a = Counter(capture[:MAX_TEXT_CHARS].split())
    b = Counter(replay[:MAX_TEXT_CHARS].split())
    total = sum(a.values()) + sum(b.values())
    if total == 0:
        return 1.0
    return 2 * sum((a & b).values()) / total


def error_key(message: str) -> str:
    """An error message without what changes between loads (numbers, URLs)."""
    return _VARIABLE.sub("", message.splitlines()[0] if message else "").strip()


def new_errors(capture: list[str], replay: list[str]) -> list[str]:
    """The replay's errors whose message the capture never raised."""
    seen = {error_key(m) for m in capture}
    return [m for m in replay if error_key(m) not in seen]


def score(requests: int, missing: int, pixel_diff: float, text: float, errors: int) -> float:
    """The page's score (0–100): see the module doc."""
    served = 1.0 - missing / requests if requests else 1.0
    value = 100.0 * max(served, 0.0) * (1.0 - pixel_diff) * text
    if errors:
        value /= 2
    return round(value, 1)
