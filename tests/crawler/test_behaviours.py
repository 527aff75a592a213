"""Behaviours of rendered pages (crawler/rendering/behaviours/): consent walls answered (autoconsent's
rule for a OneTrust dialog, our wording table for a French banner and a German dialog in a
cross-site iframe) and the answer kept for the host's next page, a "Load more" list clicked to
its end or to ``render_max_clicks``, expanders opened, media candidates fetched and audio
played, a curator's site behaviour run — each judged by the WARC records (what only the action
loads is captured), the page's crawl.log annotations and ``reports/behaviours-report.txt``.

The site is served compressed, as production servers serve it (``scriptsite.compressed``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import urllib.parse
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from crawler.rendering.behaviours.consent import VENDOR
from crawler.rendering.behaviours.run import page_js
from crawler.rendering.behaviours.sites import load_site_behaviours, parse_behaviour
from crawler.rendering.behaviours.wording import CONSENT_HINTS, consent_words
from crawler.rendering.cdp import Browser, find_chromium
from harvestflow.contracts.jobspec import JobSpec, JobSpecError
from tests.support import behavioursite as bs
from tests.support.crawl import CrawlResult

Crawled = tuple[CrawlResult, str, set[str]]
SEEDS = ("/onetrust.html", "/more.html", "/expand.html", "/media.html", "/special.html")


def _crawl(
    tmp: Path, seeds: tuple[str, ...], walls: tuple[tuple[str, str], ...] = (), **template: object
) -> Crawled:
    find_chromium()
    return bs.crawl(tmp / "out", seeds, walls, **template)


@pytest.fixture(scope="module")
def accepted(tmp_path_factory: pytest.TempPathFactory) -> Crawled:
    folder = tmp_path_factory.mktemp("behaviours")
    (folder / "reading-room.js").write_text(bs.SPECIAL_BEHAVIOUR)
    (folder / "broken.js").write_text("// @match (unclosed\nreturn 1;\n")
    walls = ((bs.MOT_HOST, "/mot.html"), (bs.CADRE_HOST, "/cadre.html"))
    tmp = tmp_path_factory.mktemp("accept")
    return _crawl(tmp, SEEDS, walls, render_site_behaviours=str(folder))


def _on(prefix: str, host: str) -> str:
    return prefix.replace(bs.HOST, host)


def _notes(result: CrawlResult, url: str) -> list[str]:
    return result.line_for(url)[11].split(",")


def _report(result: CrawlResult) -> list[list[str]]:
    lines = (result.out / "reports" / "behaviours-report.txt").read_text().splitlines()
    assert lines[0] == "[page] [behaviour] [action] [count] [detail]"
    return [line.split(" ") for line in lines[1:]]


def test_a_onetrust_wall_is_accepted_by_autoconsents_rule(accepted: Crawled) -> None:
    result, prefix, captured = accepted
    page = prefix + "/onetrust.html"
    assert prefix + "/api/story-onetrust.json" in captured
    assert prefix + bs.story_image("onetrust") in captured  # loaded only after "accept"
    notes = _notes(result, page)
    assert "rendered" in notes and "consent:accept:Onetrust" in notes, notes
    assert [page, "consent", "accept", "1", "Onetrust"] in _report(result)


def test_a_french_banner_is_accepted_by_its_wording(accepted: Crawled) -> None:
    result, prefix, captured = accepted
    prefix = _on(prefix, bs.MOT_HOST)
    assert prefix + bs.story_image("mot") in captured
    assert "consent:accept:wording" in _notes(result, prefix + "/mot.html")


def test_a_dialog_in_a_cross_site_iframe_is_accepted(accepted: Crawled) -> None:
    result, prefix, captured = accepted
    assert _on(prefix, bs.CMP_HOST) + "/dialog.html" in captured
    prefix = _on(prefix, bs.CADRE_HOST)
    assert prefix + bs.story_image("cadre") in captured
    assert "consent:accept:wording" in _notes(result, prefix + "/cadre.html")


def test_the_hosts_answer_is_kept_for_its_next_page(accepted: Crawled) -> None:
    result, prefix, captured = accepted
    page = prefix + "/onetrust-2.html"
    assert prefix + bs.story_image("onetrust-2") in captured  # shown at once: cookie kept
    notes = _notes(result, page)
    assert "consent:kept" in notes, notes
    assert not [n for n in notes if n.startswith("consent:accept")], notes  # not asked again


def test_load_more_is_clicked_until_the_list_ends(accepted: Crawled) -> None:
    result, prefix, captured = accepted
    for n in range(4, 3 * bs.PAGES + 1):
        assert prefix + bs.list_image(n) in captured, n
    assert f"clicks:{bs.PAGES - 1}" in _notes(result, prefix + "/more.html")


def test_details_accordions_and_tabs_are_opened(accepted: Crawled) -> None:
    result, prefix, captured = accepted
    for name in bs.PANELS:
        assert f"{prefix}/img/panel-{name}.png" in captured, name
    assert "expanded:3" in _notes(result, prefix + "/expand.html")


def test_media_candidates_are_fetched_and_audio_played(accepted: Crawled) -> None:
    result, prefix, captured = accepted
    missing = [p for p in bs.MEDIA_PATHS if prefix + p not in captured]
    assert not missing
    notes = _notes(result, prefix + "/media.html")
    fetched = [n for n in notes if n.startswith("autofetch:")]
    assert fetched and int(fetched[0].split(":")[1]) >= 4, notes
    assert "played:1" in notes, notes


def test_a_site_behaviour_runs_on_the_pages_its_pattern_matches(accepted: Crawled) -> None:
    result, prefix, captured = accepted
    assert prefix + "/img/special.png" in captured
    assert "behaviour:reading-room" in _notes(result, prefix + "/special.html")
    assert not [n for n in _notes(result, prefix + "/more.html") if n.startswith("behaviour:")]
    log = (result.out / "logs" / "crawler.log").read_text()
    assert re.search(r"site behaviour .*broken\.js left out: line 1: bad @match", log)


def test_every_rendered_page_has_its_lines_in_the_behaviour_report(accepted: Crawled) -> None:
    result, prefix, _ = accepted
    pages = {line[0] for line in _report(result)}
    walls = {_on(prefix, bs.MOT_HOST) + "/mot.html", _on(prefix, bs.CADRE_HOST) + "/cadre.html"}
    assert {prefix + s for s in SEEDS} | {prefix + "/onetrust-2.html"} | walls <= pages
    assert [prefix + "/more.html", "load-more", "click", str(bs.PAGES - 1), "load%20more"] in [
        line[:5] for line in _report(result)
    ]
    # kept with the job's other reports in its metadata WARC
    report = (result.out / "reports" / "behaviours-report.txt").read_bytes()
    (meta,) = [w for w in (result.out / "warcs").glob("*.warc.gz") if "metadata" in w.name]
    with meta.open("rb") as fh:
        kept = {
            rec.rec_headers.get_header("WARC-Target-URI").split("?")[0]: rec.content_stream().read()
            for rec in ArchiveIterator(fh)
            if rec.rec_type == "metadata"
        }
    found = [body for uri, body in kept.items() if uri.endswith("/reports/behaviours-report.txt")]
    assert found == [report]


def test_reject_declines_and_max_clicks_bounds_the_clicks(tmp_path: Path) -> None:
    result, prefix, captured = _crawl(
        tmp_path, ("/onetrust.html", "/more.html"), render_consent="reject", render_max_clicks=1,
        max_hops=0,
    )  # fmt: skip
    assert "consent:reject:Onetrust" in _notes(result, prefix + "/onetrust.html")
    assert prefix + "/api/story-onetrust.json" not in captured  # a reader who refused
    assert "clicks:1" in _notes(result, prefix + "/more.html")
    assert prefix + bs.list_image(4) in captured
    assert prefix + bs.list_image(7) not in captured  # the second click was not made


def test_the_shipped_autoconsent_files_are_the_ones_its_notice_names() -> None:
    notice = (VENDOR / "NOTICE").read_text()
    for name in ("autoconsent.playwright.js", "rules.json"):
        digest = hashlib.sha256((VENDOR / name).read_bytes()).hexdigest()
        assert f"{digest}  {name}" in notice, name
    assert "Mozilla Public License" in (VENDOR / "LICENSE").read_text()


def test_a_behaviour_file_without_a_pattern_is_refused_with_its_reason(tmp_path: Path) -> None:
    (tmp_path / "a.js").write_text("// @name a\nreturn 1;\n")
    with pytest.raises(ValueError, match="no '// @match"):
        parse_behaviour(tmp_path / "a.js", 10)
    (tmp_path / "b.js").write_text("// @match ^https://b\\.example/\n// @timeout 3\nreturn 2;\n")
    (behaviour,) = load_site_behaviours(str(tmp_path), 10)
    assert (behaviour.name, behaviour.timeout_s) == ("b", 3.0)
    assert behaviour.matches("https://b.example/x") and not behaviour.matches("https://c.example/")


def test_hide_removes_the_dialog_without_answering_it(tmp_path: Path) -> None:
    result, prefix, captured = _crawl(
        tmp_path, (), ((bs.MOT_HOST, "/mot.html"),), render_consent="hide", max_hops=0
    )
    prefix = _on(prefix, bs.MOT_HOST)
    assert "consent:hide:wording" in _notes(result, prefix + "/mot.html")
    assert prefix + "/api/story-mot.json" not in captured  # nothing behind it was loaded


def test_a_template_with_an_unknown_consent_choice_is_refused_by_name() -> None:
    job = {"job_id": 1, "seeds": ["http://a.test/"], "template": {"render_consent": "maybe"}}
    with pytest.raises(JobSpecError, match="render_consent must be accept, reject, hide or none"):
        JobSpec.from_dict(job, "job.json")


def test_a_click_that_leaves_the_page_brings_it_back_and_ends_the_behaviours(
    tmp_path: Path,
) -> None:
    result, prefix, captured = _crawl(tmp_path, ("/leave.html",))
    page = prefix + "/leave.html"
    assert prefix + "/gone.html" in captured  # where the click went (the browser asked)
    notes = _notes(result, page)
    assert notes[-2:] == ["expanded:1", "left-page"], notes  # nothing ran after it
    kept = result.line_for(prefix + "/kept.html")  # the page's own rendered DOM, back
    assert (kept[4], kept[5]) == ("L", page), kept
    assert [page, "page", "left", "1", prefix + "/gone.html"] in _report(result)
    shots = (result.out / "reports" / "screenshots-report.txt").read_text()
    assert f"{page} full" in shots


# a consent banner in each language of the wording table: its text, its accept and reject button
BANNERS = {
    "en": ("We use cookies to improve your experience.", "Accept all cookies", "Reject all"),
    "fr": ("Nous utilisons des cookies.", "Tout accepter", "Tout refuser"),
    "de": ("Wir verwenden Cookies.", "Alle akzeptieren", "Alle ablehnen"),
    "es": ("Utilizamos cookies propias y de terceros.", "Aceptar todo", "Rechazar todo"),
    "it": ("Questo sito utilizza cookie.", "Accetta tutto", "Rifiuta tutto"),
    "nl": ("Wij gebruiken cookies.", "Alles accepteren", "Alles weigeren"),
    "sv": ("Vi använder kakor (cookies).", "Acceptera alla", "Avvisa alla"),
    "da": ("Vi bruger cookies.", "Tillad alle", "Afvis alle"),
    "no": ("Vi bruker informasjonskapsler.", "Godta alle", "Avslå alle"),
    "fi": ("Käytämme evästeitä.", "Hyväksy kaikki", "Hylkää kaikki"),
    "is": ("Við notum vafrakökur.", "Samþykkja allt", "Hafna öllu"),
}


def test_the_wording_fallback_answers_a_banner_in_each_language() -> None:
    """page.js's consent step, in Chromium, on a fixed banner of each language: the button of
    the template's choice is clicked, the other never; a button of the same wording outside a
    consent box (no cookie wording around it) is not clicked."""

    async def clicked(browser: Browser, session: str, html: str, mode: str) -> object:
        url = "data:text/html;charset=utf-8," + urllib.parse.quote(html)
        await browser.send("Page.navigate", {"url": url}, session=session)
        await asyncio.sleep(0.3)
        args = json.dumps([consent_words(mode), list(CONSENT_HINTS)])
        result = await browser.send(
            "Runtime.evaluate",
            {"expression": f"({page_js()}).consent(...{args})", "returnByValue": True},
            session=session,
        )
        return result["result"]["value"].get("clicked")

    async def run() -> dict[tuple[str, str], object]:
        browser = Browser(None)
        await browser.start()
        try:
            session = await browser.open_tab()
            await browser.send("Page.enable", session=session)
            out: dict[tuple[str, str], object] = {}
            for lang, (text, yes, no) in BANNERS.items():
                banner = (
                    '<div style="position:fixed;bottom:0;left:0;right:0;padding:10px">'
                    f"<p>{text}</p><button>{yes}</button> <button>{no}</button></div>"
                )
                for mode in ("accept", "reject"):
                    out[(lang, mode)] = await clicked(browser, session, banner, mode)
            plain = "<p>Welcome</p><button>Accept</button>"  # not a consent box
            out[("plain", "accept")] = await clicked(browser, session, plain, "accept")
            return out
        finally:
            await browser.close()

    find_chromium()
    got = asyncio.run(run())
    for lang, (_, yes, no) in BANNERS.items():
        assert got[(lang, "accept")] == yes.lower(), (lang, got[(lang, "accept")])
        assert got[(lang, "reject")] == no.lower(), (lang, got[(lang, "reject")])
    assert got[("plain", "accept")] is None
