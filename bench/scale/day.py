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
from bench.scale.dayplatform import (  # noqa: E402
    AFTER_CRAWL,
    DAILY,
    DAY_DAGS,
    DAY_TEMPLATE,
    HARVESTFLOW,
    DayFailed,
    Platform,
    platform_env,
)
from bench.scale.nationalweb import NationalWeb  # noqa: E402
from bench.scale.webserve import WebProcess  # noqa: E402


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
