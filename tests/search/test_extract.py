"""Text extraction of single payloads: main text without boilerplate, encodings, PDF, language."""

from __future__ import annotations

import pytest

from search.extract import ExtractionError, extract, kind_of
from tests.support.corpus import (
    BOILERPLATE_ONLY,
    EN_ARTICLE,
    FR_ARTICLE,
    LATIN1_PAGE,
    PDF,
    tiny_pdf,
)


def test_html_main_text_without_navigation_banner_and_footer() -> None:
    got = extract(EN_ARTICLE.encode(), "text/html", "text/html")
    assert got.title == "Preserving the national web"
    assert "harvests websites every year" in got.text
    assert "Rubrique 3" not in got.text and "cookies" not in got.text
    assert "Privacy policy" not in got.text
    assert got.lang == "en" and got.outlinks == 12


def test_french_page_language_and_accents() -> None:
    got = extract(FR_ARTICLE.encode(), "text/html", "text/html; charset=utf-8")
    assert got.lang == "fr"
    assert "Bibliothèque nationale collecte" in got.text
    assert "Mentions légales" not in got.text


@pytest.mark.parametrize("content_type", ["text/html; charset=iso-8859-1", "text/html"])
def test_latin1_page_declared_or_not(content_type: str) -> None:
    got = extract(LATIN1_PAGE.encode("latin-1"), "text/html", content_type)
    assert got.title == "Bibliothèque municipale"
    assert "Sèvres" in got.text and "août" in got.text


def test_a_page_whose_text_is_only_boilerplate_keeps_it() -> None:
    got = extract(BOILERPLATE_ONLY.encode(), "text/html")
    assert "Reading room quetzalcoatl hours" in got.text
    assert "5 rue Quetzalcoatl" in got.text


def test_pdf_text_and_title() -> None:
    got = extract(PDF, "application/pdf")
    assert got.title == "Dirigible annual report"
    assert "dirigible preservation programme" in got.text
    untitled = extract(
        tiny_pdf("Only a body line here", "").replace(b"/Title ()", b""), "application/pdf"
    )
    assert untitled.title == "Only a body line here"


def test_a_broken_pdf_is_an_extraction_error() -> None:
    with pytest.raises(ExtractionError, match="unreadable PDF"):
        extract(b"%PDF-1.4\n1 0 obj garbage", "application/pdf")


def test_plain_text_and_unknown_types() -> None:
    got = extract(b"Premier ligne\nla suite du texte", "text/plain", "text/plain")
    assert (got.title, got.text) == ("Premier ligne", "Premier ligne\nla suite du texte")
    assert kind_of("image/png") is None
    with pytest.raises(ExtractionError):
        extract(b"\x89PNG", "image/png")
