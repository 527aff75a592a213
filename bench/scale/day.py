"""A national archive's day through the real platform: ``python bench/scale/day.py --urls N``.

What runs: the synthetic national web (bench/scale/webserve.py: its server and DNS on loopback);
``harvestflow up --workers 2 --no-sample-site`` with the celery executor on a fresh data
directory; the ``broad_crawl_preload`` DAG on the web's domain list (DNS-checked against the
web's own DNS); the ``broad_crawl`` DAG (both steps, politeness on with a small delay, the
crawler resolving through the same DNS: ``[crawler] nameservers``); then what the scheduler
wakes by itself (Asset ``jobs-done`` → ``indexing_chain``, which extracts the full text;
``files-indexed`` → ``preservation_ingest``). ``indexing_merge`` and ``daily_qa_stats`` run on
``@daily``: the day triggers them for today, both at once, as the scheduler does at midnight (a
day of wall time is not waited for). Only these six DAGs run: the platform starts with its DAGs
paused and the day unpauses its own, so the other schedules' first runs (the selective
harvests, the continuous crawl, maintenance) neither take the workers' slots nor count in the
day's figures. Every run is waited for, then bench/scale/reconcile.py checks that what went in
came out, naming the stage that lost something; the figures go to
``bench/results/scale-<N>.json``.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

import httpx  # noqa: E402

from bench.runner.core import loadavg, machine  # noqa: E402
from bench.scale import daymeter, reconcile  # noqa: E402
from bench.scale.nationalweb import NationalWeb  # noqa: E402
from bench.scale.webserve import WebProcess  # noqa: E402
from harvestflow.services.process import die_with_parent  # noqa: E402

HARVESTFLOW = str(Path(sys.executable).parent / "harvestflow")
DAY_TEMPLATE = "scale_day"
AFTER_CRAWL = ("indexing_chain", "preservation_ingest")
DAILY = ("indexing_merge", "daily_qa_stats")
CHAIN_ASSETS = ("/jobs-done", "/files-indexed")  # what wakes the AFTER_CRAWL DAGs
DAY_DAGS = ("broad_crawl_preload", "broad_crawl", *AFTER_CRAWL, *DAILY)
POLL_S = 1.0  # a run's end seen within a second: the next stage waits no longer
ENDED = ("success", "failed")


class DayFailed(RuntimeError):
    """A stage of the day failed or lost something: the message names it."""


def _free_port(with_grpc: bool = False) -> int:
    """A free loopback port below Linux's ephemeral range (32768+: an outgoing connection could
    take it before the service binds it), outside the tests' 10,000–29,999
    (tests/support/environment.py): 30,000–31,999, or with a SeaweedFS gRPC twin (port + 10,000)
    22,000–22,767 (twins 32,000–32,767)."""
    from harvestflow.services.postgres import port_open

    def free(port: int) -> bool:
        return not port_open("127.0.0.1", port, timeout=0.2)

    for _ in range(1000):
        port = random.randrange(22_000, 22_768) if with_grpc else random.randrange(30_000, 32_000)
        if port not in _TAKEN and free(port) and (not with_grpc or free(port + 10_000)):
            _TAKEN.add(port)
            return port
    raise DayFailed("platform: no free loopback port for the platform's services")


_TAKEN: set[int] = set()


def platform_env(data_dir: Path, dns: str) -> dict[str, str]:
    """A harvestflow environment of its own: data dir, free ports, celery, the web's DNS."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HARVESTFLOW_", "AIRFLOW"))}
    ports = {
        "POSTGRES__PORT": 0, "S3__S3_PORT": 0, "S3__MASTER_PORT": 0, "S3__VOLUME_PORT": 0,
        "S3__FILER_PORT": 0, "S3_REPLICA__S3_PORT": 0, "S3_REPLICA__MASTER_PORT": 0,
        "S3_REPLICA__VOLUME_PORT": 0, "S3_REPLICA__FILER_PORT": 0, "AIRFLOW__PORT": 0,
        "SAMPLESITE__PORT": 0, "ACCESS__RESOLVER_PORT": 0, "ACCESS__PYWB_PORT": 0,
        "BROKER__PORT": 0, "MONITORING__PORT": 0, "MONITORING__STATSD_PORT": 0,
    }  # fmt: skip
    for key in ports:
        env[f"HARVESTFLOW_{key}"] = str(_free_port(with_grpc=key.startswith("S3")))
    env.update(
        HARVESTFLOW_DATA_DIR=str(data_dir),
        HARVESTFLOW_ACCESS__URL=f"http://127.0.0.1:{_free_port()}/",
        HARVESTFLOW_AIRFLOW__EXECUTOR="celery",
        HARVESTFLOW_POSTGRES__MAX_CONNECTIONS="300",
        HARVESTFLOW_CRAWLER__NAMESERVERS=f'["{dns}"]',
        HARVESTFLOW_PRELOAD__NAMESERVERS=f'["{dns}"]',
        HARVESTFLOW_PRELOAD__TEMPLATE=DAY_TEMPLATE,
        # the day's own DAGs only (unpaused by Platform.unpause): no other schedule's first run
        AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION="True",
        PYTHONPATH=str(REPO),
        PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
    )
    return env


class Platform:
    """``harvestflow up --workers 2`` and a signed-in client of its api-server; without the
    demo's sample site and definition (the national web is what the day crawls: the demo's
    domains would be one more crawl job of their own in each step)."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.env = env
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None
        self.client: httpx.Client | None = None
        self.states: RunStates | None = None

    def start(self, timeout: float = 900) -> None:
        with self.log.open("ab") as out:
            # SIGTERM (up's own clean stop) when this driver dies, even killed by a timeout
            self.proc = subprocess.Popen(
                [HARVESTFLOW, "up", "--workers", "2", "--no-sample-site"], env=self.env, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True,
                preexec_fn=functools.partial(die_with_parent, signal.SIGTERM),
            )  # fmt: skip
        deadline = time.monotonic() + timeout
        import re

        while time.monotonic() < deadline:
            m = re.search(r"Airflow UI: (http://\S+)\s+login: (\S+) / (\S+)", self.log.read_text())
            if m:
                break
            if self.proc.poll() is not None:
                raise DayFailed(f"platform: `harvestflow up` exited {self.proc.returncode}")
            time.sleep(POLL_S)
        else:
            raise DayFailed(f"platform: `harvestflow up` not ready in {timeout:.0f} s")
        base = m.group(1).rstrip("/")
        token = httpx.post(
            f"{base}/auth/token", json={"username": m.group(2), "password": m.group(3)}, timeout=60
        ).json()["access_token"]
        self.client = httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=60
        )
        self.states = RunStates(self.env)

    def api(self, method: str, path: str, **kw: Any) -> Any:
        assert self.client is not None
        resp = self.client.request(method, path, **kw)
        if resp.status_code >= 300:
            raise DayFailed(f"platform: {method} {path}: {resp.status_code} {resp.text[:300]}")
        return resp.json()

    def wait_dags(self, dag_ids: set[str], timeout: float = 600) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            seen = {
                d["dag_id"] for d in self.api("GET", "/api/v2/dags", params={"limit": 100})["dags"]
            }
            if dag_ids <= seen:
                return
            time.sleep(POLL_S)
        raise DayFailed(f"platform: DAGs {sorted(dag_ids)} not parsed in {timeout:.0f} s")

    def unpause(self, dag_ids: tuple[str, ...]) -> None:
        """Start the DAGs ``dag_ids`` (the platform's DAGs are paused at creation)."""
        for dag_id in dag_ids:
            self.api("PATCH", f"/api/v2/dags/{dag_id}", json={"is_paused": False})

    def trigger(self, dag_id: str, conf: dict[str, Any]) -> str:
        body = {"logical_date": None, "conf": conf}
        return str(self.api("POST", f"/api/v2/dags/{dag_id}/dagRuns", json=body)["dag_run_id"])

    def runs(self, dag_id: str) -> list[dict[str, Any]]:
        return list(
            self.api("GET", f"/api/v2/dags/{dag_id}/dagRuns", params={"limit": 100})["dag_runs"]
        )

    def wait_run(self, dag_id: str, run_id: str, timeout: float) -> dict[str, Any]:
        """The run once it succeeded, as the API gives it; its state is watched in Airflow's
        database (:class:`RunStates`) and asked of the API once it has ended."""
        assert self.states is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.states.state(dag_id, run_id) in ENDED:
                run = self.api("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}")
                if run["state"] == "success":
                    return dict(run)
                if run["state"] == "failed":
                    raise DayFailed(
                        f"{dag_id}: run {run_id} failed: {self.failed_tasks(dag_id, run_id)}"
                    )
            time.sleep(POLL_S)
        raise DayFailed(f"{dag_id}: run {run_id} not finished in {timeout:.0f} s")

    def task_instances(self, dag_id: str, run_id: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        while True:
            page = self.api(
                "GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances",
                params={"limit": 100, "offset": len(out)},
            )["task_instances"]  # fmt: skip
            out += page
            if len(page) < 100:
                return out

    def failed_tasks(self, dag_id: str, run_id: str) -> list[str]:
        return [
            f"{t['task_id']}[{t['map_index']}]"
            for t in self.task_instances(dag_id, run_id)
            if t["state"] not in ("success", "skipped")
        ]

    def wait_woken(
        self, dag_ids: tuple[str, ...], since: str, timeout: float, settle_s: float = 45
    ) -> list[tuple[str, dict[str, Any]]]:
        """The runs the scheduler started after ``since``, once none is left running and the
        chain has been still for ``settle_s`` (an indexing run wakes preservation: a run may
        come a little after the last ended), or for a few seconds once the harvest DB says
        every data WARC is through (:func:`chain_through`; a day that lost one waits the
        whole ``settle_s`` and the reconciliation names the stage)."""
        assert self.states is not None
        deadline = time.monotonic() + timeout
        still_since = None
        while time.monotonic() < deadline:
            seen = self.states.queued_after(dag_ids, since)  # (dag_id, run_id, state)
            for d, run_id, state in seen:
                if state == "failed":
                    raise DayFailed(f"{d}: run {run_id} failed: {self.failed_tasks(d, run_id)}")
            active = [run_id for _, run_id, state in seen if state not in ENDED]
            woke = {d for d, _, _ in seen}
            if not active and woke == set(dag_ids):
                still_since = still_since or time.monotonic()
                still = time.monotonic() - still_since
                through = still > 2 and self.events_consumed(since) and chain_through(self.env)
                if still > settle_s or through:
                    # the runs as the API gives them (the stage figures read their times)
                    runs = [
                        (d, r)
                        for d in dag_ids
                        for r in self.runs(d)
                        if (r.get("queued_at") or "") > since
                    ]
                    if sorted((d, r["dag_run_id"], r["state"]) for d, r in runs) == sorted(seen):
                        return runs
            else:
                still_since = None
            time.sleep(POLL_S)
        raise DayFailed(f"{', '.join(dag_ids)}: not woken and finished in {timeout:.0f} s")

    def events_consumed(self, since: str) -> bool:
        """Whether every chain Asset event after ``since`` (the latest 100) has its run."""
        events = self.api(
            "GET", "/api/v2/assets/events", params={"limit": 100, "order_by": "-timestamp"}
        )["asset_events"]
        return all(
            e["created_dagruns"]
            for e in events
            if e["timestamp"] > since and (e.get("uri") or "").endswith(CHAIN_ASSETS)
        )

    def stop(self) -> None:
        if self.client is not None:
            self.client.close()
        if self.states is not None:
            self.states.close()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(240)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


class RunStates:
    """DAG runs' states read from Airflow's metadata database (``dag_run``, as
    app/curator/dagruns.py reads it), one connection for the day. Why: the driver looks every
    second, and a look through the API cost the api-server 30–65 ms of CPU (one run, the runs
    of a DAG; load 15): the driver's polls were about half of the api-server's CPU in every
    stage, counted in the platform's figures. A run that has ended is read through the API,
    as before (its times, its failed tasks)."""

    def __init__(self, env: dict[str, str]) -> None:
        import sqlalchemy as sa

        from harvestflow.settings import load

        self._sa = sa
        self.engine = sa.create_engine(
            load(environ=env).airflow_db_url, poolclass=sa.pool.StaticPool,
            isolation_level="AUTOCOMMIT",
        )  # fmt: skip

    def state(self, dag_id: str, run_id: str) -> str | None:
        with self.engine.connect() as conn:
            return conn.execute(
                self._sa.text("SELECT state FROM dag_run WHERE dag_id = :d AND run_id = :r"),
                {"d": dag_id, "r": run_id},
            ).scalar_one_or_none()

    def queued_after(self, dag_ids: tuple[str, ...], since: str) -> list[tuple[str, str, str]]:
        """(dag_id, run_id, state) of the runs of ``dag_ids`` queued after ``since`` (ISO)."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                self._sa.text(
                    "SELECT dag_id, run_id, state FROM dag_run WHERE dag_id = ANY(:d)"
                    " AND queued_at > CAST(:since AS timestamptz)"
                ),
                {"d": list(dag_ids), "since": since},
            ).all()
        return sorted((str(d), str(r), str(s)) for d, r, s in rows)

    def close(self) -> None:
        self.engine.dispose()


def chain_through(env: dict[str, str]) -> bool:
    """Whether every data WARC of the index manifest is indexed, preserved (verified) and its
    text extracted, by the harvest DB's word (the reconciliation checks the files after)."""
    import sqlalchemy as sa

    from harvestflow.settings import load

    engine = sa.create_engine(load(environ=env).harvest_db_url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            left = conn.execute(
                sa.text(
                    "SELECT count(*) FROM index_manifest m WHERE m.file_name NOT LIKE '%metadata%'"
                    " AND (m.cdx_path IS NULL OR NOT EXISTS (SELECT 1 FROM preservation_files p"
                    "  WHERE p.file_name = m.file_name AND p.role = 'data'"
                    "  AND p.status = 'verified')"
                    " OR NOT EXISTS (SELECT 1 FROM fulltext_files t"
                    "  WHERE t.file_name = m.file_name AND t.status = 'done'))"
                )
            ).scalar_one()
            files = conn.execute(sa.text("SELECT count(*) FROM index_manifest")).scalar_one()
    finally:
        engine.dispose()
    return bool(files) and left == 0


def add_template(env: dict[str, str], delay_ms: int) -> None:
    """The day's crawl profile: the snapshot's, with loopback allowed and a small delay."""
    code = (
        "import json, sqlalchemy as sa\n"
        "from harvestflow.db import get_engine\n"
        "from harvest.templates import default_spec\n"
        "spec = {**default_spec(), 'allow_private_addresses': True, 'delay_factor': 0.0,"
        f" 'min_delay_ms': {delay_ms}, 'max_delay_ms': {delay_ms * 4}, 'max_crawl_delay_s': 1,"
        " 'render': 'none', 'extract_sitemaps': False, 'retries': 0, 'download_timeout_s': 10}\n"
        "with get_engine().begin() as conn:\n"
        "    conn.execute(sa.text('INSERT INTO templates (name, spec) VALUES (:n, CAST(:s AS jsonb))"
        " ON CONFLICT (name) DO UPDATE SET spec = EXCLUDED.spec'),"
        f" {{'n': {DAY_TEMPLATE!r}, 's': json.dumps(spec)}})\n"
    )
    subprocess.run([sys.executable, "-c", code], env=env, check=True, cwd=REPO)


def run_day(args: argparse.Namespace, figures: dict[str, Any]) -> None:
    """The day; its figures into ``figures`` as they come (a failed day keeps those it got)."""
    domains = args.domains or max(50, args.urls // 20)
    model = NationalWeb(args.seed, domains, args.urls)
    data_dir = Path(tempfile.mkdtemp(prefix="hf-day-", dir=args.tmp))
    os.chmod(data_dir, 0o755)
    address = f"127.88.{random.Random(os.getpid()).randrange(1, 250)}.1"
    figures.update(urls_asked=args.urls, domains=domains, seed=args.seed, data_dir=str(data_dir))
    stages: dict[str, dict[str, Any]] = figures.setdefault("stages", {})
    # where the driver's wall goes, waits and polls included (the stages' walls are Airflow's)
    walls: dict[str, float] = figures.setdefault("driver_walls_s", {})
    last = [time.monotonic()]

    def lap(name: str) -> None:
        now = time.monotonic()
        walls[name] = round(now - last[0], 1)
        last[0] = now
        print(f"{name}: {walls[name]:.0f} s", flush=True)

    with WebProcess(args.seed, domains, args.urls, address) as web:
        env = platform_env(data_dir, web.dns)
        (data_dir / "env.json").write_text(json.dumps(env))  # to look at a kept day again
        platform = Platform(env, data_dir / "up.log")
        meter = daymeter.Meter(env)
        try:
            t0 = time.monotonic()
            platform.start()
            meter.start()
            print(f"platform up in {time.monotonic() - t0:.0f} s ({data_dir})", flush=True)
            stages["start"] = {"wall_s": round(time.monotonic() - t0, 1)}
            lap("start (web and platform up)")
            platform.wait_dags(set(DAY_DAGS))
            platform.unpause(DAY_DAGS)
            lap("DAGs parsed and unpaused")
            add_template(env, args.delay_ms)
            domain_file = data_dir / "domains.txt"
            domain_file.write_text("".join(f"{d.name}\n" for d in model.domains))
            source = [{"name": "registry", "kind": "registry", "path": str(domain_file)}]
            for dag_id, conf, timeout in (
                ("broad_crawl_preload", {"run_id": "day", "sources": source,
                                         "nameservers": [web.dns]}, args.timeout),
                ("broad_crawl", {"name": "day", "step1_max_objects": args.step1,
                                 "step2_max_objects": args.step2}, args.timeout),
            ):  # fmt: skip
                run_id = platform.trigger(dag_id, conf)
                print(f"{dag_id}: run {run_id} triggered", flush=True)
                run = platform.wait_run(dag_id, run_id, timeout)
                stages[dag_id] = meter.stage(platform, dag_id, [run])
                lap(dag_id)
            # the chain is woken by the crawl's last task (Asset jobs-done), before its run ends
            since = run["start_date"]
            crawl_end = time.monotonic()
            print(f"waiting for {', '.join(AFTER_CRAWL)}, woken by the scheduler", flush=True)
            woken = platform.wait_woken(AFTER_CRAWL, since, args.timeout)
            for dag_id in AFTER_CRAWL:
                stages[dag_id] = meter.stage(platform, dag_id, [r for d, r in woken if d == dag_id])
            lap("chain after the crawl (woken, settled)")
            today = datetime.now(UTC).date().isoformat()
            daily = {dag_id: platform.trigger(dag_id, {"day": today}) for dag_id in DAILY}
            for dag_id, run_id in daily.items():
                stages[dag_id] = meter.stage(
                    platform, dag_id, [platform.wait_run(dag_id, run_id, args.timeout)]
                )
            figures["after_crawl_wall_s"] = round(time.monotonic() - crawl_end, 1)
            lap("daily DAGs")
            figures["platform"] = meter.finish()
            snapshot = reconcile.collect(env, data_dir, seed=args.seed)
            (data_dir / "reconcile-snapshot.json").write_text(json.dumps(snapshot, default=str))
            figures["reconciliation"] = reconcile.check(snapshot)
            figures["robots_violations"] = web.stats().get("robots_violations", 0)
            if figures["robots_violations"]:
                raise DayFailed(
                    f"crawl: {figures['robots_violations']} fetches disallowed by robots.txt"
                )
            lap("reconciliation")
        finally:
            meter.stop()
            last[0] = time.monotonic()
            platform.stop()
            lap("stop")
            if not args.keep:
                shutil.rmtree(data_dir, ignore_errors=True)


def booted_at() -> datetime:
    """When this machine booted (``btime`` of /proc/stat)."""
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("btime "):
            return datetime.fromtimestamp(int(line.split()[1]), UTC)
    raise RuntimeError("/proc/stat has no btime")


def recheck(data_dir: Path, out: Path) -> dict[str, Any]:
    """The reconciliation again on a kept day (``--keep``): its services and the access service
    started on its data directory (not Airflow: nothing runs), the snapshot collected anew
    (the replay sample included) and checked; the day's results file gets the new outcome."""
    env = json.loads((data_dir / "env.json").read_text())
    env.update(PYTHONPATH=str(REPO))
    result = json.loads(out.read_text())
    log = (data_dir / "recheck.log").open("ab")
    subprocess.run([HARVESTFLOW, "services", "start"], env=env, check=True, stdout=log,
                   stderr=subprocess.STDOUT, timeout=600)  # fmt: skip
    access = subprocess.Popen([HARVESTFLOW, "access", "serve"], env=env, stdout=log,
                              stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while True:
            try:  # the gateway answers 502 until pywb behind it is up
                if httpx.get(env["HARVESTFLOW_ACCESS__URL"] + "all/", timeout=5).status_code < 500:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or access.poll() is not None:
                raise DayFailed("access: the access service did not start")
            time.sleep(2)
        snapshot = reconcile.collect(env, data_dir, seed=int(result.get("seed", 1)))
        (data_dir / "reconcile-snapshot.json").write_text(json.dumps(snapshot, default=str))
        result.pop("failure", None)
        result["rechecked"] = datetime.now(UTC).isoformat(timespec="seconds")
        if "machine" not in result and datetime.fromisoformat(result["when"]) > booted_at():
            # a day run before results named their machine, in this very boot: this machine
            result["machine"] = machine() | {"recorded_by": "recheck in the day's boot"}
        try:
            result["reconciliation"] = reconcile.check(snapshot)
            result["passed"] = True
        except reconcile.ReconcileError as exc:
            result["passed"], result["failure"] = False, str(exc)
    finally:
        os.killpg(access.pid, signal.SIGTERM)
        access.wait(60)
        subprocess.run([HARVESTFLOW, "services", "stop"], env=env, stdout=log,
                       stderr=subprocess.STDOUT, timeout=300)  # fmt: skip
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--urls", type=int, default=10_000, help="URLs in the synthetic web")
    ap.add_argument("--domains", type=int, default=0, help="domains (default: URLs / 20)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--step1", type=int, default=1000, help="step-1 budget (URLs per domain)")
    ap.add_argument("--step2", type=int, default=2000, help="step-2 budget (URLs per domain)")
    ap.add_argument("--delay-ms", type=int, default=50, help="politeness delay (min)")
    ap.add_argument("--timeout", type=float, default=7200, help="per stage, seconds")
    ap.add_argument("--tmp", default="/tmp", help="where the fresh data directory goes")
    ap.add_argument("--keep", action="store_true", help="keep the data directory")
    ap.add_argument("--results", type=Path, help="default: bench/results/scale-<N>.json")
    ap.add_argument("--recheck", type=Path, metavar="DATA_DIR",
                    help="reconcile a kept day again (after a checker's fix); --results: its file")  # fmt: skip
    args = ap.parse_args()
    if args.recheck:
        if not args.results:
            ap.error("--recheck needs --results (the day's results file)")
        again = recheck(args.recheck, args.results)
        args.results.write_text(json.dumps(again, indent=1, default=str) + "\n")
        print(f"recheck {'passed' if again['passed'] else 'FAILED: ' + again['failure']}")
        return 0 if again["passed"] else 1
    started = datetime.now(UTC).isoformat(timespec="seconds")
    out = args.results or REPO / "bench" / "results" / "scale" / f"scale-{args.urls}.json"
    result: dict[str, Any] = {
        "benchmark": f"scale-{args.urls}",
        "when": started,
        "args": vars(args) | {"results": str(out)},
        "machine": machine(),
        "load_before": loadavg(),
    }
    try:
        run_day(args, result)
        result["passed"] = True
    except (DayFailed, reconcile.ReconcileError) as exc:
        result["passed"] = False
        result["failure"] = str(exc)
        print(f"day FAILED: {exc}", flush=True)
    result["load_after"] = loadavg()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, default=str) + "\n")
    print(f"results: {out}", flush=True)
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
