"""A broad crawl with 100 workers, in simulation: do the database and the broker keep up?

What is real: the embedded PostgreSQL with our migrations; N domain configurations loaded as in
bench/jobgen (default seeds, three earlier snapshots of history); the **real job generator**
(``harvest.planning.generate_jobs``: jobs, job_configs and frozen seed lists written); the
**real channel routing** (``harvest.channels.split_by_channel`` → the pool/queue of the channel,
as ``dags/hf_harvest_tasks.crawl_on_channels`` does); the embedded redis-server broker and Celery
workers taking tasks from those queues; and, inside each task, every database step a crawl task
does: ``prepare_job`` (job directory, job.json), the job lease with heartbeats
(``harvest.joblease``), ``mark_started``, a **host lease taken and given back for every
simulated fetch** (``crawler.lease_tables.HostLeases``, the cluster-wide politeness), and
``record_job_results`` (one history row per domain).

What stands in: the fetch itself (a sleep of ``--fetch-s``), and Airflow's scheduler between the
broker and the jobs (measured on its own by bench/scale/scheduling.py: a per-task overhead to add
to the figures here). ``--workers`` crawl slots are ``--processes`` Celery worker processes with
a thread pool each (the tasks' bookkeeping: 100 Celery processes do not fit on 2 cores); each
slot's fetch loop runs, as on the platform, in a crawler process of its own (bench/scale/
sim_crawler.py, one thread and the lease calls' pool thread: the crawler's shape), kept from one
job of the slot to the next. ``--crawler thread`` runs the fetch loops in the task threads
instead, as the runs before the lease-tail analysis did: there a lease reply waited for the
interpreter lock held by 24 other slots' prepare/record steps, a wait no crawler has.
``--results`` holds bench/scale/sim_probe's breakdown of a lease call's time (``tail_ms``).

``--leases broker`` keeps the host leases in the broker's Redis (``crawler.broker_leases``, as
crawlers do with the celery executor) instead of PostgreSQL; ``--results FILE`` writes the
figures as JSON (bench/results/scale/simulate-<store>.json feeds the tables of bench/README.md
and docs/scaling.md), with the lease store's own CPU (redis-server, or every PostgreSQL backend).

Printed: jobs generated and the generation time; the makespan against the ideal one (every slot
busy all the time: total stand-in time / workers), i.e. how much the platform's own steps and
waits cost; host-lease round trips per second and their p50/p95 latency; the broker's
enqueue → start latency for tasks that found a free slot; prepare/record times. The run fails
(exit 1) when a task fails or not every job ends DONE.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))

import redis  # noqa: E402
import sqlalchemy as sa  # noqa: E402
from celery import Celery  # noqa: E402

sys.path.insert(0, str(REPO / "bench" / "jobgen"))
import bench_jobgen  # noqa: E402  (its loader: the jobgen benchmark's synthetic history)
import sim_crawler  # noqa: E402
import sim_figures  # noqa: E402
import sim_probe  # noqa: E402

# imported here, not in the task: the first task of each thread must not time the imports
from crawler.broker_leases import BrokerHostLeases  # noqa: E402
from crawler.lease_tables import (  # noqa: E402
    POLL_S,
    WAITER_GRACE_S,
    HostLeases,
    JobLeases,
    job_lease_engine,
)
from harvest.joblease import job_lease  # noqa: E402
from harvest.jobs import mark_started, prepare_job  # noqa: E402
from harvest.results import record_job_results  # noqa: E402
from harvestflow.db import get_engine  # noqa: E402
from harvestflow.settings import get_settings  # noqa: E402
from tests.support.environment import free_port  # noqa: E402

app = Celery("hf-scale-sim")
app.conf.update(
    broker_url=os.environ.get("HF_SIM_BROKER", "redis://127.0.0.1:6379/0"),
    task_acks_late=True,
    worker_prefetch_multiplier=1,
    task_ignore_result=True,
    broker_connection_retry_on_startup=True,
)

_local = threading.local()
_lock = threading.Lock()


def _lease_engine() -> Any:
    """The host leases' pool (``--leases postgres``): one per worker process, one connection per
    thread (as one per crawler process)."""
    if not hasattr(app, "_hf_engine"):
        size = int(os.environ.get("HF_SIM_THREADS", "25"))
        app._hf_engine = sa.create_engine(  # type: ignore[attr-defined]
            get_settings().harvest_db_url, pool_size=size, max_overflow=0, pool_pre_ping=True
        )
    return app._hf_engine  # type: ignore[attr-defined]


def _host_leases(holder: str) -> HostLeases | BrokerHostLeases:
    """The host leases of one crawl slot, in the store ``--leases`` chose; in the broker, its own
    client as a crawler process has (``BrokerHostLeases.from_url``: one connection)."""
    if os.environ.get("HF_SIM_LEASES") == "broker":
        return BrokerHostLeases.from_url(
            os.environ["HF_SIM_BROKER"], holder, 30.0, poll_s=POLL_S, grace_s=WAITER_GRACE_S
        )
    return HostLeases(_lease_engine(), holder, 30.0)


def _crawl_in_process(req: dict[str, Any], beat: Callable[[], None]) -> dict[str, Any]:
    """The job's fetch loop in this slot's crawler process (sim_crawler, started at the slot's
    first job and kept), the job lease's heartbeats sent from here while it runs."""
    proc = getattr(_local, "crawler", None)
    if proc is None or proc.poll() is not None:
        proc = _local.crawler = subprocess.Popen(
            [sys.executable, str(HERE / "sim_crawler.py")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
        )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(req) + "\n")
    proc.stdin.flush()
    while not select.select([proc.stdout], [], [], 2.0)[0]:
        if proc.poll() is not None:
            raise RuntimeError(f"the slot's crawler process exited ({proc.returncode})")
        beat()
    answer: dict[str, Any] = json.loads(proc.stdout.readline() or '{"error": "no answer"}')
    if "error" in answer:
        raise RuntimeError(f"crawler: {answer['error']}")
    return answer


def _write_row(row: dict[str, Any]) -> None:
    out = Path(os.environ["HF_SIM_OUT"]) / f"metrics-{os.getpid()}.jsonl"
    with _lock, out.open("a") as fh:
        fh.write(json.dumps(row) + "\n")


@app.task(name="hf_sim.crawl_standin")
def crawl_standin(
    job_id: int, enqueued: float, fetches: int, fetch_s: float, delay_s: float
) -> None:
    """A crawl task with the crawl replaced by ``fetches`` sleeps; a failure is recorded."""
    started = time.time()
    try:
        _standin(job_id, enqueued, fetches, fetch_s, delay_s)
    except Exception as exc:  # the run counts it: a task that fails is the finding
        _write_row(
            {
                "job": job_id,
                "enqueued": enqueued,
                "started": started,
                "ended": time.time(),
                "status": f"ERROR {type(exc).__name__}: {str(exc).splitlines()[0][:120]}",
            }
        )
        raise


def _standin(job_id: int, enqueued: float, fetches: int, fetch_s: float, delay_s: float) -> None:
    started = time.time()
    t0 = time.monotonic()
    spec = Path(prepare_job(job_id, get_settings().data_dir))
    prepare_s = time.monotonic() - t0
    with get_engine().connect() as conn:
        domains = [
            r.name
            for r in conn.execute(
                sa.text(
                    "SELECT d.name FROM job_configs jc JOIN configurations c USING (config_id)"
                    " JOIN domains d USING (domain_id) WHERE jc.job_id = :j ORDER BY d.name"
                ),
                {"j": job_id},
            )
        ]
    hosts = ["www." + domains[i % len(domains)] for i in range(fetches)]
    with job_lease(job_id, ttl_s=30) as holder:
        mark_started(job_id)
        beats = JobLeases(job_lease_engine(), ttl_s=30)  # as the crawler's heartbeats
        slot = f"{holder}-{threading.get_ident()}"
        last_beat = [time.monotonic()]

        def beat() -> None:
            if time.monotonic() - last_beat[0] > 2.0:
                beats.heartbeat(job_id, holder)
                last_beat[0] = time.monotonic()

        if os.environ.get("HF_SIM_CRAWLER") == "thread":  # the slots share a process
            sim_probe.start_sleep_probe(Path(os.environ["HF_SIM_OUT"]))
            leases = _host_leases(slot)
            try:
                crawled = sim_crawler.crawl(leases, hosts, fetch_s, delay_s, beat=beat)
            finally:
                if isinstance(leases, BrokerHostLeases):
                    leases.close()  # the slot's connection (the PostgreSQL pool is the process's)
        else:
            store = os.environ["HF_SIM_LEASES"]
            req = {
                "store": store,
                "url": os.environ["HF_SIM_BROKER"]
                if store == "broker"
                else get_settings().harvest_db_url,
                "holder": slot,
                "hosts": hosts,
                "fetch_s": fetch_s,
                "delay_s": delay_s,
                "poll_s": POLL_S,
                "grace_s": WAITER_GRACE_S,
            }
            crawled = _crawl_in_process(req, beat)
    summary = {
        "status": "complete",
        "ended": datetime.now(UTC).isoformat(),
        "urls": fetches,
        "bytes": 0,
        "domains": {
            d: {"objects": 1 if i < fetches else 0, "bytes": 0, "stop_reason": 0}
            for i, d in enumerate(domains)
        },
    }
    (spec.parent / "summary.json").write_text(json.dumps(summary))
    t0 = time.monotonic()
    result = record_job_results(job_id)
    record_s = time.monotonic() - t0
    row = {
        "job": job_id,
        "enqueued": enqueued,
        "started": started,
        "ended": time.time(),
        "prepare_s": prepare_s,
        "record_s": record_s,
        "lease_ops": len(crawled["takes"]),
        "lease_p50_ms": sim_figures.pct(crawled["takes"], 0.5),
        "lease_p95_ms": sim_figures.pct(crawled["takes"], 0.95),
        "lease_ms": crawled["takes"],
        "lease_cpu_ms": crawled["cpu"],
        "lease_waits": crawled["waits"],
        "lease_start": crawled["lease_start"],
        "lease_end": crawled["lease_end"],
        "status": result["status"],
        "worker": os.getpid(),
    }
    _write_row(row)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--configs", type=int, default=100_000, help="domain configurations")
    ap.add_argument("--per-job", type=int, default=100, help="configurations per job")
    ap.add_argument("--workers", type=int, default=100, help="crawl slots in all")
    ap.add_argument("--processes", type=int, default=4, help="Celery worker processes")
    ap.add_argument("--fetches", type=int, default=10, help="simulated fetches per job")
    ap.add_argument("--fetch-s", type=float, default=0.2, help="one simulated fetch")
    ap.add_argument("--delay-s", type=float, default=3.0, help="politeness delay per host")
    ap.add_argument("--keep", type=Path, help="data dir to keep/reuse (the load is slow)")
    ap.add_argument(
        "--leases",
        choices=("postgres", "broker"),
        default="postgres",
        help="where the host leases live: the harvest DB, or the broker's Redis (celery)",
    )
    ap.add_argument(
        "--crawler",
        choices=("process", "thread"),
        default="process",
        help="each slot's fetch loop in a crawler process of its own (as on the platform), or"
        " in the Celery task's thread (25 slots sharing a process: the earlier runs)",
    )
    ap.add_argument("--results", type=Path, help="write the figures to this JSON file")
    args = ap.parse_args()
    threads = max(1, args.workers // args.processes)
    data_dir = args.keep or Path(tempfile.mkdtemp(prefix="hf-bench-sim-", dir="/tmp"))
    data_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(data_dir, 0o755)
    ports_file = data_dir / "bench-ports.json"
    ports = (
        json.loads(ports_file.read_text())
        if ports_file.exists()
        else {"pg": free_port(), "broker": free_port()}
    )
    ports_file.write_text(json.dumps(ports))
    out = data_dir / "metrics"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    env = dict(
        os.environ,
        HARVESTFLOW_DATA_DIR=str(data_dir),
        HARVESTFLOW_POSTGRES__PORT=str(ports["pg"]),
        HARVESTFLOW_POSTGRES__URL="",
        HARVESTFLOW_BROKER__PORT=str(ports["broker"]),
        HARVESTFLOW_JOBGEN__FIXED_DOMAIN_COUNT_SNAPSHOT=str(args.per_job),
        HF_SIM_BROKER=f"redis://127.0.0.1:{ports['broker']}/0",
        HF_SIM_OUT=str(out),
        HF_SIM_THREADS=str(threads),
        HF_SIM_LEASES=args.leases,
        HF_SIM_CRAWLER=args.crawler,
        PYTHONPATH=os.pathsep.join([str(HERE), str(REPO), os.environ.get("PYTHONPATH", "")]),
    )
    os.environ.update(env)
    app.conf.broker_url = env["HF_SIM_BROKER"]

    from harvest.channels import queue_names, split_by_channel
    from harvest.planning import generate_jobs
    from harvestflow import db, services
    from harvestflow.settings import get_settings, reset

    reset()
    settings = get_settings()
    pg = services.postgres_for(settings)
    broker = services.redis_for(settings)
    pg.start()
    broker.start()
    workers: list[subprocess.Popen[bytes]] = []
    probe: subprocess.Popen[bytes] | None = None  # sim_probe's one-thread lease caller
    failed = False
    try:
        db.ensure_database(settings.harvest_db_url)
        db.migrate(db.get_engine(settings.harvest_db_url))
        bench_jobgen.load(args.configs)
        hid, _, _ = bench_jobgen._definition()
        t0 = time.monotonic()
        job_ids = generate_jobs(hid, datetime.now(UTC))
        gen_s = time.monotonic() - t0
        routes = split_by_channel(job_ids)
        pools = queue_names()
        print(
            f"job generator: {args.configs:,} configurations -> {len(job_ids):,} jobs in"
            f" {gen_s:.1f} s; channels: "
            + ", ".join(f"{pools[p]} {len(j)}" for p, j in routes.items()),
            flush=True,
        )
        queues = ",".join(sorted(pools[p] for p, j in routes.items() if j))
        # the broker is the simulation's own (kept with --keep): a run killed earlier left its
        # queued tasks and leases there, which the new workers would take first
        redis.Redis.from_url(env["HF_SIM_BROKER"]).flushdb()
        for n in range(args.processes):
            log = open(out / f"worker-{n}.log", "wb")  # noqa: SIM115
            workers.append(
                subprocess.Popen(
                    [
                        sys.executable, "-m", "celery", "-A", "simulate", "worker",
                        "--pool", "threads", "--concurrency", str(threads),
                        "--queues", queues, "--hostname", f"sim{n}@%h",
                        "--without-gossip", "--without-mingle", "--loglevel", "WARNING",
                    ],
                    cwd=HERE, env=env, stdout=log, stderr=subprocess.STDOUT,
                )
            )  # fmt: skip
        insp = app.control.inspect(timeout=2.0)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if len(insp.ping() or {}) == args.processes:
                break
            time.sleep(1)
        else:
            raise SystemExit("benchmark FAILED: the Celery workers did not answer")
        peak = [0]
        sampling = threading.Event()

        def sample_connections() -> None:
            engine = sa.create_engine(settings.harvest_db_url, poolclass=sa.pool.NullPool)
            while not sampling.is_set():
                try:
                    with engine.connect() as conn:
                        n = conn.execute(sa.text("SELECT count(*) FROM pg_stat_activity")).scalar()
                    peak[0] = max(peak[0], int(n or 0))
                except sa.exc.OperationalError:
                    pass  # the server is full: the tasks' errors say so
                time.sleep(0.5)

        threading.Thread(target=sample_connections, daemon=True).start()
        # the lease store's own CPU: redis-server's, or PostgreSQL's (every backend: all of the
        # tasks' statements, not only the leases')
        cpu_before = {
            "redis": sim_figures.tree_cpu(broker.pid()),
            "postgres": sim_figures.tree_cpu(pg.pid()),
        }
        # where a round trip's time goes (sim_probe): redis-server's own counters, a peer's
        # PING latency, and a one-thread process making the same lease calls
        server = redis.Redis.from_url(env["HF_SIM_BROKER"], socket_timeout=10)
        sim_probe.server_reset(server)
        cli = sim_probe.RedisCliLatency("127.0.0.1", ports["broker"])
        probe = sim_probe.spawn_probe(env["HF_SIM_BROKER"], out, env)
        begin = time.time()
        for priority, ids in routes.items():
            for job_id in ids:
                crawl_standin.apply_async(
                    (job_id, time.time(), args.fetches, args.fetch_s, args.delay_s),
                    queue=pools[priority],
                )
        rows: list[dict[str, Any]] = []
        deadline = time.monotonic() + 3600
        last = 0.0
        while time.monotonic() < deadline:
            rows = [
                json.loads(line)
                for f in out.glob("metrics-*.jsonl")
                for line in f.read_text().splitlines()
            ]
            if len(rows) >= len(job_ids):
                break
            if any(w.poll() is not None for w in workers):
                raise SystemExit("benchmark FAILED: a Celery worker exited (see its log)")
            if time.monotonic() - last > 10:
                print(f"{len(rows)}/{len(job_ids)} jobs done", flush=True)
                last = time.monotonic()
            time.sleep(0.5)
        sampling.set()
        probe.terminate()
        probe.wait(30)
        tail = sim_probe.tail_figures(out, rows, sim_probe.server_figures(server), cli.stop())
        cpu = {
            k: sim_figures.tree_cpu(p.pid()) - cpu_before[k]
            for k, p in (("redis", broker), ("postgres", pg))
        }
        failed = sim_figures.report(
            args, rows, len(job_ids), begin, peak[0], cpu, settings["postgres"], tail
        )
    finally:
        if probe is not None and probe.poll() is None:
            probe.kill()
        for w in workers:
            w.terminate()
        for w in workers:
            try:
                w.wait(30)
            except subprocess.TimeoutExpired:
                w.kill()
        db.dispose_engines()
        broker.stop()
        pg.stop()
        if args.keep is None:
            shutil.rmtree(data_dir, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    random.seed(1)
    sys.exit(main())
