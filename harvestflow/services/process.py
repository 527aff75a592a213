"""Lifecycle of a detached service process: its pid file, the wait until it answers, its stop.

Why one module: the embedded Redis and SeaweedFS servers (and PostgreSQL's pid check) are run
the same way — started in their own session, pid kept in a file beside their data, stopped by
signalling the whole process group — and that logic had been copied from file to file.
Each caller keeps its own messages, timeouts and poll intervals; only the mechanics live here.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import psutil

from harvestflow.errors import HarvestflowError

log = logging.getLogger(__name__)


class ServiceError(HarvestflowError, RuntimeError):
    """A service that cannot be started or reached, with the reason and where to look."""


PR_SET_PDEATHSIG = 1  # prctl(2)


def die_with_parent(sig: int = signal.SIGKILL) -> None:  # pragma: no cover - in the child
    """``preexec_fn`` of a child that must not outlive the process that started it: the kernel
    sends it ``sig`` when that process dies, even by ``kill -9`` (Linux; elsewhere nothing is
    done and the child's own checks must stop it). A change of user clears the setting, and
    CPython calls ``preexec_fn`` after ``setuid``: it holds for a child started as another
    user too."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, sig)


def tie_to_parent(sig: int = signal.SIGKILL) -> None:
    """:func:`die_with_parent` for the calling process itself, with the race closed: if the
    parent is already gone (the process was reparented meanwhile), ``sig`` is sent at once.

    Why: Airflow's task supervisor forks the task runner into a process group of its own, so a
    worker killed with its group (``kill -9 -PGID``: a service manager, the OOM killer's cgroup
    kill, ``harvestflow up`` restarting it) leaves the task runner and its crawler running as
    orphans, outside any lease and any log the UI shows. A crawl task calls this first.
    """
    parent = os.getppid()
    die_with_parent(sig)
    if os.getppid() != parent:  # pragma: no cover - the parent died between the two calls
        os.kill(os.getpid(), sig)


def read_pid(pidfile: Path, *, other_owner_alive: bool = False) -> int | None:
    """The pid on the first line of ``pidfile`` if that process is alive, else None.

    ``other_owner_alive``: treat a process we may not signal (another user's, e.g. PostgreSQL
    run as ``embedded_postgres``) as alive; otherwise the PermissionError propagates.
    """
    try:
        pid = int(pidfile.read_text().strip().split("\n", 1)[0])
    except (FileNotFoundError, ValueError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        if other_owner_alive:
            return pid
        raise
    return pid


def spawn_service(
    command: list[str], logfile: Path, cwd: Path, pidfile: Path
) -> subprocess.Popen[bytes]:
    """Start a service in a session of its own (so it is stopped as a group, and a Ctrl-C of
    the terminal does not reach it), its output appended to ``logfile``, its pid written."""
    with open(logfile, "ab") as out:
        proc = subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=cwd,
            start_new_session=True,
        )
    pidfile.write_text(str(proc.pid))
    return proc


def wait_until(
    ready: Callable[[], bool],
    timeout_s: float,
    *,
    proc: subprocess.Popen[bytes] | None,
    name: str,
    logfile: Path,
    not_ready: str,
    poll_s: float,
) -> None:
    """Poll ``ready()`` until it is true; ServiceError if ``proc`` exits or time runs out.

    The errors read "<name> exited with <code>; see <logfile>" and "<not_ready>; see <logfile>".
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise ServiceError(f"{name} exited with {proc.returncode}; see {logfile}")
        if ready():
            return
        time.sleep(poll_s)
    raise ServiceError(f"{not_ready}; see {logfile}")


def stop_process_group(
    pid: int | None,
    pidfile: Path,
    *,
    name: str,
    timeout_s: float,
    poll_s: float,
    logger: logging.Logger = log,
    quiet_kill: bool = False,
) -> bool:
    """SIGTERM the process group led by ``pid``, SIGKILL it after ``timeout_s``; drop the pid file.

    False when there was no live process (the stale pid file is removed all the same). The
    leader is reaped when it is our child, so that it does not linger as a zombie.
    ``quiet_kill``: the kill is the expected end of a server whose own shutdown idles past any
    useful wait, logged as information rather than as a warning.
    """
    if pid is None:
        pidfile.unlink(missing_ok=True)
        return False
    logger.info("stopping %s (pid %s)", name, pid)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    if not _wait_gone(pid, timeout_s, poll_s):
        if quiet_kill:  # said as what it is, so that an operator does not read a fault in it
            logger.info(
                "%s: %ss after SIGTERM, its expected idle wait is cut: SIGKILL", name, timeout_s
            )
        else:
            logger.warning("%s did not stop in %ss, killing it", name, timeout_s)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        # gone (its ports free) before the caller goes on: a start right after must not find
        # them taken
        _wait_gone(pid, KILLED_GONE_S, poll_s)
    pidfile.unlink(missing_ok=True)
    return True


KILLED_GONE_S = 5.0  # how long a SIGKILLed server is waited for (the kernel's own cleanup)


def _wait_gone(pid: int, timeout_s: float, poll_s: float) -> bool:
    """Wait up to ``timeout_s`` for ``pid`` to be gone (reaped when it is our child).

    A zombie counts as gone: a server started by another process of ours (a test, a `services
    start` still running) has exited once it is one, and only its parent can reap it; waiting
    for it cost `up`'s stop a 30 s timeout and a needless kill."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except (ProcessLookupError, psutil.NoSuchProcess):
            return True
        time.sleep(poll_s)
    return False


class GroupLeader(Protocol):
    """A started process leading a process group of its own, as :func:`stop_groups` and
    :func:`descendants` use it: what ``subprocess.Popen`` offers for stopping and watching
    it, and what a process forked by another one offers when that one reports its exit
    (``app.runtime.airflow_launch.Component``)."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...


def stop_groups(procs: Sequence[GroupLeader], timeout_s: float) -> None:
    """SIGTERM each process's group, then SIGKILL the groups still there after ``timeout_s``
    (one deadline for all: a stop is bounded however many processes there are).

    A group whose leader has ended is signalled too: its children may not have (a scheduler
    killed by SIGKILL left its LocalExecutor workers idling in its group after `up` stopped).
    """
    for proc in procs:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    for proc in procs:
        try:
            proc.wait(max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    for proc in procs:  # the members left in a group whose leader has ended
        while group_members(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if group_members(proc.pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)


def group_members(pgid: int) -> list[int]:
    """The processes of process group ``pgid`` that have not ended (zombies left out: only
    their parent can reap them)."""
    members = []
    for proc in psutil.process_iter(["status"]):
        with contextlib.suppress(OSError, psutil.Error):
            if proc.info["status"] != psutil.STATUS_ZOMBIE and os.getpgid(proc.pid) == pgid:
                members.append(proc.pid)
    return members


def started_or_stopped(
    proc: subprocess.Popen[bytes],
    wait_ready: Callable[[subprocess.Popen[bytes]], None],
    stop: Callable[[], Any],
) -> bool:
    """True once ``wait_ready(proc)`` returns; a service that does not come up is stopped
    (nothing half-started is left behind) and its ServiceError raised."""
    try:
        wait_ready(proc)
    except ServiceError:
        stop()
        raise
    return True


class DetachedService:
    """What each embedded server (Redis, SeaweedFS) is: its files below ``data_dir`` named
    ``<stem>.pid`` and ``<stem>.log``, started detached, ready once :meth:`answers` says so.

    Subclasses (dataclasses) give ``data_dir`` and the class constants; messages, timeouts
    and what "answers" means stay theirs."""

    data_dir: Path
    program: str  # in messages: "redis-server", "SeaweedFS"
    stem: str  # of its pid and log files
    poll_s: float  # between two readiness checks

    @property
    def pidfile(self) -> Path:
        return self.data_dir / f"{self.stem}.pid"

    @property
    def logfile(self) -> Path:
        return self.data_dir / f"{self.stem}.log"

    def pid(self) -> int | None:
        return read_pid(self.pidfile)

    def answers(self) -> bool:
        """Whether the server is ready to serve (checked until it is, after a start)."""
        raise NotImplementedError

    def not_ready(self) -> str:
        """The error when it never answers: what did not answer, and where."""
        raise NotImplementedError

    def stop(self) -> bool:
        """Stop the server (subclasses: with their own grace and poll times)."""
        raise NotImplementedError

    def spawn(self, command: list[str], timeout_s: float) -> bool:
        """Start ``command`` in ``data_dir``; True once it answers, stopped again if it does not."""
        proc = spawn_service(command, self.logfile, self.data_dir, self.pidfile)
        return started_or_stopped(proc, lambda p: self._wait_ready(timeout_s, p), self.stop)

    def _wait_ready(self, timeout_s: float, proc: subprocess.Popen[bytes] | None = None) -> None:
        wait_until(
            self.answers,
            timeout_s,
            proc=proc,
            name=self.program,
            logfile=self.logfile,
            not_ready=self.not_ready(),
            poll_s=self.poll_s,
        )


def descendants(procs: Sequence[GroupLeader]) -> list[psutil.Process]:
    """Every live process below ``procs``, whatever its process group.

    Why: Airflow's task supervisor gives each task runner a process group of its own, so a
    killpg of a component's or worker's group leaves a running task (and the crawler it started)
    behind; "stop everything up started" has to follow the process tree instead.
    """
    found: list[psutil.Process] = []
    for proc in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            found.extend(psutil.Process(proc.pid).children(recursive=True))
    return found


FORWARDED = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def run_forwarding(
    cmd: list[str],
    env: dict[str, str] | None = None,
    before_stop: Callable[[subprocess.Popen[bytes]], None] | None = None,
) -> int:
    """Run ``cmd`` in the foreground and return its exit status; a stop signal sent to this
    process (SIGTERM, SIGHUP, SIGQUIT) is passed on to it, and Ctrl-C becomes its SIGTERM.

    Why: a command of ours that wraps a long-running program (``harvestflow worker`` around
    ``airflow celery worker``) is what a service manager, a container runtime or a test stops,
    with SIGTERM. Python's default for SIGTERM ends the wrapper at once, leaving the program it
    started running on its own; here the program gets the signal and shuts down its own way
    (Celery's warm shutdown for SIGTERM, cold for SIGQUIT), and the wrapper exits with it.
    ``before_stop(program)`` runs once, before the first SIGTERM is passed on (a worker asks its
    crawlers to checkpoint first: a warm shutdown would wait for hours of crawling).
    """
    started: list[subprocess.Popen[bytes]] = []
    pending: list[int] = []  # a stop signal that came before the program was started
    stopping: list[int] = []  # before_stop has run

    def forward(signum: int, _frame: object) -> None:
        if not started:
            pending.append(signum)
            return
        if signum == signal.SIGTERM and before_stop is not None and not stopping:
            stopping.append(signum)
            before_stop(started[0])
        with contextlib.suppress(ProcessLookupError):
            started[0].send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in FORWARDED}
    try:
        proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL)
        started.append(proc)
        for signum in pending:
            forward(signum, None)
        while True:
            try:
                return proc.wait()
            except KeyboardInterrupt:  # the terminal sent SIGINT to the program too
                forward(signal.SIGTERM, None)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
