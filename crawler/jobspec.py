"""The job spec (job.json): what one crawl must do, with defaults from settings [crawler].

Why a typed copy of the JSON: every component of the crawl reads the same few values (scope,
politeness, limits); reading them once, with defaults filled in and types checked, turns a bad
spec into one clear error at start instead of a surprise an hour into a crawl. Unknown keys are
ignored (the planning side may add some); missing keys take config/harvestflow.toml [crawler].
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from crawler import CrawlerError
from crawler.urls import without_fragment
from harvestflow.atomic import atomic_write_text, commit, tmp_path
from harvestflow.settings import get_settings


class JobSpecError(CrawlerError, ValueError):
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
    # browser rendering (crawler/render.py): none | seeds | html (every in-scope HTML page)
    render: str = "none"
    render_tabs: int = 2  # tab workers (one Chromium each) per crawler process
    render_page_timeout_s: float = 30.0  # behaviours of one page, then screenshots
    render_min_wait_s: float = 1.5  # dwell after load for timers, before scrolling
    render_max_scrolls: int = 40
    render_pages_per_tab: int = 100  # pages before a tab's browser is restarted
    render_max_memory_mb: int = (
        1024  # a tab's browser above this (PSS sum) is restarted between pages
    )
    max_path_depth: int = 20
    max_repeated_path_segments: int = 2
    max_calendar_pages: int = 200
    max_future_years: int = 1
    retries: int = 2
    download_timeout_s: float = 30.0
    max_response_bytes: int = 100_000_000
    max_header_bytes: int = 262_144  # the whole header section of a response
    # inflated (Content-Encoding) bytes link extraction reads of one response, and of all the
    # responses a crawler process holds at once (crawler/inflate.py); the WARC keeps all it got
    max_inflate_bytes: int = 32 * 1024 * 1024
    inflate_budget_bytes: int = 64 * 1024 * 1024
    max_redirects: int = 5
    max_url_length: int = 2083
    concurrent_requests: int = 16
    warc_max_size: int = 1_000_000_000
    processes: int = 1  # host-partitioned crawler processes of one job (crawler/partition.py)
    resolve: dict[str, str] = field(default_factory=dict)


@dataclass
class DomainBudget:
    """One domain configuration of the job and its limits (-1 = unlimited)."""

    domain: str = ""
    config_id: int | None = None
    max_objects: int = -1
    max_bytes: int = -1


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
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def all_resolve(self) -> dict[str, str]:
        """Host → address overrides of the template and the job (the job wins)."""
        return {**self.template.resolve, **self.resolve}

    def to_json(self) -> str:
        data = asdict(self)
        data.pop("raw")
        return json.dumps(data, indent=1, sort_keys=True)


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


def template_defaults() -> dict[str, Any]:
    """Defaults for a template from settings [crawler] (the keys the template knows)."""
    conf = get_settings().data.get("crawler", {})
    keys = {f for f in asdict(Template())}
    return {k: v for k, v in conf.items() if k in keys}


def from_dict(data: dict[str, Any], where: str = "job spec") -> JobSpec:
    """A JobSpec from the parsed JSON; raises JobSpecError naming the key at fault."""
    if not isinstance(data, dict):
        raise JobSpecError(f"{where}: expected a JSON object")
    conf = get_settings().data.get("crawler", {})
    tdata = {**template_defaults(), **(data.get("template") or {})}
    template = _coerce(Template, tdata, f"{where}: template")
    if template.processes < 1:
        raise JobSpecError(f"{where}: template.processes must be at least 1")
    if template.render not in ("none", "seeds", "html"):
        raise JobSpecError(f"{where}: template.render must be none, seeds or html")
    if template.render_tabs < 1:
        raise JobSpecError(f"{where}: template.render_tabs must be at least 1")
    if template.scope not in ("host", "domain", "path"):
        raise JobSpecError(f"{where}: template.scope must be host, domain or path")
    if template.dedup_mime_exclude:
        try:
            re.compile(template.dedup_mime_exclude)
        except re.error as exc:
            raise JobSpecError(f"{where}: template.dedup_mime_exclude: {exc}") from exc
    seeds = data.get("seeds")
    if not isinstance(seeds, list) or not all(isinstance(s, str) for s in seeds):
        raise JobSpecError(f"{where}: 'seeds' must be a list of URLs")
    if "job_id" not in data:
        raise JobSpecError(f"{where}: 'job_id' is missing")
    domains = [
        _coerce(DomainBudget, d, f"{where}: domains[{i}]")
        for i, d in enumerate(data.get("domains") or [])
    ]
    traps = data.get("crawler_traps") or []
    for i, pattern in enumerate(traps):
        try:
            re.compile(pattern)
        except re.error as exc:
            raise JobSpecError(f"{where}: crawler_traps[{i}] {pattern!r}: {exc}") from exc
    credentials = data.get("credentials") or []
    for i, ref in enumerate(credentials):
        if not isinstance(ref, dict) or not isinstance(ref.get("id"), int):
            raise JobSpecError(f"{where}: credentials[{i}] must be an object with an integer id")
        if set(ref) & {"username", "password", "secret"}:
            raise JobSpecError(f"{where}: credentials[{i}]: a job spec never holds a secret")
    job = JobSpec(
        job_id=int(data["job_id"]),
        # captured under the URL the server is asked for (see urls.without_fragment)
        seeds=list(dict.fromkeys(u for s in seeds if (u := without_fragment(s.strip())))),
        template=template,
        harvest_id=int(data.get("harvest_id") or 0),
        harvest_name=str(data.get("harvest_name") or ""),
        harvest_num=int(data.get("harvest_num") or 0),
        channel=str(data.get("channel") or ""),
        snapshot=bool(data.get("snapshot", False)),
        domains=domains,
        max_objects=int(data.get("max_objects", -1)),
        max_bytes=int(data.get("max_bytes", -1)),
        max_running_time_s=int(data.get("max_running_time_s") or 0),
        crawler_traps=list(traps),
        resolve=dict(data.get("resolve") or {}),
        dedup_index=data.get("dedup_index"),
        warc_prefix=str(data.get("warc_prefix") or ""),
        user_agent=str(data.get("user_agent") or conf.get("user_agent", "harvestflow")),
        from_email=str(data.get("from") or conf.get("from", "")),
        operator=str(data.get("operator") or conf.get("operator", "")),
        organisation=str(data.get("organisation") or conf.get("organisation", "harvestflow")),
        credentials=[dict(c) for c in credentials],
        raw=data,
    )
    if not job.warc_prefix:
        job.warc_prefix = f"{job.job_id}-{job.harvest_id}"
    return job


def load(path: Path) -> JobSpec:
    """Read and check a job.json file."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise JobSpecError(f"{path}: job spec not found") from exc
    except json.JSONDecodeError as exc:
        raise JobSpecError(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}") from exc
    return from_dict(data, str(path))


def write_json(path: Path, data: Any) -> None:
    """Write JSON under a temporary name, then rename (readers never see half a file)."""
    atomic_write_text(path, json.dumps(data, indent=1, sort_keys=True) + "\n")


def freeze_job(job_path: Path, out_dir: Path) -> Path:
    """Copy the job spec to ``out_dir/job.json`` (the frozen spec the crawler ran)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    frozen = out_dir / "job.json"
    if job_path.resolve() != frozen.resolve():
        tmp = tmp_path(frozen)
        shutil.copyfile(job_path, tmp)
        commit(tmp, frozen)
    return frozen
