"""The measuring wrapper (bench/runner/measure.py): a side's whole process tree, as a subreaper.

Why apart from the runner's rules: these prove what the wrapper counts and reaps (a grandchild
killed with SIGKILL, an orphan exiting mid-run, descendants left running past the grace) with
small forking scripts, whatever benchmark the runner drives.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench.runner.core import measure_side
from bench.runner.spec import Side

REPO = Path(__file__).resolve().parents[2]


GRANDCHILD = """
import os, signal, sys, time
marker = sys.argv[1]
pid = os.fork()
if pid == 0:  # the grandchild: burn 1 s of CPU, say so, then wait to be killed
    while time.process_time() < 1.0:
        pass
    open(marker, "w").close()
    while True:
        time.sleep(1)
while not os.path.exists(marker):
    time.sleep(0.01)
os.kill(pid, signal.SIGKILL)  # never waited for: its rusage never reaches this process
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_cpu_of_a_grandchild_killed_with_sigkill_is_counted(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(GRANDCHILD)
    side = Side("ours", [sys.executable, str(script), str(tmp_path / "burnt")], 1, "test")
    m = measure_side(side, tmp_path / "out")
    assert m["exit_code"] == -9  # the child was killed before reaping its child
    assert m["orphans_reaped"] == 1
    assert m["cpu_s"] >= 0.95  # the grandchild's second of CPU, collected by the subreaper


# a PID namespace whose init has a busy child; the command kills the init's group, as a crawler
# kills its Chromium's (whose sandboxed renderers live in such a namespace): the kernel ends the
# namespace, and the busy process's CPU reaches a parent's rusage only by a race
NAMESPACE = """
import os, signal, subprocess, sys, time
marker = sys.argv[1]
busy = (
    "import time\\nwhile time.process_time() < 1.0: pass\\n"
    f"open({marker!r}, 'w').close()\\ntime.sleep(600)"
)
init = subprocess.Popen(
    ["unshare", "--pid", "--fork", "sh", "-c", f"{sys.executable} -c \\"{busy}\\" & sleep 600"],
    start_new_session=True,
)
for _ in range(6000):  # a ceiling of 60 s
    if os.path.exists(marker):
        break
    time.sleep(0.01)
os.killpg(init.pid, signal.SIGKILL)
init.wait()
"""


def test_cpu_of_a_process_killed_with_its_pid_namespace_is_counted(tmp_path: Path) -> None:
    script = tmp_path / "namespace.py"
    script.write_text(NAMESPACE)
    side = Side("ours", [sys.executable, str(script), str(tmp_path / "burnt")], 1, "test")
    m = measure_side(side, tmp_path / "out")
    assert m["exit_code"] == 0, (tmp_path / "out").glob("*")
    assert (tmp_path / "burnt").exists()  # the busy process did its second of CPU
    assert m["cpu_counted_by"] == "cgroup"  # as root on Linux (the project's machines, CI)
    # counted by the cgroup; rusage gets it only when the dying namespace's init reaped it
    # before being reaped itself (a race: lost on a quiet machine, seen under load)
    assert m["cpu_s"] >= 0.95


ORPHAN = """
import os, sys, time
pid = os.fork()
if pid == 0:  # the child: leaves an orphan that exits at once, then exits itself
    if os.fork() == 0:
        with open(sys.argv[1], "w") as f:
            f.write(str(os.getpid()))
        os._exit(0)
    os._exit(0)
os.waitpid(pid, 0)
while not os.path.exists(sys.argv[1]) or not open(sys.argv[1]).read():
    time.sleep(0.01)
orphan = int(open(sys.argv[1]).read())
state = "zombie"
for _ in range(1000):  # a ceiling of 10 s: the orphan exited long before
    try:
        stat = open(f"/proc/{orphan}/stat").read()
    except FileNotFoundError:
        state = "reaped"
        break
    time.sleep(0.01)
print(state)
"""


def test_an_orphan_is_reaped_while_the_command_still_runs(tmp_path: Path) -> None:
    """A descendant orphaned to the wrapper is not left a zombie until the command ends: a
    command that waits for it to be gone (a test of process lifecycles) would wait in vain."""
    script = tmp_path / "orphan.py"
    script.write_text(ORPHAN)
    side = Side("ours", [sys.executable, str(script), str(tmp_path / "pid")], 1, "test")
    m = measure_side(side, tmp_path / "out")
    assert m["exit_code"] == 0
    assert (tmp_path / "out" / "stdout").read_text().strip() == "reaped"
    assert m["orphans_reaped"] == 1


LEFT_RUNNING = """
import os, time
if os.fork() == 0:  # a child left running, whose own child outlives it
    if os.fork() == 0:
        time.sleep(600)
        os._exit(0)
    time.sleep(600)
    os._exit(0)
"""


def test_descendants_left_running_are_killed_after_the_grace_with_their_own_children(
    tmp_path: Path,
) -> None:
    """A descendant killed after the grace leaves its children re-parented to the wrapper later
    (a scheduler's task workers): they are killed too, the wrapper does not wait for them."""
    script = tmp_path / "left.py"
    script.write_text(LEFT_RUNNING)
    result = tmp_path / "m.json"
    measure = REPO / "bench" / "runner" / "measure.py"
    cmd = [sys.executable, str(measure), str(result), str(tmp_path / "o"), str(tmp_path / "e")]
    # a ceiling only: without the fix the wrapper waits for the grandchild's 600 s
    subprocess.run([*cmd, "0.5", "--", sys.executable, str(script)], check=True, timeout=120)
    m = json.loads(result.read_text())
    assert m["exit_code"] == 0
    assert m["orphans_killed"] == 2
