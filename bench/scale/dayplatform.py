"""The day's platform: ``harvestflow up`` on ports of its own, its api-server as a signed-in
client, and the runs' states read from Airflow's database (bench/scale/day.py drives the day).

Why a module apart: the driver's stages (crawl, chain, daily DAGs, reconciliation) read as a
story in day.py; how a run is started, watched and judged ended is the platform's business, and
its polling is what the day's figures count as platform CPU.
"""

from __future__ import annotations

import functools
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from harvestflow.services.process import die_with_parent

REPO = Path(__file__).resolve().parents[2]
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
