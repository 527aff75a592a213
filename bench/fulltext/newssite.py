"""The extraction benchmark's content: news-like pages and PDFs in English and French.

Why generated rather than a real site's copy: the texts must be free to publish, as large as
asked, and the same on every run (seeded by host and page number). A page has what extraction
has to see through in real news sites: a navigation bar, a sidebar repeating it, a cookie
banner and a footer around an article of Zipf-distributed words, whose head is the language's
function words (so language detection sees real French or English). :func:`handler` serves them
as a site the crawler discovers link by link (``NewsSite`` below).
"""

from __future__ import annotations

import io
import itertools
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.crawl.make_site import png  # noqa: E402
from tests.support.minisite import Reply, Served  # noqa: E402

_EN = (
    "the of and to a in is that for it on was with as by at be this from are have not an which"
    " or has but had were their they been will more its also one new after two first would who"
    " archive web library national harvest crawl collection document heritage preservation"
    " digital record page site text search reader research history public election campaign"
    " newspaper local council government culture museum school university science report"
    " policy economy energy climate health transport housing sport music festival theatre"
    " book author publisher law court decision minister parliament region city village river"
)
_FR = (
    "de la le et les des à en un une du est que pour dans qui par sur au pas plus avec ne se ce"
    " il elle sont a ont été aux son sa ses leur cette mais comme aussi après deux premier nouvelle"
    " archives toile bibliothèque nationale collecte moissonnage collection document patrimoine"
    " conservation numérique notice page site texte recherche lecteur histoire public élection"
    " campagne journal quotidien conseil municipal gouvernement culture musée école université"
    " science rapport politique économie énergie climat santé transports logement sport musique"
    " festival théâtre livre auteur éditeur loi tribunal décision ministre assemblée région ville"
    " village rivière"
)
SYLLABLES = {"en": ("a", "e", "i", "o", "u", "ea", "oo", "ai"),
             "fr": ("a", "e", "i", "o", "u", "é", "è", "ou", "an", "on")}  # fmt: skip


def _vocabulary(lang: str, head: str, rare: int = 3000) -> list[str]:
    """The language's frequent words, then ``rare`` made-up ones (a real text's long tail)."""
    rnd = random.Random(lang)
    words = head.split()
    known, target = set(words), len(words) + rare
    while len(words) < target:
        word = "".join(
            rnd.choice("bcdfglmnprstv") + rnd.choice(SYLLABLES[lang])
            for _ in range(rnd.randint(2, 4))
        )
        if word not in known:
            known.add(word)
            words.append(word)
    return words


WORDS = {"en": _vocabulary("en", _EN), "fr": _vocabulary("fr", _FR)}  # most frequent first
# Zipf's law: the word of rank r is drawn with weight 1 / r
CUM_WEIGHTS = {lang: list(itertools.accumulate(1 / r for r in range(1, len(w) + 1)))
               for lang, w in WORDS.items()}  # fmt: skip
CHROME = {
    "en": ("Section", "We use cookies to improve your experience.", "Related", "Privacy"),
    "fr": ("Rubrique", "Nous utilisons des cookies pour améliorer votre visite.", "À lire aussi",
           "Confidentialité"),
}  # fmt: skip
SECTIONS = 25
FANOUT = 12  # an article links to its FANOUT children: every article within ~5 hops
IMAGES = 300  # distinct images per host


def sentence(rnd: random.Random, lang: str = "en") -> str:
    picked = rnd.choices(WORDS[lang], cum_weights=CUM_WEIGHTS[lang], k=rnd.randint(8, 25))
    return " ".join(picked).capitalize() + "."


def _nav(lang: str) -> str:
    name = CHROME[lang][0]
    return "".join(f'<li><a href="/s{j}/">{name} {j}</a></li>' for j in range(SECTIONS))


def html_page(rnd: random.Random, title: str, body: str, lang: str = "en") -> bytes:
    """A page of the site's template around ``body`` (the article or a list of headlines)."""
    _, cookies, related, privacy = CHROME[lang]
    nav = _nav(lang)
    return (
        f"<!doctype html><html lang='{lang}'><head><meta charset='utf-8'><title>{title}: "
        f"{sentence(rnd, lang)[:60]}</title></head><body><header><nav><ul>{nav}</ul></nav>"
        f"</header><div class='cookie'>{cookies}</div><main>{body}</main>"
        f"<aside><h3>{related}</h3><ul>{nav}</ul></aside>"
        f"<footer><p>Copyright 2026 Example. {privacy}. Contact.</p></footer></body></html>"
    ).encode()


def article(rnd: random.Random, i: int, lang: str = "en", links: str = "") -> bytes:
    """Story ``i``: 4–14 paragraphs of 2–6 sentences, then ``links`` (HTML) if any."""
    paras = "".join(
        "<p>" + " ".join(sentence(rnd, lang) for _ in range(rnd.randint(2, 6))) + "</p>"
        for _ in range(rnd.randint(4, 14))
    )
    return html_page(
        rnd, f"Story {i}", f"<article><h1>Story {i}</h1>{paras}</article>{links}", lang
    )


def pdf(rnd: random.Random, lang: str = "en") -> bytes:
    """A 1–3 page PDF written by pypdf: 40 lines of sentences per page (WinAnsi Helvetica)."""
    from pypdf import PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    writer = PdfWriter()
    for _ in range(rnd.randint(1, 3)):
        page = writer.add_blank_page(612, 792)
        lines = " ".join(
            f"BT /F1 10 Tf 50 {750 - 14 * k} Td ({sentence(rnd, lang)[:90]}) Tj ET"
            for k in range(40)
        )
        stream = DecodedStreamObject()
        stream.set_data(lines.encode("cp1252"))
        font = DictionaryObject(
            {NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"):
             NameObject("/Type1"), NameObject("/BaseFont"): NameObject("/Helvetica"),
             NameObject("/Encoding"): NameObject("/WinAnsiEncoding")}
        )  # fmt: skip
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): writer._add_object(font)})}
        )
        page[NameObject("/Contents")] = writer._add_object(stream)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


class NewsSite:
    """Virtual hosts of ``pages`` articles each, as the crawler finds them from ``/``.

    Article ``n`` (``/a/n.html``) links its ``FANOUT`` children ``n*FANOUT+1…`` (a tree: every
    article is reachable), three others, the sections, and, by ``n % 20``: a PDF (``/doc/``, 5 %;
    each payload distinct: a base PDF of the host's language with a comment after ``%%EOF``), a
    copy of article ``n // 2`` at another URL (``/copy/``, 5 %; the same payload), a dead link
    (``/gone/``, 10 %: 404) and every 50th a ``/private/`` page that robots.txt disallows.
    Each article embeds one of ``IMAGES`` PNGs. ``hosts`` maps a host name to its language;
    hosts whose index is odd send ``text/html`` without a charset (the page's meta says it).
    """

    def __init__(self, hosts: dict[str, str], pages: int) -> None:
        self.hosts = dict(hosts)
        self.pages = pages
        rnd = random.Random(22)
        self.pdfs = {lang: [pdf(rnd, lang) for _ in range(10)] for lang in WORDS}

    def _article(self, host: str, n: int) -> bytes:
        lang = self.hosts[host]
        rnd = random.Random(f"{host}/{n}")
        kids = range(n * FANOUT + 1, min(self.pages, n * FANOUT + FANOUT + 1))
        others = [rnd.randrange(self.pages) for _ in range(3)]
        links = "".join(f'<li><a href="/a/{k}.html">{k}</a></li>' for k in [*kids, *others])
        extra = {7: f"/doc/{n}.pdf", 13: f"/copy/{n}.html", 3: f"/gone/{n}.html"}.get(n % 20)
        if extra:
            links += f'<li><a href="{extra}">more</a></li>'
        if n % 50 == 11:
            links += f'<li><a href="/private/{n}.html">members</a></li>'
        img = f'<img src="/img/{n % IMAGES}.png" alt="">'
        return article(rnd, n, lang, f"{img}<ul>{links}</ul>")

    def _section(self, host: str, j: int) -> bytes:
        rnd = random.Random(f"{host}/s{j}")
        heads = "".join(
            f'<li><a href="/a/{k}.html">{sentence(rnd, self.hosts[host])[:50]}</a></li>'
            for k in range(j, min(self.pages, j + 30 * SECTIONS), SECTIONS)
        )
        return html_page(rnd, f"{CHROME[self.hosts[host]][0]} {j}", f"<ul>{heads}</ul>",
                         self.hosts[host])  # fmt: skip

    def _get(self, host: str, path: str) -> tuple[bytes, str] | None:
        kind, _, name = path.strip("/").partition("/")
        stem = name.removesuffix(".html").removesuffix(".pdf").removesuffix(".png")
        number = int(stem) if stem.isdigit() else -1
        ok = 0 <= number < self.pages
        if path == "/":
            links = "".join(f'<li><a href="/a/{k}.html">{k}</a></li>' for k in range(FANOUT))
            return html_page(random.Random(host), "Front", f"<ul>{links}</ul>",
                             self.hosts[host]), "html"  # fmt: skip
        if path == "/robots.txt":
            return b"User-agent: *\nDisallow: /private/\n", "text/plain"
        if kind == "a" and ok and name.endswith(".html"):
            return self._article(host, number), "html"
        if kind.startswith("s") and kind[1:].isdigit() and int(kind[1:]) < SECTIONS and not name:
            return self._section(host, int(kind[1:])), "html"
        if kind == "doc" and ok and number % 20 == 7:
            base = self.pdfs[self.hosts[host]][number % 10]
            return base + f"%% {host} {number}\n".encode(), "application/pdf"
        if kind == "copy" and ok and number % 20 == 13:
            return self._article(host, number // 2), "html"
        if kind == "img" and 0 <= number < IMAGES:
            return png(24 + number % 8, 16, number), "image/png"
        return None

    def handle(self, req: Served) -> Reply | None:
        if req.host not in self.hosts:
            return None
        got = self._get(req.host, req.path)
        if got is None:
            return None
        body, ctype = got
        if ctype == "html":
            odd = list(self.hosts).index(req.host) % 2
            ctype = "text/html" if odd else "text/html; charset=utf-8"
        return Reply(200, body, [("Content-Type", ctype)])
