"""The full-text search page on the configured backend, under the access rules in force.

Why in the top layer and not in ``search``: the rules are the access service's
(:mod:`access.rules`, the same rules pywb applies to replay), and the search stage comes before
access in the import layers; this module joins the two, as the CLIs that join two stages do.
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import FastAPI

from access.rules import search_rules
from harvestflow.db import get_engine
from harvestflow.settings import Settings, get_settings
from search.backends import get_backend
from search.model import AccessRules
from search.webapp import create_app


def app_from_settings(
    settings: Settings | None = None, rules: Callable[[], AccessRules] | None = None
) -> FastAPI:
    """The app on the configured backend, linking to the replay service at ``[access] url``.

    By default each query applies the access rules in force in the harvest database, the same
    rules the replay service applies (:func:`access.rules.search_rules`)."""
    settings = settings or get_settings()
    if rules is None:
        url = settings.harvest_db_url
        rules = lambda: search_rules(get_engine(url))  # noqa: E731
    return create_app(
        lambda: get_backend(settings),
        replay_url=str(settings.get("access", "url", "http://127.0.0.1:8090/")),
        rules=rules,
    )
