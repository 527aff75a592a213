"""The crawl process's command line (``python -m crawler``, and ``harvestflow crawl``: app.cli.crawl).

Run a job file, or an ad-hoc crawl of a few seeds.

Why both forms: the harvest DAG runs ``--job JOB.json --out DIR`` (frozen spec from planning);
a crawl engineer checking a site runs ``--seed URL … --out DIR`` with a named template and a
few overrides. Both end in the same :func:`crawler.runner.run_spec`, and print the summary.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import sys
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crawler import EXIT_REFUSED

if TYPE_CHECKING:
    from harvestflow.contracts.summary import JobSummary

log = logging.getLogger(__name__)


def templates_dir() -> Path:
    """config/templates/: the reviewed template files the harvest DB is loaded from too."""
    from harvestflow.package_data import data_path

    return data_path("config", "templates")


def builtin_templates() -> dict[str, dict[str, Any]]:
    """Templates by name, read from config/templates/ (the ``[spec]`` table of each file).

    Why the same files as the harvest DB: an ad-hoc ``--template NAME`` crawl must behave like a
    harvest with that template. Missing keys take the settings' [crawler] defaults later, in
    :func:`crawler.jobspec.from_dict`; a file that does not parse is named and skipped.
    """
    templates: dict[str, dict[str, Any]] = {}
    for path in sorted(templates_dir().glob("*.toml")):
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            log.warning("template file %s skipped: %s", path, exc)
            continue
        templates[str(data.get("name") or path.stem)] = dict(data.get("spec") or {})
    return templates


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--job", type=Path, help="job spec (job.json) to run")
    parser.add_argument("--out", type=Path, required=True, help="job output directory")
    parser.add_argument("--seed", action="append", default=[], help="seed URL (repeatable)")
    parser.add_argument(
        "--template",
        default="default_selective",
        help="template name: a file of config/templates/ (default: default_selective)",
    )
    parser.add_argument("--max-hops", type=int, help="maximum link hops from a seed")
    parser.add_argument(
        "--render",
        choices=("none", "seeds", "html"),
        default=None,
        help="render pages in headless Chromium: none, the seeds, or every in-scope HTML page"
        " (default: the template's)",
    )
    parser.add_argument("--ignore-robots", action="store_true", help="do not obey robots.txt")
    parser.add_argument(
        "--no-politeness",
        action="store_true",
        help="no delay between fetches, several connections per host",
    )
    parser.add_argument(
        "--resolve",
        action="append",
        default=[],
        metavar="HOST:IP",
        help="map a host name to an address without DNS (repeatable)",
    )
    parser.add_argument(
        "--allow-private",
        action="store_true",
        help="allow loopback/private addresses reached through DNS",
    )
    parser.add_argument(
        "--fetch-client",
        choices=("twisted", "asyncio"),
        default=None,
        help="HTTP/1.1 client: Scrapy's Twisted one, or the experimental asyncio one"
        " (crawler/asyncio_fetch.py) (default: the template's, twisted)",
    )
    parser.add_argument("--job-id", type=int, default=0, help="job id of an ad-hoc crawl")
    parser.add_argument(
        "--processes",
        type=int,
        default=None,
        help="host-partitioned crawler processes (default: the template's, 1)",
    )
    # a partition child of a --processes N crawl (started by crawler/partitioned_run.py)
    parser.add_argument("--partition", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--coord", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument(
        "--progress-interval",
        type=float,
        default=None,
        help="seconds between progress lines (default: settings)",
    )


def adhoc_spec(args: argparse.Namespace) -> dict[str, Any]:
    """A job spec dict for ``--seed`` crawls."""
    templates = builtin_templates()
    if args.template not in templates:
        raise SystemExit(f"unknown template {args.template!r}; known: {', '.join(templates)}")
    template = dict(templates[args.template], name=args.template)
    if args.max_hops is not None:
        template["max_hops"] = args.max_hops
    if args.render is not None:
        template["render"] = args.render
    if args.fetch_client is not None:
        template["fetch_client"] = args.fetch_client
    if args.ignore_robots:
        template["obey_robots"] = False
    if args.no_politeness:
        template.update(delay_factor=0.0, min_delay_ms=0, max_delay_ms=0, connections_per_host=8)
    if args.allow_private:
        template["allow_private_addresses"] = True
    resolve = {}
    for item in args.resolve:
        host, sep, ip = item.partition(":")  # a host name has no colon; an IPv6 address has
        if not sep or not host or not ip:
            raise SystemExit(f"--resolve {item!r}: expected HOST:IP")
        resolve[host.lower()] = ip
    return {
        "job_id": args.job_id,
        "harvest_id": 0,
        "seeds": args.seed,
        "template": template,
        "resolve": resolve,
        "warc_prefix": f"{args.job_id}-0",
    }


def bad_seeds(seeds: list[str]) -> list[str]:
    """Why each ``--seed`` that is not an http(s) URL is refused (none: all good).

    The checks are the selection import's (:func:`harvestflow.formats.seeds.check_seed_url`),
    plus a scheme: a curator's file may say ``www.example.fr``, but a word on the command line
    without ``http://`` (``--seed notaurl``) is a mistake, not a host to crawl. The seeds are
    crawled as given (the check's canonical form could reorder a query).
    """
    from harvestflow.formats.seeds import SeedError, check_seed_url

    refused = []
    for seed in seeds:
        if "://" not in seed:
            refused.append(f"--seed {seed!r} is not a URL (give it with http:// or https://)")
            continue
        try:
            check_seed_url(seed)
        except SeedError as exc:
            refused.append(f"--seed {seed!r} is not a URL to crawl: {exc}")
    return refused


def refused_job(job: Path) -> str | None:
    """Why the job spec ``job`` is refused (a key missing or of a wrong value, invalid JSON), or
    None when it is accepted or not there to read.

    Why before the crawl, with its own exit status (:data:`crawler.EXIT_REFUSED`): a refused
    spec is refused again on every run, so the crawl task must fail at once rather than retry a
    crawler start for the same refusal. A file that is not there is left to the crawl's own
    failure (retried): on a shared data directory that can be passing.
    """
    from crawler import jobspec
    from harvestflow.contracts.jobspec import JobSpecError

    if not job.exists():
        return None
    try:
        jobspec.load(job)
    except JobSpecError as exc:
        return str(exc)
    return None


def setup_logging() -> None:
    """Progress lines on stdout (what a parent relays), warnings on stderr — unless a caller
    (the harvestflow CLI) has configured logging already."""
    root = logging.getLogger()
    if root.handlers:
        return
    root.setLevel(logging.INFO)
    err = logging.StreamHandler(sys.stderr)
    err.setLevel(logging.WARNING)
    err.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root.addHandler(err)
    out = logging.StreamHandler(sys.stdout)
    out.setLevel(logging.INFO)
    out.setFormatter(logging.Formatter("PROGRESS %(message)s"))
    logging.getLogger("crawler.progress").addHandler(out)


def _run_job(job: Path, out: Path, processes: int | None, interval: float) -> JobSummary:
    """One process, or ``processes`` host-partitioned ones (the option, else the template)."""
    from crawler import jobspec

    n = processes if processes is not None else jobspec.load(job).template.processes
    if n > 1:
        # the parent never imports Scrapy (seconds of start-up before the children start); it
        # supervises them for the whole crawl, its collector on (see run_from_args)
        from crawler import partitioned_run as partition

        gc.enable()
        return partition.run_partitioned(job, out, n, progress_interval_s=interval)
    from crawler import runner

    return runner.run_job(job, out, progress_interval_s=interval)


def run_from_args(args: argparse.Namespace) -> int:
    """Run the crawl the options ask for; the process's exit status.

    The cyclic collector is off while the crawl starts: imports and Scrapy's set-up build
    ~80,000 container objects that live as long as the process, and the collections they set
    off (~150 young ones, a dozen middle ones and a full one walking everything loaded) found
    ~300 objects to free, for ~0.1 CPU-s of every crawl process. crawler.runner.run_spec
    freezes what start-up built and turns the collector on for the crawl.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _run_from_args(args)
    finally:
        if enabled:
            gc.enable()


def _run_from_args(args: argparse.Namespace) -> int:
    from crawler import jobspec
    from harvestflow.contracts.jobdir import JobDir
    from harvestflow.contracts.jobspec import JobSpec
    from harvestflow.settings import get_settings

    setup_logging()
    interval = args.progress_interval
    if interval is None:
        interval = float(get_settings().get("crawler", "progress_interval_s", 10))
    if args.partition:
        from crawler.partitioning.handoff import Partition

        index, _, count = args.partition.partition("/")
        part = Partition(int(index), int(count), Path(args.coord))
        from crawler import runner

        spec = jobspec.load(args.job)
        summary = runner.run_spec(spec, args.out, progress_interval_s=interval, partition=part)
    elif args.job:
        job_path = args.job
        refusal = refused_job(job_path)
        if refusal:
            sys.stderr.write(f"harvestflow crawl: job refused: {refusal}\n")
            return EXIT_REFUSED
        if args.render is not None:  # the option wins over the job's template: frozen so
            given = JobSpec.read(job_path)
            given.template_given["render"] = args.render
            args.out.mkdir(parents=True, exist_ok=True)
            job_path = JobDir(args.out).job_json
            JobSpec.from_dict(given.to_dict(), str(job_path)).write(job_path)
        summary = _run_job(job_path, args.out, args.processes, interval)
    else:
        if not args.seed:
            raise SystemExit("give --job JOB.json or at least one --seed URL")
        refused = bad_seeds(args.seed)
        if refused:
            for line in refused:
                sys.stderr.write(f"harvestflow crawl: {line}\n")
            return EXIT_REFUSED
        data = adhoc_spec(args)
        args.out.mkdir(parents=True, exist_ok=True)
        job_file = JobDir(args.out).job_json
        if not job_file.exists():
            JobSpec.from_dict(data, "the --seed options").write(job_file)
        spec = jobspec.load(job_file)
        summary = _run_job(job_file, args.out, args.processes, interval)
    sys.stdout.write("SUMMARY " + json.dumps(summary.to_dict(), sort_keys=True) + "\n")
    sys.stdout.flush()
    # 3: the crawl ended before the job did; crawler.launch fails the crawl task on it
    return 0 if summary.finished else 3
