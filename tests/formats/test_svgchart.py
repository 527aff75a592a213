"""SVG charts written as text: a bar chart is a well-formed SVG document (read by an XML
parser) whose bars carry their figures and are drawn in proportion, and a hostile label can
neither add markup nor make the file unreadable."""

from __future__ import annotations

from xml.etree import ElementTree

import pytest

from harvestflow.formats.svgchart import Series, bar_chart, line_chart

SVG = "{http://www.w3.org/2000/svg}"


def _bars(svg: str) -> list[ElementTree.Element]:
    root = ElementTree.fromstring(svg.encode("utf-8"))
    assert root.tag == f"{SVG}svg"
    return [r for r in root.iter(f"{SVG}rect") if r.get("class") == "bar"]


def test_bars_carry_their_figures_in_order_and_in_proportion() -> None:
    svg = bar_chart("Response codes", ["200 OK", "404 Not Found", "-6 DNS"], [900, 45, 0], "lines")
    bars = _bars(svg)
    assert [(b.get("data-label"), b.get("data-value")) for b in bars] == [
        ("200 OK", "900"), ("404 Not Found", "45"), ("-6 DNS", "0")]  # fmt: skip
    widths = [float(b.get("width", "")) for b in bars]
    assert widths[0] > 0 and widths[2] == 0
    assert widths[1] == pytest.approx(widths[0] * 45 / 900, abs=0.01)
    ys = [float(b.get("y", "")) for b in bars]
    assert ys == sorted(ys)  # first label on top
    # a share keeps its exact value in data-value, 4 digits beside the bar
    shares = _bars(bar_chart("MIME", ["text", "image"], [100 * 2 / 3, 100 / 3], "%"))
    assert float(shares[0].get("data-value", "")) == 100 * 2 / 3


def test_hostile_labels_are_text_and_the_file_stays_well_formed() -> None:
    hostile = '<script>alert(1)</script>"&\x00\x1b\ud800.example'
    svg = bar_chart("a </title><script>", [hostile, "x" * 300], [1, 2], "<unit>")
    root = ElementTree.fromstring(svg.encode("utf-8"))
    assert not [e for e in root.iter() if e.tag.endswith("script")]
    bars = _bars(svg)
    assert bars[0].get("data-label") == '<script>alert(1)</script>"&\ufffd\ufffd\ufffd.example'
    assert bars[1].get("data-label") == "x" * 300  # whole in the data, cut where shown
    shown = [t.text for t in root.iter(f"{SVG}text")]
    assert "x" * 39 + "…" in shown and "x" * 40 not in shown
    inline = line_chart("t", ["<a>", "b"], [Series("<s>\x00", [1.0, 2.0])])
    ElementTree.fromstring(f"<div>{inline}</div>".encode())


def test_empty_chart_and_mismatched_figures() -> None:
    assert _bars(bar_chart("Origins", [], [], "%")) == []
    with pytest.raises(ValueError, match="2 labels for 1 values"):
        bar_chart("Origins", ["a", "b"], [1.0], "%")
