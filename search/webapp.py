"""The search page: a small read-only FastAPI app (query box, results, facets, paging).

Why an app of its own, not a curator page: readers use it as well as curators. The Airflow
plugin (``plugins/harvestflow_curator.py``) mounts it at ``/search`` behind Airflow's login, as
it does the curator views; the access gateway serves it to readers at ``/search/``. Both get it
from :mod:`access.searchapp`, which supplies the access rules in force (this package may not
import ``access``).

Each result links into replay of that very capture (``<replay>/all/<timestamp>/<url>``) and to
the calendar of all captures of its URL (``<replay>/all/*/<url>``). The access rules come from
``rules()`` on every request, so a rule changed while serving applies to the next search.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from harvestflow.package_data import data_path
from search.model import FACETS, AccessRules, SearchBackend
from search.query import parse_query

HERE = data_path("search")  # templates/: package data
PER_PAGE = 10
MAX_PAGE = 1000
MAX_QUERY = 1000
FACET_PARAMS = {
    "year": "years",
    "host": "hosts",
    "domain": "domains",
    "mime": "mimes",
    "collection": "collections",
    "lang": "langs",
}
FACET_TITLES = {
    "year": "Year",
    "host": "Host",
    "domain": "Domain",
    "mime": "Type",
    "collection": "Collection",
    "lang": "Language",
}


def create_app(
    backend_factory: Callable[[], SearchBackend],
    *,
    replay_url: str = "http://127.0.0.1:8090/",
    rules: Callable[[], AccessRules] = AccessRules,
    collection: str = "all",
    per_page: int = PER_PAGE,
    auth: Callable[..., Any] | None = None,
) -> FastAPI:
    """The search app; ``rules`` gives the access rules in force (none by default), ``auth``
    a FastAPI dependency run before every route (the Airflow plugin's login check)."""
    app = FastAPI(
        title="harvestflow search",
        dependencies=[Depends(auth)] if auth is not None else [],
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    base = replay_url.rstrip("/") + "/" + collection

    def link(request: Request, **changes: Any) -> str:
        params = [(k, v) for k, v in request.query_params.multi_items() if k not in changes]
        for key, value in changes.items():
            if value is not None:
                params.append((key, str(value)))
        return "?" + urlencode(params)

    def add_filter(request: Request, name: str, value: str) -> str:
        params = [(k, v) for k, v in request.query_params.multi_items() if k != "page"]
        return "?" + urlencode([*params, (name, value)])

    templates.env.globals.update(link=link, add_filter=add_filter)

    @app.get("/", response_class=HTMLResponse)
    def search_page(
        request: Request,
        q: str = "",
        page: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 1,
        year: Annotated[list[int] | None, Query()] = None,
        host: Annotated[list[str] | None, Query()] = None,
        domain: Annotated[list[str] | None, Query()] = None,
        mime: Annotated[list[str] | None, Query()] = None,
        collection: Annotated[list[str] | None, Query()] = None,
        lang: Annotated[list[str] | None, Query()] = None,
    ) -> HTMLResponse:
        if len(q) > MAX_QUERY:
            raise HTTPException(422, f"query longer than {MAX_QUERY} characters")
        chosen = {"year": year, "host": host, "domain": domain, "mime": mime,
                  "collection": collection, "lang": lang}  # fmt: skip
        for values in chosen.values():
            if any("\x00" in str(v) for v in values or ()):
                raise HTTPException(400, "NUL byte in a parameter")
        result = None
        if q.strip() or any(chosen.values()):
            query = parse_query(
                q,
                page=page,
                per_page=per_page,
                access=rules(),
                **{FACET_PARAMS[k]: tuple(v) for k, v in chosen.items() if v},
            )
            result = backend_factory().search(query)
        pages = (result.pageable + per_page - 1) // per_page if result else 0
        return templates.TemplateResponse(
            request,
            "search.html",
            {
                "q": q,
                "result": result,
                "page": page,
                "pages": pages,
                "facets": FACETS,
                "facet_titles": FACET_TITLES,
                "chosen": {k: [str(x) for x in v] for k, v in chosen.items() if v},
                "replay": base,
            },
        )

    return app
