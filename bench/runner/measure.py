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

Where the machine lets it create a cgroup (cgroup v2, or v1's ``cpuacct``: root on most
Linux hosts), the command runs in one of its own and ``cpu_s`` is the cgroup's CPU time:
rusage misses what no parent reaps, e.g. Chromium's sandboxed renderers, which live in a PID
namespace of their own and are killed with it (about half of a rendering crawl's Chromium
CPU). ``cpu_counted_by`` says which way it was counted; ``cpu_s_reaped`` is rusage's figure.
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
CGROUP_V2_ROOTS = ("/sys/fs/cgroup", "/sys/fs/cgroup/unified")
CGROUP_V1_CPUACCT = "/sys/fs/cgroup/cpuacct"


class CpuCgroup:
    """A cgroup of its own for the command, whose CPU time counts every process that ran in it."""

    def __init__(self, path: Path, v2: bool) -> None:
        self.path = path
        self.v2 = v2

    @classmethod
    def create(cls) -> CpuCgroup | None:
        """A new cgroup, or None where none can be made (no permission, no hierarchy)."""
        name = f"hf-measure-{os.getpid()}"
        for root, v2 in [*((r, True) for r in CGROUP_V2_ROOTS), (CGROUP_V1_CPUACCT, False)]:
            marker = "cgroup.controllers" if v2 else "cpuacct.usage"
            if not Path(root, marker).exists():
                continue
            path = Path(root, name)
            try:
                path.mkdir()
            except OSError:
                continue
            return cls(path, v2)
        return None

    def join(self) -> None:
        """Move the calling process into the cgroup (in the child, before exec)."""
        fd = os.open(self.path / "cgroup.procs", os.O_WRONLY)
        try:
            os.write(fd, b"0")
        finally:
            os.close(fd)

    def cpu_s(self) -> tuple[float, float]:
        """(user, system) seconds of every process that ran in the cgroup."""
        if self.v2:
            stat = dict(line.split() for line in (self.path / "cpu.stat").read_text().splitlines())
            return int(stat["user_usec"]) / 1e6, int(stat["system_usec"]) / 1e6
        user = int((self.path / "cpuacct.usage_user").read_text()) / 1e9
        system = int((self.path / "cpuacct.usage_sys").read_text()) / 1e9
        return user, system

    def remove(self) -> None:
        try:
            self.path.rmdir()
        except OSError as exc:  # a process left in it: the cgroup stays, said on stderr
            print(f"measure: cgroup {self.path} not removed: {exc}", file=sys.stderr)


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
        cgroup = CpuCgroup.create()
        try:
            join = cgroup.join if cgroup is not None else None
            proc = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=cwd, preexec_fn=join)
        except BaseException:
            if cgroup is not None:
                cgroup.remove()
            raise
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
    wall = time.perf_counter() - started
    reaped_cpu = user + system
    counted_by = "rusage"
    if cgroup is not None:
        user, system = cgroup.cpu_s()
        cgroup.remove()
        counted_by = "cgroup"
    return {
        "wall_s": wall,
        "main_wall_s": main_wall,
        "cpu_s": user + system,
        "user_s": user,
        "sys_s": system,
        "cpu_counted_by": counted_by,
        "cpu_s_reaped": reaped_cpu,
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
