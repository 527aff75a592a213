"""Airflow's components forked from one process that imported Airflow once:
``python -m app.runtime.airflow_launch SPEC`` (:func:`launch` starts it for ``harvestflow up``).

Why: every Airflow process pays 4-4.5 CPU-s (2-core CI VM) importing and initialising Airflow
before its own work, and ``up`` started four (the metadata DB's preparation, the api-server, the
scheduler, the dag-processor). Here the launcher imports Airflow once, forks the preparation
(``db migrate``, ``pools import``) and waits for it, then forks each component from the same
state. Airflow is made for being forked (``airflow.settings`` drops inherited database
connections in a child), and the launcher opens none itself.

Each component is as ``up`` started it before: Airflow's own CLI entry point, a session of its
own, stdin ``/dev/null``, output appended to its log file, titled ``airflow NAME``. The
launcher reaps them and reports on stdout, one JSON line each, their process ids and how each
ended; the preparation's output and the launcher's errors go to SPEC's ``prepare_log``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from app.runtime.airflow_batch import FAILED

POLL_S = 0.05


@dataclass
class Component:
    """A component forked by the launcher, as ``up`` sees it: what ``subprocess.Popen`` offers
    for stopping and watching it (``pid``, ``poll``, ``wait``, ``returncode``). Its exit status
    is the one its parent, the launcher, reaped and reported."""

    name: str
    pid: int
    launcher: subprocess.Popen[str]
    returncode: int | None = None
    unreported: bool = False  # ended after its launcher: its exit status is not known

    def poll(self) -> int | None:
        if self.returncode is None and self.launcher.poll() is not None:
            # the launcher gone (killed?) without its report: the process's own state
            with contextlib.suppress(OSError):
                os.kill(self.pid, 0)
                return None
            self.unreported = True
            self.returncode = -1
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"airflow {self.name}", timeout or 0)
            time.sleep(POLL_S)
        return code


@dataclass
class Launched:
    """The launcher's process and the components it forked, kept current by a thread reading
    its reports."""

    launcher: subprocess.Popen[str]
    components: dict[str, Component] = field(default_factory=dict)

    def follow(self) -> None:
        """Record each component's exit as the launcher reports it (in a thread)."""

        def read() -> None:
            assert self.launcher.stdout is not None
            for line in self.launcher.stdout:
                said = json.loads(line)
                if "exited" in said:
                    self.components[said["exited"]].returncode = int(said["code"])

        threading.Thread(target=read, name="airflow-launcher", daemon=True).start()

    def wait_launcher(self, timeout_s: float) -> None:
        """The launcher's own end (after its last component's): killed when not there by then."""
        try:
            self.launcher.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.launcher.kill()
            self.launcher.wait()


def launch(
    cmd_prefix: list[str],
    prepare: list[list[str]],
    components: dict[str, tuple[list[str], Path]],
    component_env: dict[str, str],
    env: dict[str, str],
    prepare_log: Path,
) -> Launched:
    """Start the launcher (``cmd_prefix`` + this module, with ``env``); return once it has run
    ``prepare`` and forked ``components`` (name: Airflow's arguments and the log file), each
    with ``component_env`` added to ``env``.

    Raises RuntimeError naming the preparation's command that failed, with the end of
    ``prepare_log``, when the preparation (or the launcher) fails: no component is started."""
    spec = {
        "prepare": prepare,
        "components": {name: [args, str(log)] for name, (args, log) in components.items()},
        "component_env": component_env,
    }
    prepare_log.parent.mkdir(parents=True, exist_ok=True)
    with open(prepare_log, "w") as err:
        launcher = subprocess.Popen(
            [*cmd_prefix, "-m", __name__, json.dumps(spec)],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            start_new_session=True,  # a terminal's Ctrl-C reaches `up`, which stops it
        )
    assert launcher.stdout is not None
    first = launcher.stdout.readline()
    started = json.loads(first).get("started") if first else None
    if started is None:
        launcher.wait()
        told = prepare_log.read_text(errors="replace").strip()
        named = re.search(FAILED.format("(.*)"), told)
        failed = f"`airflow {named.group(1)}`" if named else "Airflow's launcher"
        raise RuntimeError(f"{failed} failed: {told[-2000:]}")
    launched = Launched(launcher)
    for name, pid in started.items():
        launched.components[name] = Component(name, int(pid), launcher)
    launched.follow()
    return launched


def _say(out: IO[str], message: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):  # `up` gone: the components are reaped all the same
        out.write(json.dumps(message) + "\n")
        out.flush()


def _fork(run: Any, log: str | None, own_session: bool) -> int:
    """Fork a child running ``run()`` (its exit status), its output to ``log`` (or to this
    process's stderr); the parent gets the child's process id."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return pid
    from app.runtime.airflow_batch import exit_without_teardown

    code: object = 1
    try:
        if own_session:
            os.setsid()
        stdin = os.open(os.devnull, os.O_RDONLY)
        os.dup2(stdin, 0)
        os.close(stdin)
        if log is not None:
            out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.dup2(out, 2)
            os.close(out)
        os.dup2(2, 1)  # never the launcher's report pipe
        code = run()
    except SystemExit as exc:
        code = exc.code
    except BaseException:  # said in the child's log, as `airflow` would
        traceback.print_exc()
    exit_without_teardown(code)


def main(spec: dict[str, Any]) -> int:
    """The launcher: Airflow imported once, the preparation forked and waited for, then each
    component forked; reports on stdout; its status the preparation's when that failed."""
    import airflow.__main__  # noqa: F401 - the import every forked child shares
    import setproctitle
    from airflow.configuration import write_default_airflow_configuration_if_needed

    # as `airflow` does before a command: a new Airflow home's airflow.cfg written now, with
    # its generated secrets (the JWT secret the api-server and the task runners must share,
    # the Fernet key) in this process's configuration, which every child inherits; written by
    # the first child instead, the others would each make secrets of their own
    write_default_airflow_configuration_if_needed()

    from app.runtime.airflow_batch import run, run_one

    report = sys.stdout
    if spec["prepare"]:
        _, status = os.waitpid(_fork(lambda: run(spec["prepare"]), None, False), 0)
        code = os.waitstatus_to_exitcode(status)
        if code:
            return code
    os.environ.update(spec["component_env"])
    names: dict[int, str] = {}
    for name, (args, log) in spec["components"].items():

        def component(name: str = name, args: list[str] = args) -> int:
            setproctitle.setproctitle(f"airflow {name}")
            return run_one(args)

        names[_fork(component, log, True)] = name
    _say(report, {"started": {name: pid for pid, name in names.items()}})
    while names:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        if pid in names:
            _say(report, {"exited": names.pop(pid), "code": os.waitstatus_to_exitcode(status)})
    return 0


if __name__ == "__main__":
    from app.runtime.airflow_batch import exit_without_teardown

    exit_without_teardown(main(json.loads(sys.argv[1])))
