"""Measure one command's whole process tree: wall time, CPU seconds, peak RSS.

Why a separate process: the CPU a command spends in processes it does not wait for (a
grandchild left running, a browser killed with SIGKILL before it was reaped) is lost to
``RUSAGE_CHILDREN`` of the parent. This wrapper makes itself a child subreaper
(``prctl(PR_SET_CHILD_SUBREAPER)``), so every orphaned descendant is re-parented to it and its
rusage is collected by ``wait4`` here; descendants reaped by their own parents are already in
their parent's rusage. The wrapper's own start-up is not counted: only what ``wait4`` returns.

Run as a script (no imports from the package, so it starts fast)::

    python measure.py RESULT.json STDOUT STDERR GRACE_S -- COMMAND...

Orphaned descendants are reaped as soon as they exit (never left as zombies while the command
runs). Descendants still running when the command exits are waited for up to GRACE_S seconds,
then killed (SIGKILL) and counted; the result names how many there were.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36


def set_subreaper() -> None:
    """Become the reaper of every orphaned descendant (Linux >= 3.4); raise if refused."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl(PR_SET_CHILD_SUBREAPER): {os.strerror(err)}")


def _children() -> list[int]:
    """Pids whose parent is this process (orphans re-parented here included)."""
    me = os.getpid()
    pids = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        # the command name may hold spaces and parentheses: fields follow the last ')'
        fields = stat[stat.rfind(")") + 2 :].split()
        if int(fields[1]) == me:
            pids.append(int(entry.name))
    return pids


def measure(
    cmd: list[str], stdout: Path, stderr: Path, grace_s: float = 30.0, cwd: str | None = None
) -> dict[str, object]:
    """Run ``cmd`` to the end of its whole process tree; its measurements as a dict.

    Must run in a process that has no other children (the wrapper script), since every child
    reaped here is counted.
    """
    set_subreaper()
    user = system = 0.0
    maxrss_kb = 0
    reaped = 0
    killed = 0
    with open(stdout, "wb") as out, open(stderr, "wb") as err:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=cwd)
        # orphans are reaped as they exit, not after the command: a zombie left until then
        # still "exists" for whoever waits for it to be gone (a test of process lifecycles)
        while True:
            pid, status, usage = os.wait4(-1, 0)
            user += usage.ru_utime
            system += usage.ru_stime
            maxrss_kb = max(maxrss_kb, usage.ru_maxrss)
            reaped += 1
            if pid == proc.pid:
                break
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    main_wall = time.perf_counter() - started
    deadline = time.perf_counter() + grace_s
    signalled: set[int] = set()
    next_scan = deadline
    while True:
        try:
            pid, _, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            break  # no descendant left
        if pid == 0:
            # past the grace, every child is killed, again and again: a descendant killed here
            # leaves its own children to be re-parented here later (a scheduler's task workers),
            # and those must be killed too, not waited for without end
            if time.perf_counter() > next_scan:
                for child in _children():
                    if child in signalled:
                        continue
                    try:
                        os.kill(child, signal.SIGKILL)
                        signalled.add(child)
                        killed += 1
                    except ProcessLookupError:
                        pass
                next_scan = time.perf_counter() + 0.2
            time.sleep(0.005)
            continue
        user += usage.ru_utime
        system += usage.ru_stime
        maxrss_kb = max(maxrss_kb, usage.ru_maxrss)
        reaped += 1
    return {
        "wall_s": time.perf_counter() - started,
        "main_wall_s": main_wall,
        "cpu_s": user + system,
        "user_s": user,
        "sys_s": system,
        "peak_rss_mb": maxrss_kb / 1024,
        "exit_code": proc.returncode,
        "orphans_reaped": reaped - 1,
        "orphans_killed": killed,
    }


def main(argv: list[str]) -> int:
    sep = argv.index("--")
    result, stdout, stderr, grace = argv[:sep]
    cmd = argv[sep + 1 :]
    res = measure(cmd, Path(stdout), Path(stderr), float(grace))
    Path(result).write_text(json.dumps(res) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
