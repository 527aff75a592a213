"""The CeleryExecutor for real: `harvestflow up` with [airflow] executor = "celery" starts the
redis-server broker, two `harvestflow worker` processes with their own names and queue sets take
the tasks, and a selective job's crawl runs only on the worker of the `crawl_high` queue (the
task instance's hostname), every other task on the other worker. Then a second `crawl_high`
worker joins, a one-off crawl starts on one of the two, that worker and its crawler are killed
(SIGKILL), and the job finishes on the other: its retry takes the expired job lease and resumes
the job directory, no URL fetched twice."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time

import httpx
import pytest

from harvestflow.services.postgres import port_open
from tests.platform.helpers import HARVESTFLOW, isolated_env
from tests.platform.test_up import Output, _wait_run

pytestmark = [pytest.mark.airflow, pytest.mark.slow]


def _fetched(logs: list) -> list[str]:
    """The one-off's seed URLs fetched (status > 0) in crawl.log, complete lines only."""
    return [
        f[3]
        for p in logs
        for f in (ln.split() for ln in p.read_text().split("\n")[:-1])
        if len(f) == 12 and "/slow?ms=700" in f[3] and int(f[1]) > 0
    ]


def _kill_tree(pid: int) -> None:
    import psutil

    root = psutil.Process(pid)
    procs = [root, *root.children(recursive=True)]
    for p in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.kill()
    psutil.wait_procs(procs, timeout=30)


def _worker(env: dict[str, str], name: str, queues: str, log) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            HARVESTFLOW,
            "worker",
            "--queues",
            queues,
            "--name",
            name,
            "--concurrency",
            "2",
            "--skip-serve-logs",
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _stop(proc: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 120) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                import os

                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_a_selective_crawl_runs_only_on_the_crawl_high_worker(tmp_path) -> None:
    env = isolated_env(tmp_path / "var")
    env["HARVESTFLOW_AIRFLOW__EXECUTOR"] = "celery"
    # a lost worker is noticed in seconds, not minutes: short job lease, short TI heartbeat
    env["HARVESTFLOW_CRAWLER__JOB_LEASE_TTL_S"] = "6"
    env["AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT"] = "20"
    broker_port = int(env["HARVESTFLOW_BROKER__PORT"])
    up = subprocess.Popen(
        [HARVESTFLOW, "up"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    out = Output(up)
    workers: list[subprocess.Popen[bytes]] = []
    names = ("hf-high", "hf-other", "hf-high2")
    logs = {name: open(tmp_path / f"{name}.log", "wb") for name in names}  # noqa: SIM115
    try:
        harvest_id = int(out.wait_for(r"demo definition id (\d+)", 300).group(1))
        login = out.wait_for(r"Airflow UI: (http://\S+)\s+login: (\S+) / (\S+)", 300)
        assert port_open("127.0.0.1", broker_port)  # the embedded broker, on loopback
        workers.append(_worker(env, "hf-high", "crawl_high", logs["hf-high"]))
        workers.append(_worker(env, "hf-other", "crawl_low,default", logs["hf-other"]))
        base, user, password = login.group(1).rstrip("/"), login.group(2), login.group(3)
        token = httpx.post(
            f"{base}/auth/token", json={"username": user, "password": password}, timeout=10
        ).json()["access_token"]
        with httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=30
        ) as client:
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline:
                dags = client.get("/api/v2/dags", params={"limit": 100}).json()["dags"]
                if "selective_harvest_daily" in {d["dag_id"] for d in dags}:
                    break
                time.sleep(3)
            run = client.post(
                "/api/v2/dags/selective_harvest_daily/dagRuns",
                json={"logical_date": None, "conf": {"harvest_id": harvest_id}},
            )
            assert run.status_code == 200, run.text
            run_id = run.json()["dag_run_id"]
            state = _wait_run(client, "selective_harvest_daily", run_id, 900)
            tis = client.get(
                f"/api/v2/dags/selective_harvest_daily/dagRuns/{run_id}/taskInstances",
                params={"limit": 100},
            ).json()["task_instances"]
            ran = {
                (t["task_id"], t["map_index"]): (t["state"], t["hostname"], t["queue"]) for t in tis
            }
            assert state == "success", ran
            crawls = {k: v for k, v in ran.items() if k[0] == "harvest_job.crawl"}
            assert crawls and all(
                v == ("success", "hf-high", "crawl_high") for v in crawls.values()
            )
            others = {
                v[1] for k, v in ran.items() if k[0] != "harvest_job.crawl" and v[0] == "success"
            }
            assert others == {"hf-other"}, ran

            # worker loss: a second crawl_high worker; kill whichever runs the crawl
            workers.append(_worker(env, "hf-high2", "crawl_high", logs["hf-high2"]))
            by_name = {"hf-high": workers[0], "hf-high2": workers[2]}
            site = out.wait_for(r"sample site: (http://\S+)", 10).group(1).rstrip("/")
            port = site.rsplit(":", 1)[1]
            seeds = [f"http://www.example-a.test:{port}/slow?ms=700&n={i}" for i in range(30)]
            data_dir = tmp_path / "var"
            earlier = set(data_dir.rglob("crawl.log"))
            run = client.post(
                "/api/v2/dags/oneoff_harvest/dagRuns",
                json={
                    "logical_date": None,
                    "conf": {
                        "seeds": seeds,
                        "template": "demo_loopback",
                        "resolve": {"www.example-a.test": "127.0.0.1"},
                    },
                },
            )
            assert run.status_code == 200, run.text
            run_id = run.json()["dag_run_id"]
            url = f"/api/v2/dags/oneoff_harvest/dagRuns/{run_id}/taskInstances"
            victim = None
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline and victim is None:
                for t in client.get(url, params={"limit": 100}).json()["task_instances"]:
                    if t["task_id"] == "harvest_job.crawl" and t["state"] == "running":
                        victim = t["hostname"]
                time.sleep(1)
            assert victim in by_name, victim
            logs_found: list = []
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                logs_found = [p for p in data_dir.rglob("crawl.log") if p not in earlier]
                if len(_fetched(logs_found)) >= 3:
                    break
                time.sleep(0.5)
            _kill_tree(by_name[victim].pid)  # the worker, its task and its crawler
            at_kill = len(_fetched(logs_found))
            state = _wait_run(client, "oneoff_harvest", run_id, 900)
            tis = client.get(url, params={"limit": 100}).json()["task_instances"]
        crawl = next(t for t in tis if t["task_id"] == "harvest_job.crawl")
        survivor = ({"hf-high", "hf-high2"} - {victim}).pop()
        assert state == "success", tis
        assert (crawl["state"], crawl["hostname"]) == ("success", survivor)
        assert crawl["try_number"] >= 2
        fetched = _fetched(logs_found)
        assert sorted(set(fetched)) == sorted(seeds)  # every seed captured ...
        assert len(fetched) == len(seeds)  # ... exactly once, across the kill
        assert 0 < at_kill < len(seeds), at_kill  # the kill came in the middle of the crawl
    finally:
        for w in workers:
            _stop(w)
        for f in logs.values():
            f.close()
        _stop(up, signal.SIGINT, 180)
    assert up.returncode == 0, "".join(out.lines)[-3000:]
    assert not port_open("127.0.0.1", broker_port)  # up stopped the broker it started
