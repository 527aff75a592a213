"""The curators' web pages: a small FastAPI app of server-rendered HTML pages.

Why plain FastAPI with Jinja2 templates: Airflow 3 mounts a plugin's FastAPI app inside its
API server, behind its login, and plain HTML with PNG charts needs no JavaScript build. The app
does not know Airflow (the plugin gives it the authentication dependency), so it is testable
alone. Reads run in READ ONLY transactions; every write (a form's POST) is checked by
:func:`app.curator.actions.check_write` (role and CSRF token) or, for a collection's records,
definitions and jobs, by the roles there (:mod:`harvest.office.office_rights`), and made by the
owning stage.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import quote, urlencode

import sqlalchemy as sa
from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi import Path as PathParam
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from starlette.concurrency import run_in_threadpool

from app.curator import (
    actions,
    crawllog_search,
    definitions_pages,
    documents_pages,
    domains_pages,
    feedback,
    jobfiles,
    operations,
    overview,
    qaview,
    qcview,
    readingroom,
    records_pages,
    rights_pages,
)
from app.curator.form_pages import FormPages
from harvest import views as queries
from harvest.office import office_rights
from harvest.page_qa import latest_scores
from harvestflow import paged
from harvestflow.contracts.jobdir import JobDir
from harvestflow.formats.integers import (
    BIGINT_MAX,
    INTEGER_MAX,
    SMALLINT_MAX,
    NumberError,
    parse_int,
)
from harvestflow.formats.job_status import RUNNING, JobStatus
from harvestflow.job_actions import ActionError, job_actions
from harvestflow.package_data import data_path

if TYPE_CHECKING:
    from access.patches import Trigger

log = logging.getLogger(__name__)

HERE = data_path("app.curator")  # templates/: package data
PAGE_SIZE = 50
SEARCH_PAGE = 100
STATIC = {"curator.css": "text/css", "curator.js": "text/javascript"}
# a QA chart opened on its own runs nothing and loads nothing (an SVG is a document)
CHART_CSP = "default-src 'none'; style-src 'unsafe-inline'"
# a job id as the bigserial column holds it: a larger number is refused (422), not sent to SQL
JobId = Annotated[int, PathParam(ge=0, le=BIGINT_MAX)]
ScreenshotIndex = Annotated[int, PathParam(ge=0, le=10_000_000)]


def _templates() -> Jinja2Templates:
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    env = templates.env
    env.filters["num"] = lambda v: "" if v is None else f"{v:,}"
    env.filters["when"] = lambda v: "" if v is None else str(v)[:19].replace("T", " ")
    env.filters["q"] = lambda v: quote(str(v), safe="")
    env.filters["duration"] = overview.duration
    env.globals["STATUS"] = {int(s): s.name for s in JobStatus}
    env.globals["JobStatus"] = JobStatus
    env.globals["RUNNING"] = RUNNING
    return templates


def create_app(
    engine_factory: Callable[[], sa.Engine],
    *,
    data_dir: Path,
    auth: Callable[..., Any] | None = None,
    airflow_base: str = "",
    access_url: str | None = None,
    trigger: Trigger | None = None,
    airflow_db: Callable[[], sa.Engine] | None = None,
) -> FastAPI:
    """The curator app; ``auth`` is a FastAPI dependency run before every route.

    ``airflow_base`` prefixes links to Airflow's own pages (task logs): '' for the same host.
    ``access_url`` is the replay service's address (default: ``[access] url``); ``trigger``
    queues a DAG run for a patch harvest (default: :func:`app.runtime.dagrun.trigger`);
    ``airflow_db`` gives Airflow's metadata database (the overview's failed runs).
    """
    if access_url is None:
        from access.config import AccessConfig

        access_url = AccessConfig.from_settings().url
    replay = access_url.rstrip("/") + "/"
    from app.runtime.dagrun import queue_run

    start_dag = trigger or queue_run
    deps = [Depends(auth)] if auth is not None else []
    deps.append(Depends(_refuse_nul))  # after authentication: a stranger gets 401 first
    app = FastAPI(
        title="harvestflow curator views", dependencies=deps, docs_url=None, redoc_url=None
    )
    templates = _templates()
    csrf_key = actions.load_key(data_dir)

    @contextmanager
    def connect() -> Iterator[sa.Connection]:
        with paged.read_only(engine_factory()) as conn:
            yield conn

    def page(request: Request, name: str, **context: Any) -> HTMLResponse:
        context.setdefault("title", name.removesuffix(".html"))
        root = actions.root_path(request)
        context.update(root=root, airflow_base=airflow_base)
        return templates.TemplateResponse(request, name, context)

    def png(data: bytes) -> Response:
        return Response(data, media_type="image/png", headers={"Cache-Control": "no-store"})

    def with_csrf(request: Request, name: str, **context: Any) -> HTMLResponse:
        """A page with forms: the CSRF token in ``csrf``, its session cookie set if new;
        ``can_edit`` says whether the user may write as a curator."""
        session, context["csrf"], new_session = actions.form_token(request, csrf_key)
        context.setdefault("can_edit", actions.has_role(request, actions.Role.CURATOR))
        response = page(request, name, **context)
        actions.set_session(request, response, session, new_session)
        return response

    def pager_url(request: Request, **changes: Any) -> str:
        params = dict(request.query_params)
        params.update({k: str(v) for k, v in changes.items()})
        return "?" + urlencode(params)

    templates.env.globals["pager_url"] = pager_url

    overview.add_overview_routes(
        app, page=page, connect=connect, task_link=lambda t: _task_link(t, airflow_base),
        airflow_db=airflow_db,
    )  # fmt: skip

    @app.get("/definitions", response_class=HTMLResponse)
    def definitions(request: Request, page_no: int = 1) -> HTMLResponse:
        with connect() as conn:
            result = queries.definitions(conn, _page_no(page_no), PAGE_SIZE)
            can_edit = actions.may_edit(request, conn)  # a curator here, or of a collection
        return with_csrf(request, "definitions.html", title="Harvest definitions", p=result,
                         can_edit=can_edit)  # fmt: skip

    forms = FormPages(with_csrf, connect, engine_factory, csrf_key)
    definitions_pages.add_definition_routes(app, forms)

    @app.get("/jobs", response_class=HTMLResponse)
    def jobs(
        request: Request, page_no: int = 1, status: str = "", harvest_id: str = ""
    ) -> HTMLResponse:
        # the filter form sends status= for "any": empty means no filter, not a bad integer
        status_no = _opt_int(status, "status", SMALLINT_MAX)
        harvest_no = _opt_int(harvest_id, "harvest_id", INTEGER_MAX)
        with connect() as conn:
            result = queries.jobs(conn, _page_no(page_no), PAGE_SIZE, status_no, harvest_no)
        for row in result.rows:
            row["task_link"] = _task_link(row.get("airflow_task"), airflow_base)
            if row["status"] == JobStatus.STARTED:  # show where the crawl stands
                samples = jobfiles.read_progress(_dir(row["job_dir"]), max_points=2)
                row["progress"] = samples[-1] if samples else None
        return page(
            request, "jobs.html", title="Jobs", p=result, status=status_no, harvest_id=harvest_no
        )

    @app.get("/jobs/{job_id}", response_class=HTMLResponse)
    def job(
        request: Request,
        job_id: JobId,
        q: str = "",
        status: str = "",
        mime: str = "",
        offset: int = 0,
        page_no: int = 1,
    ) -> HTMLResponse:
        with connect() as conn:
            row = queries.job(conn, job_id, _page_no(page_no), PAGE_SIZE)
            if row is None:
                raise HTTPException(404, f"no job {job_id}")
            history = job_actions(job_id, conn)
            qa = feedback.job_feedback(conn, job_id)
            qc = qcview.job_qc(conn, replay, row)
        job_dir = _dir(row["job_dir"])
        search, error = None, ""
        crawl_log = JobDir(job_dir).crawl_log if job_dir else None
        if (q or status or mime) and crawl_log is not None and crawl_log.exists():
            try:
                search = crawllog_search.search_crawl_log(
                    crawl_log, q, status, mime, offset=max(offset, 0), limit=SEARCH_PAGE
                )
            except crawllog_search.CrawlLogSearchError as exc:
                error = str(exc)
        with connect() as conn:  # its QA and patch forms: a curator of its collections
            may_write = actions.allows(request, conn, office_rights.job_write(conn, job_id, ""))
        return with_csrf(
            request,
            "job.html",
            title=f"Job {job_id}",
            job=row,
            summary=jobfiles.read_summary(job_dir),
            reports=jobfiles.read_reports(job_dir),
            screenshots=jobfiles.read_screenshots(job_dir),
            page_qa=qaview.job_checks(job_dir),
            progress=jobfiles.read_progress(job_dir),
            task_link=_task_link(row.get("airflow_task"), airflow_base),
            has_log=bool(crawl_log and crawl_log.exists()),
            search=search,
            search_error=error,
            form={"q": q, "status": status, "mime": mime},
            offset=max(offset, 0),
            columns=crawllog_search.COLUMNS,
            actions=history,
            can_control=actions.has_role(request, actions.Role.ENGINEER)
            and row["status"] in RUNNING,
            qa=qa,
            qc=qc,
            can_patch=may_write,
            can_edit=may_write,
        )

    @app.post("/jobs/{job_id}/actions")
    async def job_action(request: Request, job_id: JobId) -> Response:
        """An operator's action on a running crawl (pause, resume, stop, filter, limits)."""
        from harvest.control import request as request_action

        form = await actions.read_form(request)
        user = actions.check_write(request, form, csrf_key, role=actions.Role.ENGINEER)
        action = form.get("action", "")
        try:
            action_id = request_action(
                job_id, action, actions.action_arguments(action, form), user, engine_factory()
            )
        except ActionError as exc:
            raise HTTPException(400, str(exc)) from None
        root = actions.root_path(request)
        return RedirectResponse(f"{root}/jobs/{job_id}?action={action_id}#actions", 303)

    feedback.add_routes(app, engine_factory, csrf_key)

    def job_dir_of(job_id: int) -> Path | None:
        with connect() as conn:
            row = queries.job(conn, job_id)
        return _dir(row["job_dir"]) if row is not None else None

    qaview.add_routes(app, job_dir_of, png)  # the QA pass's screenshots
    readingroom.add_routes(app, replay)  # a signed-in user's pass into the reading room

    @app.post("/jobs/{job_id}/patch")
    async def job_patch(request: Request, job_id: JobId) -> Response:
        """Send the job's missing URLs (all not sent yet, or the ticked ones) to a patch
        harvest: a one-off definition, the ``oneoff_harvest`` DAG queued for it."""
        from access.patches import PatchError, request_patch

        fields = await actions.read_form_lists(request)
        form = {k: v[0] for k, v in fields.items()}
        with connect() as conn:
            needed = office_rights.job_write(conn, job_id, "patch jobs")
            user = actions.check_needed(request, form, csrf_key, conn, needed)
        urls = qcview.chosen_urls(fields)
        try:
            # blocking (queries, the Airflow CLI): off the API server's event loop
            patch = await run_in_threadpool(
                request_patch, engine_factory(), job_id, user, start_dag, urls=urls
            )
        except PatchError as exc:
            raise HTTPException(400, str(exc)) from None
        root = actions.root_path(request)
        return RedirectResponse(f"{root}/jobs/{job_id}?patch={patch.patch_id}#qc", 303)

    @app.get("/jobs/{job_id}/screenshots/{index}.png")
    def job_screenshot(job_id: JobId, index: ScreenshotIndex) -> Response:
        with connect() as conn:
            row = queries.job(conn, job_id)
        if row is None:
            raise HTTPException(404, f"no job {job_id}")
        job_dir = _dir(row["job_dir"])
        data = jobfiles.read_screenshot_png(job_dir, index) if job_dir else None
        if data is None:
            raise HTTPException(404, f"no screenshot {index} in job {job_id}'s directory")
        return png(data)

    @app.get("/jobs/{job_id}/progress.png")
    def job_progress_chart(job_id: JobId) -> Response:
        from app.curator import charts  # matplotlib: only where a chart is drawn

        with connect() as conn:
            row = queries.job(conn, job_id)
        if row is None:
            raise HTTPException(404, f"no job {job_id}")
        return png(charts.progress_chart(job_id, jobfiles.read_progress(_dir(row["job_dir"]))))

    @app.get("/domains", response_class=HTMLResponse)
    def domains(request: Request, q: str = "", page_no: int = 1) -> HTMLResponse:
        with connect() as conn:
            result = queries.domains(conn, q[:253], _page_no(page_no), PAGE_SIZE)
        return page(request, "domains.html", title="Domains", p=result, q=q)

    @app.get("/domains/{name}", response_class=HTMLResponse)
    def domain(
        request: Request, name: str, page_no: int = 1, saved: str = "", refused: str = ""
    ) -> HTMLResponse:
        with connect() as conn:
            row = queries.domain(conn, name, _page_no(page_no), PAGE_SIZE)
            if row is None:
                raise HTTPException(404, f"no domain {name!r}")
            jobs = [int(h["job_id"]) for h in row["history"].rows]
            targets = feedback.domain_feedback(conn, name, jobs)
            scores = latest_scores(conn, [name])  # the QA pass's, of its pages
            office = domains_pages.domain_context(
                request, conn, row
            )  # its forms: templates, changes
        for h in row["history"].rows:
            h["replay"] = qcview.domain_link(replay, h["job_id"], name)
        return with_csrf(
            request, "domain.html", title=f"Domain {name}", d=row, t=targets, page_scores=scores,
            office=office, saved=saved[:100], refused=refused[:2000],
        )  # fmt: skip

    domains_pages.add_domain_routes(app, engine_factory=engine_factory, csrf_key=csrf_key)

    @app.get("/domains/{name}/size.png")
    def domain_chart(name: str) -> Response:
        from app.curator import charts

        with connect() as conn:
            if not queries.domain_exists(conn, name):
                raise HTTPException(404, f"no domain {name!r}")
            history = queries.domain_sizes(conn, name)
        return png(charts.domain_size_chart(name, history))

    @app.get("/qa", response_class=HTMLResponse)
    def qa_days(request: Request, page_no: int = 1) -> HTMLResponse:
        with connect() as conn:
            result = operations.qa_days(conn, _page_no(page_no), PAGE_SIZE)
        return page(request, "qa_days.html", title="Daily QA", p=result)

    @app.get("/qa/{day}", response_class=HTMLResponse)
    def qa_day(request: Request, day: str) -> HTMLResponse:
        with connect() as conn:
            report = operations.qa_day(conn, _day(day))
        if report is None:
            raise HTTPException(404, f"no QA report for {day}")
        return page(request, "qa_day.html", title=f"QA {day}", r=report)

    @app.get("/qa/{day}/charts/{name}")
    def qa_chart(day: str, name: str) -> Response:
        with connect() as conn:
            report = operations.qa_day(conn, _day(day))
        if report is None:
            raise HTTPException(404, f"no QA report for {day}")
        try:
            path = operations.qa_chart_path(report["report_dir"], name)
        except ValueError as exc:
            raise HTTPException(404, str(exc)) from exc
        # the report folder may live elsewhere: the database keeps a copy of its charts
        data = path.read_bytes() if path.is_file() else operations.stored_chart(report, name)
        if data is None:
            raise HTTPException(404, f"no chart {name}")
        return Response(
            data,
            media_type=operations.CHART_TYPES[path.suffix],
            headers={"Cache-Control": "no-store", "Content-Security-Policy": CHART_CSP},
        )

    @app.get("/preload", response_class=HTMLResponse)
    def preload_runs(request: Request, page_no: int = 1) -> HTMLResponse:
        with connect() as conn:
            result = operations.preload_runs(conn, _page_no(page_no), PAGE_SIZE)
        return page(request, "preload_runs.html", title="Broad-crawl preload", p=result)

    @app.get("/preload/{run_id}", response_class=HTMLResponse)
    def preload_run(request: Request, run_id: str, page_no: int = 1) -> HTMLResponse:
        with connect() as conn:
            run = operations.preload_run(conn, run_id, data_dir, _page_no(page_no), 100)
        if run is None:
            raise HTTPException(404, f"no preload run {run_id!r}")
        return page(request, "preload_run.html", title=f"Preload {run_id}", run=run)

    @app.get("/preservation", response_class=HTMLResponse)
    def preservation(request: Request, page_no: int = 1) -> HTMLResponse:
        with connect() as conn:
            status = operations.preservation(conn, _page_no(page_no), PAGE_SIZE)
            # the fixity audits' progress, each listed package's last verification
            from preservation.fixity import audit_status

            jobs = [int(p["job_id"]) for p in status["packages"].rows]
            status["audit"] = audit_status(job_ids=jobs, conn=conn)
        return page(request, "preservation.html", title="Preservation", s=status)

    records_pages.add_record_routes(app, forms)
    rights_pages.add_rights_routes(app, forms)
    documents_pages.add_document_routes(app, forms, replay=replay)

    @app.get("/static/{name}")
    def static(name: str) -> Response:
        if name not in STATIC:
            raise HTTPException(404, f"no static file {name!r}")
        return Response((HERE / "templates" / name).read_bytes(), media_type=STATIC[name])

    return app


def _page_no(value: int) -> int:
    return min(max(value, 1), 1_000_000)


def _refuse_nul(request: Request) -> None:
    """400 for a NUL byte in any path or query parameter.

    Why here, once: PostgreSQL text cannot hold NUL, so such a value reaching a bound
    parameter made the driver raise (a 500), and no name, run id or search can contain one.
    """
    params = [*request.path_params.items(), *request.query_params.multi_items()]
    for name, value in params:
        if "\x00" in str(value):
            raise HTTPException(400, f"{name}: a NUL byte is not allowed in a parameter")


def _opt_int(value: str, name: str, maximum: int) -> int | None:
    """An optional integer filter from a form: '' is None; anything else must be an integer
    within ±``maximum`` (the range of the column it is compared with)."""
    value = value.strip()
    if not value:
        return None
    try:
        return parse_int(value, name, minimum=-maximum, maximum=maximum)
    except NumberError as exc:
        raise HTTPException(400, str(exc)) from None


def _day(value: str) -> str:
    from datetime import date

    try:
        return date.fromisoformat(value).isoformat()
    except ValueError as exc:
        raise HTTPException(404, f"{value!r} is not a day (YYYY-MM-DD)") from exc


def _dir(raw: str | None) -> Path | None:
    return Path(raw) if raw else None


def _task_link(task: Any, airflow_base: str) -> str:
    """The Airflow UI page of the job's crawl task instance (its log), when recorded."""
    if not isinstance(task, dict) or not {"dag_id", "run_id", "task_id"} <= task.keys():
        return ""
    path = (
        f"/dags/{quote(task['dag_id'], safe='')}/runs/{quote(task['run_id'], safe='')}"
        f"/tasks/{quote(task['task_id'], safe='')}"
    )
    if task.get("map_index", -1) not in (-1, None):
        path += f"/mapped/{int(task['map_index'])}"
    return airflow_base.rstrip("/") + path
