"""``harvestflow demo``: the whole cycle on the bundled sample website, through the DAGs.

Services up → Airflow metadata DB ready → sample site served on loopback → demo selective
definition → DAG runs, in the order the Assets would chain them: broad_crawl_preload (a small
domain list with garbage lines, answered from a hosts file: no real DNS), selective_harvest_daily
(crawl into WARCs), indexing_chain (CDX, transfer), preservation_ingest (S3, ARKs),
indexing_merge and daily_qa_stats for today. Then it prints where each output is.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from access.config import AccessConfig
from app.demo.samplesite_service import start_sample_site
from app.runtime import airflow_commands, dagrun
from harvest import jobs as harvest_jobs
from harvestflow import db, services
from harvestflow import settings as settings_mod
from harvestflow.contracts.jobdir import JobDir
from harvestflow.contracts.summary import JobSummary
from harvestflow.package_data import data_path
from harvestflow.settings import Settings, get_settings
from indexing import manifest
from preservation import records

log = logging.getLogger(__name__)

DEMO_DATA = data_path("app.demo", "data")


def demo_preload_conf(settings: Settings, site_port: int) -> dict[str, Any]:
    """Params of the demo preload run: sample domains + garbage, answered without DNS."""
    work = settings.path("demo")
    work.mkdir(parents=True, exist_ok=True)
    hosts = work / "hosts"
    hosts.write_text(
        "".join(
            f"127.0.0.1 {h}\n"
            for h in (
                "example-a.test",
                "www.example-a.test",
                "static.example-a.test",
                "example-b.test",
                "www.example-b.test",
            )
        )
    )
    return {
        "run_id": "demo-preload",
        "sources": [
            {
                "name": "registry",
                "kind": "registry",
                "path": str(DEMO_DATA / "registry-domains.txt"),
            },
            {
                "name": "library-urls",
                "kind": "url_list",
                "path": str(DEMO_DATA / "library-urls.txt"),
            },
        ],
        "hosts_file": str(hosts),
        "connect_to": f"127.0.0.1:{site_port}",
    }


def run_demo(keep_services: bool = False) -> int:

    # the demo never asks real DNS: names not in its hosts file are 'failed'
    os.environ.setdefault("HARVESTFLOW_PRELOAD__STATIC_ONLY", "true")
    settings_mod.reset()
    settings = get_settings()
    t0 = time.monotonic()
    started = services.start_all(settings)
    site = None
    try:
        print("[demo] preparing Airflow's metadata database (first run: about a minute)")
        airflow_commands.prepare(settings)
        dagrun.activate(settings)
        site = start_sample_site(settings)
        print(f"[demo] sample site on {site.url()} (hosts resolved to 127.0.0.1 by the crawler)")

        from app.demo.definition import create_demo_definition
        from harvest.bootstrap import ensure_reference_data

        ensure_reference_data()
        harvest_id = create_demo_definition(site.port)
        today = datetime.now(UTC).date().isoformat()
        steps: list[tuple[str, dict[str, Any]]] = [
            ("broad_crawl_preload", demo_preload_conf(settings, site.port)),
            ("selective_harvest_daily", {"harvest_id": harvest_id}),
            ("indexing_chain", {}),
            ("preservation_ingest", {}),
            ("indexing_merge", {"day": today}),
            ("daily_qa_stats", {"day": today}),
        ]
        airflow_log = settings.path("demo", "airflow-demo.log")
        print(f"[demo] Airflow's own output (task logs) goes to {airflow_log}")
        if run_steps(steps, airflow_log) != 0:
            return 1
        print_outputs(settings, harvest_id)
        print(f"[demo] done in {time.monotonic() - t0:.0f}s")
        return 0
    finally:
        if site is not None:
            site.stop()
        if not keep_services and started:
            db.dispose_engines()
            services.stop_all(settings)


def run_steps(steps: list[tuple[str, dict[str, Any]]], airflow_log: Path) -> int:
    """Run each DAG of ``steps`` in turn; 0 when every run and every task of it succeeded.

    Prints each task's state. At the first run that failed, or that has a task that did not
    succeed, it prints which tasks and stops (the later DAGs take this one's output): 1.
    """
    for dag_id, conf in steps:
        print(f"[demo] running DAG {dag_id} …", flush=True)
        try:
            with output_to(airflow_log):
                states = dagrun.run_dag(dag_id, conf=conf)
        except dagrun.DagRunFailed as failed:
            print(f"[demo]   {dag_id}: FAILED (run {failed.run_state})", flush=True)
            for task_id, state in failed.states.items():
                print(f"[demo]     task {task_id}: {state}", flush=True)
            print(f"[demo] FAILED: {failed}; task logs in {airflow_log}", file=sys.stderr)
            return 1
        print(f"[demo]   {dag_id}: success ({len(states)} task instances)", flush=True)
        for task_id, state in states.items():
            print(f"[demo]     task {task_id}: {state}", flush=True)
    return 0


@contextlib.contextmanager
def output_to(path: Path) -> Iterator[None]:
    """Send this process's stdout/stderr (fd level, so Airflow's too) to ``path`` for a while."""
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(path, "ab") as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def print_outputs(settings: Settings, harvest_id: int) -> None:
    engine = db.get_engine()
    with engine.connect() as conn:
        jobs = harvest_jobs.jobs_of_definition(conn, harvest_id)
        files = manifest.file_locations(conn)
        preserved = records.files_with_ark(conn)
    print("\n=== where everything is ===")
    for job in jobs:
        job_dir = Path(job.job_dir or "")
        jd = JobDir(job_dir)
        counts = JobSummary.read(jd.summary_json) if jd.summary_json.exists() else None
        print(f"job {job.job_id} (status {job.status}): {job_dir}")
        print(f"  URLs {counts and counts.urls}, bytes {counts and counts.bytes}")
        print(f"  crawl.log: {jd.crawl_log}")
        print(f"  reports:   {jd.reports}")
    for f in files:
        print(f"WARC {f.file_name}: {f.stage} → {f.final_path}")
    print(f"CDX indexes: {settings.path('index', 'cdx')}")
    print(f"PATH index:  {settings.path('index', 'path')}")
    for p in preserved:
        print(f"preserved {p.file_name}: {p.ark} s3://{settings.s3.bucket}/{p.s3_key} ({p.status})")
    print(f"QA reports:  {settings.path('qa')}")
    access = settings.path(str(settings.get("access", "data_subdir", "access") or "access"))
    # the replay site (a host of its own, not the gateway's address on Airflow's host, which
    # only redirects there)
    replay = AccessConfig.from_settings(settings).url.rstrip("/")
    print(f"replay index: {access / 'zipnum'} (ZipNum); `harvestflow access serve`, then")
    print(f"  {replay}/all/*/<url> lists the captures of a URL, {replay}/all/<ts>/<url> replays")
    print(f"preload:     {settings.path('preload', 'demo-preload')}")
