"""Fault injection on `harvestflow up --workers 2` (celery executor, the workers separate
processes), each fault mid-crawl of a one-off harvest of a slow loopback site, on one platform:

1. a worker's process group killed (``kill -9 -PGID``): `up` goes on and restarts the worker,
   saying so; the killed worker's task runner and crawler die with it (nothing crawls
   unsupervised); the job resumes within 2 × ``job_lease_ttl_s`` (the time is printed) and
   finishes with every page captured once (the server's log and crawl.log), its WARCs pass
   ``warcio check``;
2. the broker (Redis) stopped for 15 s mid-crawl (a crawl of 20 slow pages), the crawl ending and the chain's next tasks
   due while it is away: no task is failed for it (the scheduler keeps publishing them until
   the broker is back), the run succeeds with every page captured once, the crawl not rerun;
3. `up` stopped (SIGTERM) mid-crawl: every process it started, and `up` itself, is gone within
   ``stop_grace_s`` + 15 s (the time is printed), the crawler saved its job resumable (an ``unfinished`` summary, no
   ``.open`` WARC), and the next `up` (one worker) finishes the job, every page captured once.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from app.demo import samplesite
from harvestflow import services as svc
from harvestflow.services.postgres import port_open
from harvestflow.settings import load
from tests.support.environment import data_root, oracle
from tests.support.platform_cli import (
    HARVESTFLOW,
    PAUSED_AT_CREATION,
    Output,
    _fetched,
    _stop,
    _wait_run,
    api_client,
    isolated_env,
    start_up,
    task_instances,
    trigger,
    unpause,
    wait_dags,
)

# the module's platform starts within the first test's time (~1.5 min in CI, 5 on a machine
# shared by several sessions, where a crawl task also took 4 min to start): ceilings only
pytestmark = [pytest.mark.airflow, pytest.mark.slow, pytest.mark.timeout(1200)]

TTL_S = 30  # [crawler] job_lease_ttl_s (the scheduler fails a silent task after half of it,
# 15 s: the floor of app/runtime/airflow_config.recovery_env; a shorter wait for the resume)
GRACE_S = 10  # [crawler] stop_grace_s
OUTAGE_S = 15  # how long a service of ours is stopped (the crawl must end inside it)
HOST = "www.example-a.test"


@dataclass
class Cluster:
    env: dict[str, str]
    data_dir: Path
    site: samplesite.SampleSite
    up: subprocess.Popen[str]
    out: Output
    client: httpx.Client

    def start(self, workers: int = 2) -> None:
        self.up, self.out = start_up(self.env, "--workers", str(workers))
        self.client = api_client(self.out)
        wait_dags(self.client, {"oneoff_harvest"})

    def seeds(self, tag: str, count: int = 30) -> list[str]:
        return [self.site.url(HOST, f"/slow?ms=700&n={i}&t={tag}") for i in range(count)]

    def oneoff(self, seeds: list[str]) -> str:
        conf = {"seeds": seeds, "template": "demo_loopback", "resolve": {HOST: "127.0.0.1"}}
        return trigger(self.client, "oneoff_harvest", conf)

    def crawl_logs(self) -> list[Path]:
        """The crawl.log files of the jobs (<data>/jobs/<definition>/<job>/<launch>/logs): the
        walk is polled while a crawl starts, and all of the data directory (PostgreSQL's,
        SeaweedFS's and Airflow's files, ~2,500) took ~6 ms of CPU each time."""
        return list((self.data_dir / "jobs").rglob("crawl.log"))

    def crawl_ti(self, run_id: str) -> dict[str, Any]:
        tis = task_instances(self.client, "oneoff_harvest", run_id)
        return next(t for t in tis if t["task_id"] == "harvest_job.crawl")


def _crawlers() -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        if (p.info["cmdline"] or [])[1:3] == ["-m", "crawler"]:
            found.append(p)
    return found


def _job_crawler(spec: str | None = None) -> psutil.Process | None:
    for p in _crawlers():
        with contextlib.suppress(psutil.Error):
            if spec is None or spec in p.cmdline():
                return p
    return None


def _wait_fetching(cluster: Cluster, earlier: set[Path], count: int = 3) -> list[Path]:
    deadline = time.monotonic() + 600  # a ceiling: a crawl task starts in ~20 s in CI
    while time.monotonic() < deadline:
        logs = [p for p in cluster.crawl_logs() if p not in earlier]
        if len(_fetched(logs)) >= count:
            return logs
        time.sleep(0.3)
    raise AssertionError("the crawl did not start fetching")


def _crawl_midway(
    cluster: Cluster, tag: str, count: int = 30
) -> tuple[list[str], str, list[Path], psutil.Process]:
    """A one-off of ``count`` slow pages started and fetching: its seeds, run id, crawl.log and
    crawler process."""
    seeds = cluster.seeds(tag, count)
    earlier = set(cluster.crawl_logs())
    run_id = cluster.oneoff(seeds)
    logs = [p for p in _wait_fetching(cluster, earlier) if _fetched([p])]
    (job_dir,) = {p.parents[1] for p in logs}
    crawler = _job_crawler(str(job_dir))
    assert crawler is not None
    return seeds, run_id, logs, crawler


def _captured_once(cluster: Cluster, logs: list[Path], seeds: list[str], tag: str) -> None:
    """Every seed in crawl.log once, served once by the site, and the job's WARCs valid."""
    fetched = [u for u in _fetched(logs) if f"t={tag}" in u]
    assert sorted(fetched) == sorted(seeds), sorted(set(seeds) - set(fetched))
    served = [r.path for r in cluster.site.served(HOST) if f"t={tag}" in r.path]
    assert sorted(served) == sorted(s.split(str(cluster.site.port), 1)[1] for s in seeds)
    # WARCs named <job>-<definition>-...; logs at <data>/jobs/<definition>/<job>/<launch>/logs
    names = {f"{p.parents[2].name}-{p.parents[3].name}-" for p in logs}
    warcs = sorted(
        w for w in cluster.data_dir.rglob("*.warc.gz") if w.name.startswith(tuple(names))
    )
    assert warcs, names
    checked = subprocess.run(
        [str(oracle("warcio")), "check", *map(str, warcs)], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.fixture(scope="module")
def cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    failed_before = request.session.testsfailed
    data_dir = Path(tempfile.mkdtemp(prefix="hf-faults-", dir=data_root())) / "var"
    env = isolated_env(data_dir)
    env["HARVESTFLOW_AIRFLOW__EXECUTOR"] = "celery"
    env["HARVESTFLOW_CRAWLER__JOB_LEASE_TTL_S"] = str(TTL_S)
    env["HARVESTFLOW_CRAWLER__STOP_GRACE_S"] = str(GRACE_S)
    env["HARVESTFLOW_AIRFLOW__WORKER_CONCURRENCY"] = "2"
    # one job at a time here: its politeness needs no cluster-wide host lease
    env["HARVESTFLOW_CRAWLER__HOST_LEASES"] = "false"
    # a one-off harvest writes no preservation copy: one SeaweedFS, not the replica's second
    # (a deployment's own choice, [s3_replica] enabled = false; `up` then starts one)
    env["HARVESTFLOW_S3_REPLICA__ENABLED"] = "false"
    # only the one-off DAG runs (no schedule's first run holds the workers' slots)
    env.update(PAUSED_AT_CREATION)
    site = samplesite.start()
    up, out = start_up(env, "--workers", "2")
    c = Cluster(env, data_dir, site, up, out, httpx.Client())
    try:
        c.client = api_client(out)
        unpause(c.client, {"oneoff_harvest"})
        yield c
    finally:
        c.client.close()
        # SIGTERM, which `up` handles whatever it inherited: SIGINT is ignored in a command
        # started in the background by a shell (`up` then ran out the 180 s and was killed)
        _stop(c.up, signal.SIGTERM, 180)
        site.stop()
        if request.session.testsfailed == failed_before:
            shutil.rmtree(data_dir.parent, ignore_errors=True)
        else:
            print(f"tests/faults: data directory kept in {data_dir}")


def test_a_killed_worker_is_restarted_its_crawl_dies_with_it_and_resumes_once(
    cluster: Cluster,
) -> None:
    seeds, run_id, logs, crawler = _crawl_midway(cluster, "kill")
    victim = cluster.crawl_ti(run_id)["hostname"]
    spec = crawler.cmdline()[crawler.cmdline().index("--job") + 1]
    task_runner = crawler.parent()
    # the worker: the ancestor that `up` started (Celery rewrites its command line and, with
    # it, what /proc shows of its environment)
    worker = task_runner
    while worker is not None and worker.ppid() != cluster.up.pid:
        worker = worker.parent()
    assert worker is not None and task_runner is not None
    assert os.getpgid(task_runner.pid) != worker.pid  # Airflow's own group for the task

    os.killpg(worker.pid, signal.SIGKILL)
    killed_at = time.monotonic()
    # the crawl dies with its worker: the task runner at once, the crawler after its checkpoint
    _, alive = psutil.wait_procs([crawler, task_runner], timeout=GRACE_S + 15)
    assert not alive, [p.cmdline() for p in alive]
    assert cluster.up.poll() is None, "".join(cluster.out.lines)[-3000:]
    cluster.out.wait_for(rf"worker {victim} exited with -9; restarting it", 30)
    cluster.out.wait_for(rf"worker {victim} restarted \(pid \d+\)", 60)

    # the retry resumes the job: a new crawler of the same job directory
    resumed = None
    while resumed is None and time.monotonic() - killed_at < 10 * TTL_S:
        resumed = _job_crawler(spec)
        time.sleep(0.5)
    recovery = time.monotonic() - killed_at
    print(f"worker loss: job resumed {recovery:.1f}s after the kill (job_lease_ttl_s={TTL_S})")
    assert resumed is not None and recovery <= 2 * TTL_S, recovery

    state = _wait_run(cluster.client, "oneoff_harvest", run_id, 600)
    crawl = cluster.crawl_ti(run_id)
    assert (state, crawl["state"]) == ("success", "success"), crawl
    assert crawl["try_number"] >= 2
    assert cluster.up.poll() is None
    # the operator sees the cluster: Airflow's components and both workers answering
    status = subprocess.run(
        [HARVESTFLOW, "services", "status"], env=cluster.env, capture_output=True, text=True
    ).stdout
    for component in ("api-server", "scheduler", "dag-processor"):
        assert re.search(rf"^{component} +embedded +running ", status, re.M), status
    assert re.search(r"^triggerer +embedded +off ", status, re.M), status  # nothing defers
    for name in ("worker1", "worker2"):
        assert re.search(rf"^worker +embedded +running +{name}@", status, re.M), status
    # `up` had the Execution API built (its health asked) before any task called it: the
    # first task's first call once waited for that build, and timed out on a loaded machine
    api_log = cluster.data_dir / "airflow" / "logs" / "components" / "api-server.log"
    calls = re.findall(r"method=\w+ path=(/execution/\S*)", api_log.read_text())
    assert calls and calls[0] == "/execution/health", calls[:3]
    _captured_once(cluster, logs, seeds, "kill")


def test_the_broker_stopped_15s_mid_crawl_fails_no_task_and_the_run_finishes_once(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 20 pages of 0.7 s on 2 connections: ~7 s of crawl, well inside the 15 s outage
    seeds, run_id, logs, crawler = _crawl_midway(cluster, "broker", 20)
    spec = crawler.cmdline()[crawler.cmdline().index("--job") + 1]
    monkeypatch.setenv("HARVESTFLOW_DATA_DIR", str(cluster.data_dir))  # read by data_dir
    redis = svc.redis_for(load(environ=cluster.env))
    assert redis.running()
    assert redis.stop()
    stopped_at = time.monotonic()
    try:
        # the crawl goes on without the broker (nothing of it passes through Celery) and ends
        # while the broker is away: the chain's next tasks are due then
        psutil.wait_procs([crawler], timeout=OUTAGE_S)
        assert not crawler.is_running(), "the crawl outlasted the outage: no task was due"
        time.sleep(max(OUTAGE_S - (time.monotonic() - stopped_at), 0))
    finally:
        redis.start()
    back_at = time.monotonic()
    state = _wait_run(cluster.client, "oneoff_harvest", run_id, 600)
    recovery = time.monotonic() - back_at
    tis = task_instances(cluster.client, "oneoff_harvest", run_id)
    print(
        f"broker outage of {back_at - stopped_at:.0f} s: the run {state} {recovery:.1f} s after"
        " the broker returned"
    )
    assert state == "success", [(t["task_id"], t["state"], t["try_number"]) for t in tis]
    crawl = cluster.crawl_ti(run_id)
    assert crawl["try_number"] == 1, crawl  # the crawl was not failed nor rerun
    assert not [t for t in tis if t["try_number"] > 1], tis  # no task was failed for it
    assert _job_crawler(spec) is None
    assert cluster.up.poll() is None
    _captured_once(cluster, logs, seeds, "broker")


def test_up_stopped_mid_crawl_stops_within_the_grace_and_the_next_up_finishes_the_job(
    cluster: Cluster,
) -> None:
    seeds, run_id, logs, _ = _crawl_midway(cluster, "stop")
    job_dir = logs[0].parents[1]
    tree = psutil.Process(cluster.up.pid).children(recursive=True)
    ports = [
        int(cluster.env[k]) for k in ("HARVESTFLOW_AIRFLOW__PORT", "HARVESTFLOW_POSTGRES__PORT")
    ]

    # every process, SeaweedFS's too (whose own shutdown idled 28 s), and `up` itself
    cluster.up.send_signal(signal.SIGTERM)
    stopped_at = time.monotonic()
    bound = GRACE_S + 15
    _, alive = psutil.wait_procs(tree, timeout=bound)
    with contextlib.suppress(subprocess.TimeoutExpired):
        cluster.up.wait(max(bound - (time.monotonic() - stopped_at), 0.1))
    took = time.monotonic() - stopped_at
    said = cluster.out.wait_for(r"stopped in ([\d.]+) s", 60)
    print(
        f"stop: {len(tree)} processes and up gone {took:.1f}s after SIGTERM"
        f" (up says {said.group(1)} s; stop_grace_s={GRACE_S}, bound {bound} s)"
    )
    assert not alive, [(p.pid, p.cmdline()) for p in alive if p.is_running()]
    assert cluster.up.returncode == 0, "".join(cluster.out.lines)[-3000:]
    assert took <= bound, took
    assert not any(port_open("127.0.0.1", p) for p in ports)
    # the crawler checkpointed: resumable, nothing left half-written
    summary = json.loads((job_dir / "summary.json").read_text())
    assert summary["status"] == "unfinished", summary
    assert not list(job_dir.rglob("*.open")), list(job_dir.rglob("*.open"))
    done_before = len([u for u in _fetched(logs) if "t=stop" in u])
    assert 0 < done_before < len(seeds)

    cluster.client.close()
    # a new `up` on the same data directory; one worker is enough to finish the one job (each
    # local worker is a Celery main process and its pool, ~6 CPU-s to start)
    cluster.start(workers=1)
    state = _wait_run(cluster.client, "oneoff_harvest", run_id, 600)
    assert state == "success", task_instances(cluster.client, "oneoff_harvest", run_id)
    _captured_once(cluster, logs, seeds, "stop")
