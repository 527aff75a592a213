"""The CeleryExecutor for real: `harvestflow up` with [airflow] executor = "celery" starts the
redis-server broker, and `harvestflow worker` processes with their own names and queue sets take
the tasks (the task instance's hostname is the worker's name). In order, on one platform:

1. a selective job's crawl runs only on the worker of the `crawl_high` queue, every other task
   on the `default` worker;
2. a broad crawl over 20 loopback hosts (jobs of 5 domains) runs its crawls on both
   `crawl_low` workers, every URL fetched once;
3. two one-off jobs crawling the same host at the same time keep the host's politeness
   together (measured at the test's own server from request times);
4. a second `crawl_high` worker joins, a one-off crawl starts on one of the two, that worker and
   its crawler are killed (SIGKILL), and the job finishes on the other: its retry takes the
   expired job lease and resumes the job directory, no URL fetched twice, and the job's WARCs
   pass `warcio check`.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx
import pytest

from app.demo import samplesite
from app.demo.samplesite import SampleSite
from harvestflow.services.postgres import port_open
from harvestflow.services.process import die_with_parent
from tests.support.platform_cli import (
    HARVESTFLOW,
    PAUSED_AT_CREATION,
    Output,
    _fetched,
    _stop,
    _wait_run,
    isolated_env,
    start_up,
    unpause,
)

# `long`, out of the default run and CI: a platform of its own and four more workers for about
# 10 min (577 s measured at load 6-12 with only its DAGs unpaused: the platform's start 91 s, each
# scenario 95-151 s, the stop 21 s; even its routing scenario alone, ~230 s with the start, would
# take CI to about its 30 min with the small national day, tests/bench/test_day.py, which takes
# most of what CI had left). What CI keeps of it: the CeleryExecutor with `up`'s two workers,
# the scheduler's chain and the queue each task is routed to (the day); a worker killed
# mid-crawl and its job resumed with every page once (tests/faults/test_worker_faults.py). Only
# here: workers that take one queue each, a crawl moving to the other worker, two jobs on one
# host across workers.
pytestmark = [pytest.mark.long, pytest.mark.airflow, pytest.mark.slow]

SCALE_HOSTS = [f"www.scale{i}.test" for i in range(20)]
DELAY = 0.3  # the polite template's delay between two fetches of a host
TOLERANCE = 0.03


def _kill_tree(pid: int) -> None:
    import psutil

    root = psutil.Process(pid)
    procs = [root, *root.children(recursive=True)]
    for p in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.kill()
    psutil.wait_procs(procs, timeout=30)


def _stop_workers(workers: list[subprocess.Popen[Any]], timeout: float = 60) -> None:
    """SIGTERM to every worker at once (``harvestflow worker`` passes it on: Celery's warm
    shutdown, which waits for running tasks), then SIGKILL to what is left of each one's
    process group (the Celery worker, its pool, task supervisors and crawlers)."""
    for proc in workers:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for proc in workers:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(max(0.1, deadline - time.monotonic()))
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@dataclass
class Platform:
    """`harvestflow up` under celery, its API client, its workers and a test-owned site."""

    env: dict[str, str]
    tmp: Path
    out: Output
    client: httpx.Client
    site: SampleSite  # the test's own sample site: its request log is read by the tests
    harvest_id: int
    data_dir: Path
    workers: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    logs: dict[str, IO[bytes]] = field(default_factory=dict)

    def worker(self, name: str, queues: str, concurrency: int = 2) -> subprocess.Popen[bytes]:
        log = self.logs[name] = open(self.tmp / f"{name}.log", "wb")  # noqa: SIM115
        self.workers[name] = subprocess.Popen(
            [
                HARVESTFLOW,
                "worker",
                "--queues",
                queues,
                "--name",
                name,
                "--concurrency",
                str(concurrency),
                "--skip-serve-logs",
            ],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its group is killed by the fixture's end
            # and if this test process dies first (a pytest killed from outside never runs the
            # fixture's end), the kernel sends it SIGQUIT, which it passes on: Celery's cold
            # shutdown, which ends the running tasks too
            preexec_fn=functools.partial(die_with_parent, signal.SIGQUIT),
        )
        return self.workers[name]

    def python(self, code: str) -> None:
        """Run ``code`` in a process configured like the platform's (its database)."""
        done = subprocess.run(
            [sys.executable, "-c", code], env=self.env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stdout + done.stderr

    def add_template(self, name: str, overrides: dict[str, Any]) -> None:
        self.python(
            "import json, sqlalchemy as sa\n"
            "from harvestflow.db import get_engine\n"
            "from harvest.templates import default_spec\n"
            f"spec = {{**default_spec(), **json.loads({json.dumps(json.dumps(overrides))})}}\n"
            "with get_engine().begin() as conn:\n"
            "    conn.execute(sa.text('INSERT INTO templates (name, spec)"
            " VALUES (:n, CAST(:s AS jsonb))'),"
            f" {{'n': {name!r}, 's': json.dumps(spec)}})\n"
        )

    def trigger(self, dag_id: str, conf: dict[str, Any]) -> str:
        run = self.client.post(
            f"/api/v2/dags/{dag_id}/dagRuns", json={"logical_date": None, "conf": conf}
        )
        assert run.status_code == 200, run.text
        return str(run.json()["dag_run_id"])

    def task_instances(self, dag_id: str, run_id: str) -> list[dict[str, Any]]:
        url = f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances"
        return list(self.client.get(url, params={"limit": 200}).json()["task_instances"])

    def finish(self, dag_id: str, run_id: str) -> tuple[str, list[dict[str, Any]]]:
        state = _wait_run(self.client, dag_id, run_id, 900)
        return state, self.task_instances(dag_id, run_id)


@pytest.fixture(scope="module")
def platform(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Platform]:
    failed_before = request.session.testsfailed
    tmp = tmp_path_factory.mktemp("celery")  # the workers' logs
    # the data dir is not under pytest's numbered folders: another pytest session starting on
    # the same machine resets their permissions, and PostgreSQL (its own system user) must
    # traverse them
    data_dir = Path(tempfile.mkdtemp(prefix="hf-celery-")) / "var"
    env = isolated_env(data_dir)
    env["HARVESTFLOW_AIRFLOW__EXECUTOR"] = "celery"
    # a lost worker is noticed in seconds, not minutes: short job lease, short TI heartbeat
    env["HARVESTFLOW_CRAWLER__JOB_LEASE_TTL_S"] = "6"
    env["AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT"] = "20"
    # a scaled-out broad crawl: several snapshot crawls at once, jobs of 5 domains
    env["HARVESTFLOW_AIRFLOW__LOW_PRIORITY_SLOTS"] = "4"
    # room for two one-off crawls beside the selective harvest's
    env["HARVESTFLOW_AIRFLOW__HIGH_PRIORITY_SLOTS"] = "4"
    env["HARVESTFLOW_JOBGEN__FIXED_DOMAIN_COUNT_SNAPSHOT"] = "5"
    # only the DAGs the tests run: no other schedule's first run takes the workers meanwhile
    env.update(PAUSED_AT_CREATION)
    broker_port = int(env["HARVESTFLOW_BROKER__PORT"])
    up, out = start_up(env)
    site = samplesite.start()
    platform: Platform | None = None
    try:
        harvest_id = int(out.wait_for(r"demo definition id (\d+)", 300).group(1))
        login = out.wait_for(r"Airflow UI: (http://\S+)\s+login: (\S+) / (\S+)", 300)
        assert port_open("127.0.0.1", broker_port)  # the embedded broker, on loopback
        base, user, password = login.group(1).rstrip("/"), login.group(2), login.group(3)
        token = httpx.post(
            f"{base}/auth/token", json={"username": user, "password": password}, timeout=10
        ).json()["access_token"]
        with httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=30
        ) as client:
            platform = Platform(env, tmp, out, client, site, harvest_id, data_dir)
            platform.worker("hf-high", "crawl_high", concurrency=4)
            platform.worker("hf-other", "default", concurrency=4)
            unpause(client, {"selective_harvest_daily", "broad_crawl", "oneoff_harvest"})
            yield platform
    finally:
        if platform is not None:
            _stop_workers(list(platform.workers.values()))
            for f in platform.logs.values():
                f.close()
        site.stop()
        _stop(up, signal.SIGINT, 180)
        if request.session.testsfailed == failed_before:
            shutil.rmtree(data_dir.parent, ignore_errors=True)
        else:  # kept for the post-mortem: job directories, crawl.logs, Airflow's task logs
            print(f"test_celery: data directory kept in {data_dir}")
    assert up.returncode == 0, "".join(out.lines)[-3000:]
    assert not port_open("127.0.0.1", broker_port)  # up stopped the broker it started


def test_up_without_a_local_worker_warns_that_tasks_wait_until_a_worker_connects(
    platform: Platform,
) -> None:
    """`up` under celery with no ``--workers``: nothing would run a task until a worker of the
    operator's connects, and `up` says so once it is ready (the workers here come after)."""
    said = platform.out.wait_for(r"WARNING: no local worker.*", 5).group(0)
    assert "for ever, until a `harvestflow worker` connects" in said, said


def test_a_selective_crawl_runs_only_on_the_crawl_high_worker(platform: Platform) -> None:
    run_id = platform.trigger("selective_harvest_daily", {"harvest_id": platform.harvest_id})
    state, tis = platform.finish("selective_harvest_daily", run_id)
    ran = {(t["task_id"], t["map_index"]): (t["state"], t["hostname"], t["queue"]) for t in tis}
    assert state == "success", ran
    crawls = {k: v for k, v in ran.items() if k[0] == "harvest_job.crawl"}
    assert crawls and all(v == ("success", "celery@hf-high", "crawl_high") for v in crawls.values())
    others = {v[1] for k, v in ran.items() if k[0] != "harvest_job.crawl" and v[0] == "success"}
    assert others == {"celery@hf-other"}, ran


def test_a_broad_crawl_over_twenty_hosts_runs_on_both_crawl_low_workers(
    platform: Platform,
) -> None:
    platform.worker("hf-low1", "crawl_low", concurrency=1)
    platform.worker("hf-low2", "crawl_low", concurrency=1)
    platform.add_template(
        "scale_loopback",
        {
            "allow_private_addresses": True,
            "delay_factor": 0.0,
            "min_delay_ms": 0,
            "max_delay_ms": 50,
            "resolve": {host: "127.0.0.1" for host in SCALE_HOSTS},
        },
    )
    seeds = {host.removeprefix("www."): platform.site.url(host, "/") for host in SCALE_HOSTS}
    platform.python(
        "from harvest.domains import ensure_config\n"
        "from harvestflow.db import get_engine\n"
        "with get_engine().begin() as conn:\n"
        f"    for domain, seed in {seeds!r}.items():\n"
        "        ensure_config(conn, domain, template='scale_loopback', seeds=[seed],"
        " make_default=True)\n"
    )
    run_id = platform.trigger(
        "broad_crawl", {"name": "broad-celery", "step1_max_objects": 100, "run_step2": False}
    )
    state, tis = platform.finish("broad_crawl", run_id)
    crawls = {
        t["map_index"]: (t["state"], t["hostname"], t["queue"])
        for t in tis
        if t["task_id"] == "step1_job.crawl"
    }
    assert state == "success", crawls
    assert len(crawls) >= 4, crawls  # 20 domains (and the demo's 2) in jobs of 5
    assert {v[0] for v in crawls.values()} == {"success"}
    assert {v[2] for v in crawls.values()} == {"crawl_low"}
    assert {v[1] for v in crawls.values()} == {"celery@hf-low1", "celery@hf-low2"}, crawls
    for host in SCALE_HOSTS:  # every host's pages fetched, each once, across the jobs
        for path in ("/", "/page/1", "/page/2", "/page/3"):
            assert len(platform.site.served(host, path)) == 1, (host, path)


def test_two_concurrent_jobs_on_one_host_keep_its_delay(platform: Platform) -> None:
    platform.add_template(
        "celery_polite",
        {
            "allow_private_addresses": True,
            "delay_factor": 0.0,
            "min_delay_ms": int(DELAY * 1000),
            "max_delay_ms": int(DELAY * 1000),
            "connections_per_host": 1,
            "max_hops": 1,
            "obey_robots": False,
        },
    )
    host = "www.example-a.test"
    runs = [
        platform.trigger(
            "oneoff_harvest",
            {
                "seeds": [
                    platform.site.url(host, f"/slow?ms=20&job={job}&n={i}") for i in range(50)
                ],
                "template": "celery_polite",
                "resolve": {host: "127.0.0.1"},
            },
        )
        for job in ("a", "b")
    ]
    for run_id in runs:
        state, tis = platform.finish("oneoff_harvest", run_id)
        assert state == "success", [(t["task_id"], t["state"]) for t in tis]
    # (the seeds' query strings come back sorted: job=, ms=, n=)
    reqs = sorted(
        (r for r in platform.site.served(host) if r.path.startswith("/slow?job=")),
        key=lambda r: r.started,
    )
    by_job = {job: [r for r in reqs if f"job={job}&" in r.path] for job in ("a", "b")}
    assert [len(v) for v in by_job.values()] == [50, 50]
    a, b = by_job["a"], by_job["b"]  # each in the order the server saw it
    # the two crawls ran at the same time: the host's requests alternate between them
    switches = sum(
        ("job=a&" in p.path) != ("job=a&" in n.path) for p, n in itertools.pairwise(reqs)
    )
    assert switches >= 5, (switches, a[0].started, a[-1].started, b[0].started, b[-1].started)
    gaps = [nxt.started - prev.ended for prev, nxt in itertools.pairwise(reqs)]
    assert min(gaps) >= DELAY - TOLERANCE, gaps


def test_a_killed_workers_crawl_finishes_on_the_other_worker(platform: Platform) -> None:
    platform.worker("hf-high2", "crawl_high")
    port = platform.out.wait_for(r"sample site: (http://\S+)", 10).group(1).rstrip("/")
    port = port.rsplit(":", 1)[1]
    seeds = [f"http://www.example-a.test:{port}/slow?ms=700&n={i}" for i in range(30)]
    earlier = set(platform.data_dir.rglob("crawl.log"))
    run_id = platform.trigger(
        "oneoff_harvest",
        {
            "seeds": seeds,
            "template": "demo_loopback",
            "resolve": {"www.example-a.test": "127.0.0.1"},
        },
    )
    victim = None
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and victim is None:
        for t in platform.task_instances("oneoff_harvest", run_id):
            if t["task_id"] == "harvest_job.crawl" and t["state"] == "running":
                victim = t["hostname"].removeprefix("celery@")  # the Celery node name
        time.sleep(1)
    assert victim in ("hf-high", "hf-high2"), victim
    logs_found: list[Path] = []
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        logs_found = [p for p in platform.data_dir.rglob("crawl.log") if p not in earlier]
        if len(_fetched(logs_found)) >= 3:
            break
        time.sleep(0.5)
    _kill_tree(platform.workers[victim].pid)  # the worker, its task and its crawler
    at_kill = len(_fetched(logs_found))
    state, tis = platform.finish("oneoff_harvest", run_id)
    crawl = next(t for t in tis if t["task_id"] == "harvest_job.crawl")
    survivor = ({"hf-high", "hf-high2"} - {victim}).pop()
    assert state == "success", tis
    assert (crawl["state"], crawl["hostname"]) == ("success", f"celery@{survivor}")
    assert crawl["try_number"] >= 2
    fetched = _fetched(logs_found)
    # the job's WARCs (the killed crawler's .open file repaired on resume) pass warcio's checker,
    # in the job directory or wherever the indexing chain has copied them by now
    # (<data>/jobs/<definition>/<job>/<launch>/logs/crawl.log; WARCs named <job>-<definition>-...)
    names = {f"{p.parents[2].name}-{p.parents[3].name}-" for p in logs_found}
    warcs = sorted(
        w for w in platform.data_dir.rglob("*.warc.gz") if w.name.startswith(tuple(names))
    )
    assert warcs, names
    checked = subprocess.run(
        [str(Path(sys.executable).parent / "warcio"), "check", *map(str, warcs)],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert sorted(set(fetched)) == sorted(seeds)  # every seed captured ...
    assert len(fetched) == len(seeds)  # ... exactly once, across the kill
    assert 0 < at_kill < len(seeds), at_kill  # the kill came in the middle of the crawl
