"""``AirflowProcesses.stop``: what ``harvestflow up`` started is stopped on Ctrl-C, including
the processes Airflow's task supervisor puts in process groups of their own (a running task and
the crawler it launched)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import psutil

from harvestflow.airflow_runtime import AirflowProcesses
from harvestflow.settings import get_settings

# a stand-in "component" that starts a child in its own session, as Airflow's supervisor
# starts a task: killpg of the component's group does not reach that child
COMPONENT = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                         start_new_session=True)
open(sys.argv[1], "w").write(str(child.pid))
time.sleep(600)
"""


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_stop_ends_task_processes_outside_the_components_process_groups(tmp_path: Path) -> None:
    pid_file = tmp_path / "task.pid"
    component = subprocess.Popen(
        [sys.executable, "-c", COMPONENT, str(pid_file)], start_new_session=True
    )
    deadline = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text()):
        assert time.monotonic() < deadline, "the stand-in component did not start its task"
        time.sleep(0.05)
    task_pid = int(pid_file.read_text())
    assert psutil.Process(task_pid).ppid() == component.pid
    try:
        AirflowProcesses(get_settings(), procs={"scheduler": component}).stop(timeout_s=10)
        assert component.poll() is not None
        deadline = time.monotonic() + 10
        while not _gone(task_pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _gone(task_pid), "the task's process outlived harvestflow up's stop"
    finally:
        for pid in (task_pid, component.pid):
            if not _gone(pid):
                psutil.Process(pid).kill()
