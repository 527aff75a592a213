"""harvestflow.services.process: a wrapper command passes stop signals on to the program it runs.

Why it matters: ``harvestflow worker`` wraps ``airflow celery worker``; a service manager, a
container runtime or a test stops it with SIGTERM. Python's default ends the wrapper at once and
the Celery worker it started went on running, orphaned (every test_celery run left five of them
behind, with their task supervisors)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PROGRAM = textwrap.dedent(
    """
    import pathlib, signal, sys, time

    def stop(signum, _frame):
        pathlib.Path(sys.argv[1]).write_text(str(signum))
        sys.exit(7)

    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(sig, stop)
    print("ready", flush=True)
    time.sleep(120)
    """
)

WRAPPER = (
    "import sys; from harvestflow.services.process import run_forwarding;"
    " sys.exit(run_forwarding([sys.executable, '-c', sys.argv[1], sys.argv[2]]))"
)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT])
def test_a_stop_signal_to_the_wrapper_reaches_its_program_which_exits_its_own_way(
    tmp_path: Path, sig: signal.Signals
) -> None:
    got = tmp_path / "got"
    wrapper = subprocess.Popen(
        [sys.executable, "-c", WRAPPER, PROGRAM, str(got)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert wrapper.stdout is not None
        assert wrapper.stdout.readline().strip() == "ready"  # the program runs
        wrapper.send_signal(sig)
        # the wrapper exits with the program's own status, after the program handled the signal
        assert wrapper.wait(30) == 7
        assert got.read_text() == str(int(sig))
    finally:
        wrapper.kill()
        wrapper.wait()


def test_before_stop_runs_once_before_sigterm_reaches_the_program(tmp_path: Path) -> None:
    """`harvestflow worker`'s hook: its crawlers are asked to checkpoint (before_stop) before
    Celery gets SIGTERM, whose warm shutdown would otherwise wait for the whole crawl."""
    got, hook = tmp_path / "got", tmp_path / "hook"
    wrapper_code = (
        "import os, pathlib, sys, time; from harvestflow.services.process import run_forwarding\n"
        "def first(program):\n"
        "    with open(sys.argv[3], 'a') as f: f.write(f'{program.pid} {time.time()}\\n')\n"
        "    time.sleep(0.5)\n"
        "sys.exit(run_forwarding([sys.executable, '-c', sys.argv[1], sys.argv[2]],"
        " before_stop=first))"
    )
    wrapper = subprocess.Popen(
        [sys.executable, "-c", wrapper_code, PROGRAM, str(got), str(hook)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert wrapper.stdout is not None
        assert wrapper.stdout.readline().strip() == "ready"
        wrapper.send_signal(signal.SIGTERM)
        assert wrapper.wait(30) == 7
        assert got.read_text() == str(int(signal.SIGTERM))
        (line,) = hook.read_text().splitlines()  # once
        hooked_at = float(line.split()[1])
        assert hooked_at + 0.5 <= got.stat().st_mtime + 0.05  # the program got it after
    finally:
        wrapper.kill()
        wrapper.wait()


def test_a_server_whose_parent_is_another_process_is_stopped_without_waiting_out_its_zombie(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A service started by another process (here a parent that never reaps it; in the fault
    tests, the test process restarting `up`'s broker) is a zombie once it has exited on
    SIGTERM: the stop takes that as gone, rather than waiting its whole timeout and killing
    (`up`'s stop waited 30 s for such a redis-server)."""
    import logging
    import os

    from harvestflow.services.process import stop_process_group

    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, time\n"
            "p = subprocess.Popen(['sleep', '300'], start_new_session=True)\n"
            "print(p.pid, flush=True)\n"
            "time.sleep(300)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert parent.stdout is not None
        pid = int(parent.stdout.readline())
        pidfile = tmp_path / "server.pid"
        pidfile.write_text(str(pid))
        with caplog.at_level(logging.INFO, logger="harvestflow.services.process"):
            assert stop_process_group(pid, pidfile, name="server", timeout_s=60, poll_s=0.1)
        assert not [r for r in caplog.records if "did not stop" in r.getMessage()]
        assert not pidfile.exists()
        with open(f"/proc/{pid}/stat") as stat:  # still there, unreaped: a zombie
            assert stat.read().split(") ")[1].startswith("Z")
        assert os.getpgid(pid) == pid
    finally:
        parent.kill()
        parent.wait()


def test_stop_groups_stops_what_is_left_of_a_group_whose_leader_has_ended() -> None:
    from harvestflow.services.process import group_members, stop_groups

    # the leader starts a child in its group and ends at once (a scheduler killed, its
    # executor's workers left behind)
    leader = subprocess.Popen(
        ["sh", "-c", "sleep 300 & echo $!"], stdout=subprocess.PIPE, start_new_session=True
    )
    assert leader.stdout is not None
    child = int(leader.stdout.readline().strip())
    leader.wait()
    assert child in group_members(leader.pid)
    stop_groups([leader], timeout_s=5)
    leader.stdout.close()
    assert group_members(leader.pid) == []
