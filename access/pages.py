"""The readers' own pages, rendered in their language: home, "not archived", refusal, errors.

Why Jinja2 with autoescaping: every value (a curator's tour text, a reader's typed address) is
escaped, never read as markup; the pages share one template (``templates/reader_base.html``)
so the reading room's refusal and the error pages look like the home page, and every string
comes from :mod:`access.i18n`. The style sits in the page itself: the gateway serves no static
files of its own (``/static/`` is pywb's).
"""

from __future__ import annotations

from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape

from access import i18n
from harvestflow.package_data import data_path

_ENV = Environment(
    loader=FileSystemLoader(str(data_path("access", "templates"))),
    autoescape=select_autoescape(default=True),
    trim_blocks=True,
    lstrip_blocks=True,
)


def render(name: str, lang: str, **context: Any) -> str:
    """Template ``name`` in ``lang`` (``t``: the catalogue's strings in it)."""
    return _ENV.get_template(name).render(
        lang=lang, t=i18n.texts(lang), num=lambda n: i18n.number(n, lang), **context
    )


def home(content: dict[str, Any], lang: str, *, search: bool) -> str:
    """The home page: the URL box, the full-text box (when served), tours, collections."""
    return render("reader_home.html", lang, tours=content.get("tours", []),
                  collections=content.get("collections", []), search=search)  # fmt: skip


def message(
    lang: str,
    title: str,
    text: str,
    *,
    detail: str = "",
    sign_in: str = "",
    lookup: str | None = None,
) -> str:
    """A page that says one thing: ``title`` and ``text`` already in ``lang``, ``detail`` (the
    gateway's own words: the reason logged); ``sign_in``: a link to sign in (the reading
    room's refusal); ``lookup``: the URL box again, holding that address."""
    extra: dict[str, Any] = {} if lookup is None else {"lookup": lookup}
    return render("reader_message.html", lang, title=title, text=text, detail=detail,
                  sign_in=sign_in, **extra)  # fmt: skip
