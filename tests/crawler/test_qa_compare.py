"""The QA pass's measures, each on inputs whose answer is known by construction: screenshots
drawn with Pillow, texts, error messages."""

from __future__ import annotations

import io

import pytest
from PIL import Image, ImageDraw

from crawler.rendering.qa_compare import new_errors, pixel_diff_share, score, text_similarity


def _png(
    width: int, height: int, boxes: list[tuple[int, int, int, int]] = (), shade: int = 0
) -> bytes:
    image = Image.new("RGB", (width, height), (255 - shade, 255, 255))
    draw = ImageDraw.Draw(image)
    for box in boxes:
        draw.rectangle(box, fill=(0, 0, 0))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def test_identical_screenshots_differ_nowhere() -> None:
    assert pixel_diff_share(_png(200, 100), _png(200, 100)) == 0.0


def test_a_black_box_over_a_tenth_of_the_page_is_a_tenth_of_its_pixels() -> None:
    # 100 × 20 of 200 × 100 (corners on even pixels: the half-resolution grid)
    assert pixel_diff_share(_png(200, 100), _png(200, 100, [(0, 0, 99, 19)])) == 0.1


def test_the_part_one_screenshot_lacks_differs_wholly() -> None:
    """A replay whose page is half as tall (same top): half the larger page differs."""
    assert pixel_diff_share(_png(200, 200), _png(200, 100)) == 0.5


def test_a_slight_shade_like_anti_aliasing_is_not_a_difference() -> None:
    assert pixel_diff_share(_png(200, 100), _png(200, 100, shade=10)) == 0.0


def test_text_similarity_of_equal_reordered_disjoint_and_empty_texts() -> None:
    assert text_similarity("the archive keeps pages", "the archive keeps pages") == 1.0
    assert text_similarity("one two three four", "three four one two") == 1.0  # order-blind
    assert text_similarity("one two", "three four") == 0.0
    assert text_similarity("", "") == 1.0
    assert text_similarity("a a b c", "a b") == pytest.approx(2 * 2 / 6)


def test_an_error_raised_at_capture_too_is_not_new_even_at_another_line() -> None:
    capture = ["TypeError: x is undefined at http://s.test/app.js?v=1:10:5"]
    replay = [
        "TypeError: x is undefined at http://s.test/app.js?v=2:12:7",
        "Error: feed unavailable",
    ]
    assert new_errors(capture, replay) == ["Error: feed unavailable"]


def test_the_score_multiplies_what_survived_and_halves_for_new_errors() -> None:
    assert score(10, 0, 0.0, 1.0, 0) == 100.0
    assert score(4, 1, 0.0, 1.0, 0) == 75.0  # a quarter of the requests not served
    assert score(4, 1, 0.2, 0.5, 0) == 30.0
    assert score(4, 0, 0.0, 1.0, 2) == 50.0
    assert score(0, 0, 0.0, 1.0, 0) == 100.0  # no request (an empty page) loses nothing
