"""The day's meter (bench/scale/daymeter.py) finds the platform's processes as the day runs them:
those naming the data directory (in their environment, or in their arguments as PostgreSQL
does), and every descendant of theirs, a process that replaced its program (exec) under its new
name; nothing else of the machine."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.scale import daymeter

# a parent that starts a child, which replaces itself (exec) by a program named like a crawler
PARENT = (  # (the name split: the parent's own command line must not hold it)
    "import subprocess, sys, time\n"
    "subprocess.Popen([sys.executable, '-c', 'import os, sys; os.execv(sys.executable,"
    ' [sys.executable, "-c", "import time; time.sleep(60)", "-m craw" + "ler"])\'])\n'
    "time.sleep(60)\n"
)


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[dict[str, subprocess.Popen[bytes]]]:
    data = str(tmp_path / "data")
    env = {**os.environ, "HARVESTFLOW_DATA_DIR": data}
    outsider_env = {k: v for k, v in os.environ.items() if k != "HARVESTFLOW_DATA_DIR"}
    procs = {
        "platform": subprocess.Popen([sys.executable, "-c", PARENT], env=env),
        # PostgreSQL's way: the data directory in its arguments only
        "by_argument": subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(60)", f"-D{data}/pg"], env=outsider_env
        ),
        "outsider": subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(60)"], env=outsider_env
        ),
    }
    yield procs
    for proc in procs.values():
        for child in _children(proc.pid):
            os.kill(child, 9)
        proc.kill()
        proc.wait()


def _children(pid: int) -> list[int]:
    return [p for p, st in daymeter._all_stats().items() if st.ppid == pid]


def test_the_meter_takes_the_data_directorys_processes_and_their_descendants_only(
    processes: dict[str, subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    meter = daymeter.Meter({"HARVESTFLOW_DATA_DIR": str(tmp_path / "data")})
    platform = processes["platform"].pid
    deadline = time.monotonic() + 30
    while not (kids := [k for k in _children(platform) if "-m crawler" in _cmdline(k)]):
        assert time.monotonic() < deadline, "the child did not replace its program"
        time.sleep(0.05)
    [child] = kids
    tree = set(meter._tree(daymeter._all_stats()))
    assert {platform, child, processes["by_argument"].pid} <= tree
    assert processes["outsider"].pid not in tree
    assert os.getpid() not in tree  # this test's process names no data directory
    # each is named by its program: the child by the one it runs now, not its parent's
    meter.sample_processes()
    kinds = {pid: kind for (pid, _), (_, kind) in meter.kind.items()}
    assert kinds[child] == "crawlers" and kinds[platform] == "other", kinds
    assert meter.cpu  # and their CPU recorded


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""
