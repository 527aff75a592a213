"""The job spec (job.json): what one crawl must do, written by harvest, run by the crawler.

Why one model for both sides: a key is spelled once, and a top-level value of the wrong type is
refused where it is written. :func:`from_dict` fills in the template's defaults from settings
[crawler] and checks them when the crawl starts; a bad value is a :class:`JobSpecError` naming
the file and the key. What is written is what was given; unknown keys are kept in ``raw``.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from harvestflow.atomic import atomic_write_text
from harvestflow.contracts import ContractError
from harvestflow.contracts.fields import as_version
from harvestflow.settings import get_settings

JOBSPEC_VERSION = 1


class JobSpecError(ContractError):
    """A job spec that cannot be crawled, with the file and the key at fault."""


@dataclass
class Template:
    """A crawl profile (the equivalent of a Heritrix order file)."""

    name: str = "default_selective"
    scope: str = "domain"  # host | domain | path
    max_hops: int = 20
    max_transclusion_hops: int = 2
    obey_robots: bool = True
    delay_factor: float = 5.0
    min_delay_ms: int = 3000
    max_delay_ms: int = 30000
    max_crawl_delay_s: int = 300
    connections_per_host: int = 1
    allow_private_addresses: bool = False
    dedup_mime_exclude: str = ""
    extract_sitemaps: bool = False
    # speculative links from script strings (crawler/jsextract.py); Heritrix's default, on
    extract_js: bool = True
    # browser rendering (crawler/rendering/renderer.py): none | seeds | html (every in-scope HTML page)
    render: str = "none"
    render_tabs: int = 2  # tab workers (one Chromium each) per crawler process
    render_page_timeout_s: float = 30.0  # behaviours of one page, then screenshots
    render_min_wait_s: float = 1.5  # dwell after load for timers, before scrolling
    render_max_scrolls: int = 40
    render_pages_per_tab: int = 100  # pages before a tab's browser is restarted
    render_max_memory_mb: int = (
        1024  # a tab's browser above this (PSS sum) is restarted between pages
    )
    # behaviours of rendered pages (crawler/rendering/behaviours/), within render_page_timeout_s:
    render_consent: str = "accept"  # consent dialogs: accept | reject | hide | none
    render_consent_wait_s: float = 5.0  # for autoconsent's rules to find and answer a dialog
    render_max_clicks: int = 20  # "load more" / "show more" / next buttons (0: none)
    render_max_expanders: int = 50  # details, accordions, tabs opened (0: none)
    render_media: bool = True  # srcset/picture/lazy/media sources fetched, media played muted
    render_max_media: int = 200  # sources fetched by that autofetch, per page
    # HLS/DASH manifests: the renditions whose segments are fetched (crawler/manifests.py):
    # extremes (lowest and highest bandwidth of each kind) | all
    media_renditions: str = "extremes"
    render_site_behaviours: str = ""  # folder of site-specific behaviours ("": none)
    render_behaviour_timeout_s: float = 10.0  # a site behaviour's time (its @timeout ≤ 4×)
    # rendered pages rendered again as a phone sees them (crawler/rendering/phone.py): what only
    # the phone layout loads captured, its screenshots kept too: none | seeds | all
    render_phone: str = "none"
    # yt-dlp on rendered pages (crawler/rendering/video.py), its requests through the crawl:
    # none | platforms (pages one of its site extractors claims) | all (its generic one too)
    render_video: str = "none"
    render_video_timeout_s: float = 300.0  # one page's yt-dlp run, then it is killed
    # capture-vs-replay QA of each rendered page (crawler/rendering/qa_loop.py): replayed from the job's
    # records in the crawl's tabs, scored 0-100; a job sets qa false to switch it off
    qa: bool = False
    qa_patch: bool = False  # missing URLs fetched in the same job, the page checked again
    qa_page_budget_s: float = 30.0  # one page's QA: replay, patch, second check
    qa_min_score: float = 80.0  # a page below it is below threshold
    qa_max_below_share: float = 0.2  # more pages below than this share: the run is flagged
    max_path_depth: int = 20
    max_repeated_path_segments: int = 2
    max_calendar_pages: int = 200
    max_future_years: int = 1
    retries: int = 2
    download_timeout_s: float = 30.0
    max_response_bytes: int = 100_000_000
    max_header_bytes: int = 262_144  # the whole header section of a response
    # the HTTP/1.1 client: twisted (Scrapy's own, the default) | asyncio (crawler/asyncio_fetch.py,
    # experimental: httptools on asyncio; measured in bench/README.md's crawler prose)
    fetch_client: str = "twisted"
    # inflated (Content-Encoding) bytes link extraction reads of one response, and of all the
    # responses a crawler process holds at once (crawler/inflate.py); the WARC keeps all it got
    max_inflate_bytes: int = 32 * 1024 * 1024
    inflate_budget_bytes: int = 64 * 1024 * 1024
    max_redirects: int = 5
    max_url_length: int = 2083
    concurrent_requests: int = 16
    # accepted URLs waiting in a crawler process's memory as requests (~1 KB each); the others
    # wait in the job's persisted frontier until the queue drains (crawler/frontier.py)
    max_queued_requests: int = 50_000
    warc_max_size: int = 1_000_000_000
    processes: int = 1  # host-partitioned crawler processes of one job (crawler/partitioned_run.py)
    resolve: dict[str, str] = field(default_factory=dict)


@dataclass
class DomainBudget:
    """One domain configuration of the job and its limits (-1 = unlimited)."""

    domain: str = ""
    config_id: int | None = None
    max_objects: int = -1
    max_bytes: int = -1


# written only when the job sets them (else settings [crawler] at crawl time): file key → field
_IDENTITY = {
    "user_agent": "user_agent",
    "from": "from_email",
    "operator": "operator",
    "organisation": "organisation",
}


@dataclass
class JobSpec:
    job_id: int
    seeds: list[str]
    template: Template
    harvest_id: int = 0
    harvest_name: str = ""
    harvest_num: int = 0
    channel: str = ""
    snapshot: bool = False
    domains: list[DomainBudget] = field(default_factory=list)
    max_objects: int = -1
    max_bytes: int = -1
    max_running_time_s: int = 0
    crawler_traps: list[str] = field(default_factory=list)
    resolve: dict[str, str] = field(default_factory=dict)
    dedup_index: str | None = None
    warc_prefix: str = ""
    user_agent: str = ""
    from_email: str = ""
    operator: str = ""
    organisation: str = ""
    # logins by reference (harvestflow/credentials.py): id, domain, kind, login/logout URL
    credentials: list[dict[str, Any]] = field(default_factory=list)
    # the crawler polls job_actions for operators' actions (crawler/control.py): jobs made
    # from the harvest database
    job_control: bool = False
    job_control_interval_s: float | None = None
    # the version of the file read (0: written before versions); a spec is always written in
    # the current version, the one whose keys to_dict writes
    version: int = field(default=JOBSPEC_VERSION, compare=False)
    # the template as written (its other values come from settings [crawler] at crawl time)
    template_given: dict[str, Any] = field(default_factory=dict)
    # the identity keys the file set (user_agent, from, operator, organisation)
    identity_given: frozenset[str] = frozenset()
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def all_resolve(self) -> dict[str, str]:
        """Host → address overrides of the template and the job (the job wins)."""
        return {**self.template.resolve, **self.resolve}

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of job.json: what was given, in the keys job.json always had."""
        data: dict[str, Any] = {
            "version": JOBSPEC_VERSION,
            "job_id": self.job_id,
            "harvest_id": self.harvest_id,
            "harvest_name": self.harvest_name,
            "harvest_num": self.harvest_num,
            "channel": self.channel,
            "snapshot": self.snapshot,
            "seeds": list(self.seeds),
            "template": dict(self.template_given),
            "domains": [asdict(d) for d in self.domains],
            "max_objects": self.max_objects,
            "max_bytes": self.max_bytes,
            "max_running_time_s": self.max_running_time_s,
            "crawler_traps": list(self.crawler_traps),
            "resolve": dict(self.resolve),
            "dedup_index": self.dedup_index,
            "warc_prefix": self.warc_prefix,
            "credentials": [dict(c) for c in self.credentials],
        }
        for key, name in _IDENTITY.items():
            if key in self.identity_given:
                data[key] = getattr(self, name)
        if self.job_control:
            data["job_control"] = True
        if self.job_control_interval_s is not None:
            data["job_control_interval_s"] = self.job_control_interval_s
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, sort_keys=True)

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write job.json under a temporary name, then rename (never half a file)."""
        atomic_write_text(Path(path), json.dumps(self.to_dict(), indent=1) + "\n")

    @classmethod
    def from_dict(cls, data: Any, where: str = "job spec", *, resolve: bool = True) -> JobSpec:
        """See :func:`from_dict`."""
        return from_dict(data, where, resolve=resolve)

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> JobSpec:
        """Read and check a job.json file (JobSpecError naming the file and the key)."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise JobSpecError(f"{path}: job spec not found") from exc
        except json.JSONDecodeError as exc:
            raise JobSpecError(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}") from exc
        return from_dict(data, str(path))


def _coerce(cls: type, values: dict[str, Any], where: str) -> Any:
    """Build a dataclass from the keys it knows, checking the type of each value."""
    kwargs: dict[str, Any] = {}
    defaults = cls()
    for name, default in asdict(defaults).items():
        if name not in values or values[name] is None:
            continue
        value = values[name]
        try:
            if isinstance(default, bool):
                if not isinstance(value, bool):
                    raise TypeError("expected true/false")
            elif isinstance(default, int):
                value = int(value)
            elif isinstance(default, float):
                value = float(value)
            elif isinstance(default, str):
                value = str(value)
            elif isinstance(default, dict) and not isinstance(value, dict):
                raise TypeError("expected an object")
        except (TypeError, ValueError) as exc:
            raise JobSpecError(f"{where}: key {name!r}: bad value {value!r} ({exc})") from exc
        kwargs[name] = value
    return cls(**kwargs)


def _value(data: dict[str, Any], key: str, kind: type, default: Any, where: str) -> Any:
    """``data[key]`` as ``kind`` (absent or null: ``default``), else JobSpecError naming it."""
    value = data.get(key)
    if value is None:
        return default
    try:
        if kind is bool:
            if not isinstance(value, bool):
                raise TypeError("expected true/false")
        elif kind is dict:
            if not isinstance(value, dict):
                raise TypeError("expected an object")
        elif kind is list:
            if not isinstance(value, list):
                raise TypeError("expected a list")
        elif kind is str:
            if isinstance(value, dict | list):
                raise TypeError("expected a string")
            value = str(value)
        else:
            if isinstance(value, bool | dict | list):
                raise TypeError(f"expected a number, not {type(value).__name__}")
            value = kind(value)
    except (TypeError, ValueError) as exc:
        raise JobSpecError(f"{where}: key {key!r}: bad value {value!r} ({exc})") from exc
    return value


def template_defaults() -> dict[str, Any]:
    """Defaults for a template from settings [crawler] (the keys the template knows)."""
    conf = get_settings().data.get("crawler", {})
    keys = {f.name for f in fields(Template)}
    return {k: v for k, v in conf.items() if k in keys}


# the template's numbers that cannot be negative, and those that must be at least 1
_AT_LEAST_0 = (
    "max_hops", "max_transclusion_hops", "delay_factor", "min_delay_ms", "max_delay_ms",
    "max_crawl_delay_s", "max_path_depth", "max_repeated_path_segments", "max_calendar_pages",
    "max_future_years", "retries", "max_redirects", "render_min_wait_s", "render_max_scrolls",
    "render_consent_wait_s",
)  # fmt: skip
_AT_LEAST_1 = (
    "connections_per_host", "concurrent_requests", "max_url_length", "max_response_bytes",
    "max_header_bytes", "max_inflate_bytes", "inflate_budget_bytes", "warc_max_size",
    "render_pages_per_tab", "render_max_memory_mb", "max_queued_requests",
)  # fmt: skip


def _check_template(template: Template, where: str) -> None:
    for key in _AT_LEAST_0:
        if getattr(template, key) < 0:
            raise JobSpecError(f"{where}: template.{key} must be 0 or more")
    for key in _AT_LEAST_1:
        if getattr(template, key) < 1:
            raise JobSpecError(f"{where}: template.{key} must be at least 1")
    if template.download_timeout_s <= 0:
        raise JobSpecError(f"{where}: template.download_timeout_s must be more than 0")
    if template.processes < 1:
        raise JobSpecError(f"{where}: template.processes must be at least 1")
    if template.render not in ("none", "seeds", "html"):
        raise JobSpecError(f"{where}: template.render must be none, seeds or html")
    if template.render_consent not in ("accept", "reject", "hide", "none"):
        raise JobSpecError(f"{where}: template.render_consent must be accept, reject, hide or none")
    if template.render_phone not in ("none", "seeds", "all"):
        raise JobSpecError(f"{where}: template.render_phone must be none, seeds or all")
    if template.render_video not in ("none", "platforms", "all"):
        raise JobSpecError(f"{where}: template.render_video must be none, platforms or all")
    if template.fetch_client not in ("twisted", "asyncio"):
        raise JobSpecError(f"{where}: template.fetch_client must be twisted or asyncio")
    if template.media_renditions not in ("extremes", "all"):
        raise JobSpecError(f"{where}: template.media_renditions must be extremes or all")
    for key in ("render_max_clicks", "render_max_expanders", "render_max_media"):
        if getattr(template, key) < 0:
            raise JobSpecError(f"{where}: template.{key} must be 0 or more")
    if not 0 <= template.qa_min_score <= 100:
        raise JobSpecError(f"{where}: template.qa_min_score must be between 0 and 100")
    if not 0 <= template.qa_max_below_share <= 1:
        raise JobSpecError(f"{where}: template.qa_max_below_share must be between 0 and 1")
    if template.qa_page_budget_s <= 0:
        raise JobSpecError(f"{where}: template.qa_page_budget_s must be more than 0")
    if template.render_tabs < 1:
        raise JobSpecError(f"{where}: template.render_tabs must be at least 1")
    if template.scope not in ("host", "domain", "path"):
        raise JobSpecError(f"{where}: template.scope must be host, domain or path")
    if template.dedup_mime_exclude:
        try:
            re.compile(template.dedup_mime_exclude)
        except re.error as exc:
            raise JobSpecError(f"{where}: template.dedup_mime_exclude: {exc}") from exc


def from_dict(data: Any, where: str = "job spec", *, resolve: bool = True) -> JobSpec:
    """A JobSpec from the parsed JSON; raises JobSpecError naming the key at fault.

    ``resolve=False`` is the writing side (harvest): the template is carried as written
    (``template_given``, only checked to be an object) and ``template`` keeps the model's
    defaults; the crawler resolves and checks it when the crawl starts, so a bad template fails
    the job's crawl (FAILED, with the reason) rather than its preparation, as it always did.
    """
    if not isinstance(data, dict):
        raise JobSpecError(f"{where}: expected a JSON object")
    try:
        version = as_version(where, data, JOBSPEC_VERSION)
    except ContractError as exc:
        raise JobSpecError(str(exc)) from exc
    conf = get_settings().data.get("crawler", {})
    given = _value(data, "template", dict, {}, where)
    if resolve:
        template = _coerce(Template, {**template_defaults(), **given}, f"{where}: template")
        _check_template(template, where)
    else:
        template = Template()
    seeds = data.get("seeds")
    if not isinstance(seeds, list) or not all(isinstance(s, str) for s in seeds):
        raise JobSpecError(f"{where}: 'seeds' must be a list of URLs")
    if "job_id" not in data:
        raise JobSpecError(f"{where}: 'job_id' is missing")
    domains = []
    for i, d in enumerate(_value(data, "domains", list, [], where)):
        if not isinstance(d, dict):
            raise JobSpecError(f"{where}: domains[{i}]: bad value {d!r} (expected an object)")
        domains.append(_coerce(DomainBudget, d, f"{where}: domains[{i}]"))
    traps = _value(data, "crawler_traps", list, [], where)
    for i, pattern in enumerate(traps):
        try:
            re.compile(pattern)
        except (re.error, TypeError) as exc:
            raise JobSpecError(f"{where}: crawler_traps[{i}] {pattern!r}: {exc}") from exc
    credentials = _value(data, "credentials", list, [], where)
    for i, ref in enumerate(credentials):
        if not isinstance(ref, dict) or not isinstance(ref.get("id"), int):
            raise JobSpecError(f"{where}: credentials[{i}] must be an object with an integer id")
        if set(ref) & {"username", "password", "secret"}:
            raise JobSpecError(f"{where}: credentials[{i}]: a job spec never holds a secret")
    identity = {
        name: _value(data, key, str, None, where) or None for key, name in _IDENTITY.items()
    }
    job = JobSpec(
        job_id=_value(data, "job_id", int, 0, where),
        seeds=list(seeds),
        template=template,
        harvest_id=_value(data, "harvest_id", int, 0, where),
        harvest_name=_value(data, "harvest_name", str, "", where),
        harvest_num=_value(data, "harvest_num", int, 0, where),
        channel=_value(data, "channel", str, "", where),
        snapshot=_value(data, "snapshot", bool, False, where),
        domains=domains,
        max_objects=_value(data, "max_objects", int, -1, where),
        max_bytes=_value(data, "max_bytes", int, -1, where),
        max_running_time_s=_value(data, "max_running_time_s", int, 0, where),
        crawler_traps=list(traps),
        resolve=_value(data, "resolve", dict, {}, where),
        dedup_index=_value(data, "dedup_index", str, None, where),
        warc_prefix=_value(data, "warc_prefix", str, "", where),
        user_agent=identity["user_agent"] or str(conf.get("user_agent", "harvestflow")),
        from_email=identity["from_email"] or str(conf.get("from", "")),
        operator=identity["operator"] or str(conf.get("operator", "")),
        organisation=identity["organisation"] or str(conf.get("organisation", "harvestflow")),
        credentials=[dict(c) for c in credentials],
        job_control=_value(data, "job_control", bool, False, where),
        job_control_interval_s=_value(data, "job_control_interval_s", float, None, where),
        version=version,
        template_given=dict(given),
        identity_given=frozenset(k for k, n in _IDENTITY.items() if identity[n]),
        raw=data,
    )
    if not job.warc_prefix:
        job.warc_prefix = f"{job.job_id}-{job.harvest_id}"
    return job
