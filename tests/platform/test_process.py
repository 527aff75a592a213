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
