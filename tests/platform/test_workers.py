"""Workers: `harvestflow worker` refuses to run without the shared data directory (and without
the celery executor); the crawl task refuses too; queue names are checked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.runtime.workers import parse_queues, worker_command
from harvestflow.services.datadir import DataDirError, check_data_dir, write_data_dir_marker
from harvestflow.settings import load

REPO = Path(__file__).resolve().parents[2]


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli.main", *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )


def test_a_worker_without_the_shared_data_directory_refuses_to_start(tmp_path: Path) -> None:
    empty = tmp_path / "not-mounted"
    empty.mkdir()
    env = {"HARVESTFLOW_DATA_DIR": str(empty), "HARVESTFLOW_AIRFLOW__EXECUTOR": "celery"}
    proc = _cli(env, "worker", "--queues", "crawl_high")
    assert proc.returncode == 2
    assert f"{empty} is not the platform's shared data directory" in proc.stderr
    assert ".harvestflow-data-dir" in proc.stderr


def test_a_worker_needs_the_celery_executor(tmp_path: Path) -> None:
    write_data_dir_marker(tmp_path)
    proc = _cli({"HARVESTFLOW_DATA_DIR": str(tmp_path)}, "worker")
    assert proc.returncode == 2
    assert 'workers need [airflow] executor = "celery"' in proc.stderr


def test_the_crawl_task_refuses_without_the_marker(tmp_path: Path, monkeypatch) -> None:
    from harvest.joblease import check_worker_can_crawl
    from harvestflow import settings as settings_mod

    monkeypatch.setenv("HARVESTFLOW_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("HARVESTFLOW_AIRFLOW__EXECUTOR", "celery")
    settings_mod.reset()
    try:
        with pytest.raises(DataDirError, match="Mount the shared data directory"):
            check_worker_can_crawl()
        marker = write_data_dir_marker(tmp_path)
        check_worker_can_crawl()
        assert check_data_dir(tmp_path)["id"]
        assert write_data_dir_marker(tmp_path) == marker  # kept, not renewed
    finally:
        settings_mod.reset()


def test_queues_and_the_worker_command(tmp_path: Path) -> None:
    settings = load(environ={"HARVESTFLOW_DATA_DIR": str(tmp_path)})
    assert parse_queues(None, settings) == [
        "crawl_high",
        "crawl_low",
        "crawl_continuous",
        "default",
    ]
    assert parse_queues("crawl_high", settings) == ["crawl_high"]
    with pytest.raises(ValueError, match="distinct comma-separated"):
        parse_queues("crawl_high,,default", settings)
    cmd = worker_command(["crawl_high"], "w1", 2, serve_logs=False)
    (args,) = json.loads(cmd[-1])  # one Airflow command, run by app.runtime.airflow_batch
    assert cmd[:-1] == [sys.executable, "-P", "-m", "app.runtime.airflow_batch"]
    assert args == [
        "celery",
        "worker",
        "--queues",
        "crawl_high",
        "--celery-hostname",
        "celery@w1",  # Celery's node name, also the task instances' hostname
        "--concurrency",
        "2",
        "--skip-serve-logs",
    ]


@pytest.mark.slow
def test_local_workers_of_up_come_up_named_on_every_queue_and_stop(services, monkeypatch) -> None:
    """`harvestflow up --workers 2`'s workers: two Celery workers on the broker, then stopped."""
    import socket
    import time

    import psutil

    from app.runtime.workers import LocalWorkers
    from harvestflow import services as svc
    from harvestflow import settings as settings_mod

    monkeypatch.setenv("HARVESTFLOW_AIRFLOW__EXECUTOR", "celery")
    settings_mod.reset()
    settings = settings_mod.get_settings()
    started_broker = svc.ensure_broker(settings)
    workers = LocalWorkers(settings, 2)
    try:
        workers.start()
        logs = [workers.log_dir / f"worker-{i}.log" for i in (1, 2)]
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not all(
            p.exists() and " ready." in p.read_text(errors="replace") for p in logs
        ):
            assert not workers.dead(), [p.read_text(errors="replace")[-2000:] for p in logs]
            time.sleep(1)
        for i, path in enumerate(logs, 1):
            text = path.read_text(errors="replace")
            assert f"worker{i}@{socket.gethostname()} ready." in text, text[-2000:]
        pids = [p.pid for p in workers.procs.values()]
    finally:
        workers.stop()
        if started_broker:
            svc.redis_for(settings).stop()
        settings_mod.reset()
    assert not any(
        psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie" for pid in pids
    )


def test_a_workers_name_is_one_name_for_celery_and_its_task_instances(tmp_path: Path) -> None:
    """`--name wA`: Celery calls the node celery@wA, so the task instances record that too."""
    from app.runtime.workers import WORKER_NAME_ENV, worker_env

    settings = load(
        environ={"HARVESTFLOW_DATA_DIR": str(tmp_path), "HARVESTFLOW_AIRFLOW__EXECUTOR": "celery"}
    )
    (args,) = json.loads(worker_command(["default"], "wA", 1)[-1])
    assert args[args.index("--celery-hostname") + 1] == "celery@wA"
    assert worker_env(settings, "wA")[WORKER_NAME_ENV] == "celery@wA"
    assert worker_env(settings, "worker1@vm")[WORKER_NAME_ENV] == "worker1@vm"


def test_a_dead_local_worker_is_restarted_with_a_growing_delay_and_a_limit(
    tmp_path: Path, monkeypatch
) -> None:
    """`up --workers N` restarts a worker that died, after 2, 4, 8 … s, and leaves one that
    died RESTART_LIMIT times within the window dead (a crash loop must not spin). The worker
    program is replaced by one that exits at once: what is tested is the supervision."""
    from app.runtime import workers as w

    settings = load(environ={"HARVESTFLOW_DATA_DIR": str(tmp_path)})
    spawned: list[str] = []

    def spawn(self: w.LocalWorkers, i: int, name: str) -> subprocess.Popen[bytes]:
        spawned.append(name)
        return subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])

    monkeypatch.setattr(w.LocalWorkers, "_spawn", spawn)
    workers = w.LocalWorkers(settings, 1)
    workers.start()
    (name,) = workers.procs
    workers.procs[name].wait()
    said = workers.restart_dead(now=1000.0)
    assert said == [
        f"worker {name} exited with 3; restarting it in 2s (restart 1 of at most 5 in 600s)"
    ]
    assert workers.restart_dead(now=1001.0) == []  # not before its delay
    assert workers.restart_dead(now=1002.0)[0].startswith(f"worker {name} restarted (pid ")
    now = 1002.0
    delays = []
    for _ in range(4):
        workers.procs[name].wait()
        said = workers.restart_dead(now=now)
        delays.append(int(said[0].split("restarting it in ")[1].split("s")[0]))
        now += delays[-1]
        assert workers.restart_dead(now=now)[0].startswith(f"worker {name} restarted")
    assert delays == [4, 8, 16, 32]
    workers.procs[name].wait()
    (gave_up,) = workers.restart_dead(now=now)
    assert "after 5 restarts in 600s: not restarted again" in gave_up
    assert workers.restart_dead(now=now + 3600) == []  # and left dead, said once
    assert len(spawned) == 6
