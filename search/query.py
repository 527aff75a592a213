"""A search box's text → :class:`search.model.Query`.

Why apart from the backend: ``site:`` and ``domain:`` are filters, not words; they are taken out
here, and the rest (words, "phrases", -exclusion, OR) goes to the backend's own parser
(PostgreSQL's ``websearch_to_tsquery`` never fails on user input, whatever its quotes).
"""

from __future__ import annotations

import re
from typing import Any

from harvestflow.formats.domains import registrable_domain
from search.model import Query

_FILTER = re.compile(r'(?<![^\s(])(site|domain):("[^"]*"|\S+)', re.IGNORECASE)


def parse_query(raw: str, **filters: Any) -> Query:
    """``raw`` with its ``site:``/``domain:`` operators as filters; ``filters`` are Query fields."""
    sites: list[str] = list(filters.pop("sites", ()))
    domains: list[str] = list(filters.pop("domains", ()))

    def take(match: re.Match[str]) -> str:
        value = match.group(2).strip('"').strip().lower()
        value = re.sub(r"^[a-z][a-z0-9+.-]*://", "", value).strip("/")
        if value:
            if match.group(1).lower() == "site":
                sites.append(value)
            else:  # a host or URL names its registrable domain (www.bbc.co.uk -> bbc.co.uk)
                domains.append(registrable_domain(value.split("/", 1)[0]))
        return " "

    text = _FILTER.sub(take, raw.replace("\x00", " "))
    return Query(text=" ".join(text.split()), sites=tuple(sites), domains=tuple(domains), **filters)
