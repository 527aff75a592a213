"""``AirflowProcesses.stop``: what ``harvestflow up`` started is stopped on Ctrl-C, including
the processes Airflow's task supervisor puts in process groups of their own (a running task and
the crawler it launched)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import psutil

from app.runtime.airflow_runtime import AirflowProcesses
from harvestflow.settings import Settings, get_settings

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


def test_more_simple_auth_manager_users_get_a_role_and_a_password(tmp_path: Path) -> None:
    import json

    import pytest

    from app.runtime.airflow_config import airflow_env
    from app.runtime.airflow_logins import ensure_login, password_file
    from harvestflow.settings import load

    env = {
        "HARVESTFLOW_DATA_DIR": str(tmp_path),
        "HARVESTFLOW_AIRFLOW__USERS": '["carol:USER", "victor:viewer"]',
    }
    settings = load(environ=env)
    users = airflow_env(settings, base={})["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS"]
    assert users == "admin:admin,carol:user,victor:viewer"
    admin, password = ensure_login(settings)
    passwords = json.loads(password_file(settings).read_text())
    assert admin == "admin" and passwords["admin"] == password
    assert set(passwords) == {"admin", "carol", "victor"}
    assert ensure_login(settings) == (admin, password)  # kept across runs
    bad = load(environ={**env, "HARVESTFLOW_AIRFLOW__USERS": '["mallory:root"]'})
    with pytest.raises(ValueError, match=r"'mallory:root' is not name:ROLE"):
        airflow_env(bad, base={})


def test_dags_run_once_parsed_unless_the_operator_starts_them_paused(tmp_path: Path) -> None:
    """Our DAGs are not paused at creation, unless the environment says so itself (the tests'
    platforms: only the DAGs a test uses run, not every schedule's first run)."""
    from app.runtime.airflow_config import airflow_env
    from harvestflow.settings import load

    settings = load(environ={"HARVESTFLOW_DATA_DIR": str(tmp_path)})
    key = "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION"
    assert airflow_env(settings, base={})[key] == "False"
    assert airflow_env(settings, base={key: "True"})[key] == "True"


def test_an_unchanged_dag_file_is_parsed_again_every_ten_minutes_unless_the_operator_says(
    tmp_path: Path,
) -> None:
    from app.runtime.airflow_config import airflow_env
    from harvestflow.settings import load

    settings = load(environ={"HARVESTFLOW_DATA_DIR": str(tmp_path)})
    key = "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL"
    env = airflow_env(settings, base={})
    assert env[key] == "600"
    assert env["AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL"] == "30"  # a changed file: soon
    assert airflow_env(settings, base={key: "30"})[key] == "30"


def test_up_starts_the_triggerer_only_when_the_settings_ask_for_it(tmp_path: Path) -> None:
    """Airflow's triggerer runs deferred tasks only, and no DAG of ours defers one
    (tests/dags/test_dag_integrity.py): ``up`` starts the other three components unless
    ``[airflow] triggerer = true``, and ``services status`` says why it is not running."""
    import re

    import pytest

    from app.runtime.airflow_runtime import components
    from harvestflow.services import airflow_status
    from harvestflow.settings import SettingsError, load
    from tests.support.environment import free_port

    env = {"HARVESTFLOW_DATA_DIR": str(tmp_path), "HARVESTFLOW_AIRFLOW__PORT": str(free_port())}
    default = load(environ=env)
    assert list(components(default)) == ["api-server", "scheduler", "dag-processor"]
    asked = load(environ={**env, "HARVESTFLOW_AIRFLOW__TRIGGERER": "true"})
    assert components(asked)["triggerer"] == ("--skip-serve-logs",)
    with pytest.raises(SettingsError, match=r"\[airflow\] triggerer = 'yes': expected true"):
        components(load(environ={**env, "HARVESTFLOW_AIRFLOW__TRIGGERER": "yes"}))
    # no api-server answers on the port: the components it would report are stopped, the
    # triggerer is off by the settings (not "stopped": nothing is wrong)
    lines = {s.name: s.line() for s in airflow_status(default)}
    assert re.match(
        r"triggerer +embedded +off +not run: \[airflow\] triggerer = false", lines["triggerer"]
    )
    assert re.match(r"scheduler +embedded +stopped ", lines["scheduler"])
    asked_lines = {s.name: s.line() for s in airflow_status(asked)}
    assert re.match(r"triggerer +embedded +stopped +last heartbeat -", asked_lines["triggerer"])


def test_a_batch_runs_its_airflow_commands_in_order_and_names_the_one_that_failed(
    tmp_path: Path,
) -> None:
    """``run_airflow_batch``: Airflow's own CLI runs each command (their output in order, with
    harvestflow's Airflow environment); a command that fails is named by the RuntimeError,
    with Airflow's message."""
    import pytest

    from app.runtime.airflow_commands import run_airflow_batch
    from harvestflow.settings import load

    settings = load(environ={"HARVESTFLOW_DATA_DIR": str(tmp_path)})
    first, second = ["config", "get-value", "core", "parallelism"], ["version"]
    done = run_airflow_batch(settings, first, second)
    lines = done.stdout.split()
    assert lines[0] == "8"  # AIRFLOW__CORE__PARALLELISM of airflow_env
    assert lines[1].startswith("3.")
    with pytest.raises(RuntimeError) as failed:
        # no file named: Airflow's parser refuses the command before it needs the metadata DB
        run_airflow_batch(settings, first, ["pools", "import"], ["version"])
    message = str(failed.value)
    assert message.startswith("`airflow pools import` failed: ")
    assert "the following arguments are required" in message


def test_prepare_leaves_each_crawl_pool_with_its_slots(airflow_ready: Settings) -> None:
    """The pools of ``[airflow]`` are in Airflow's metadata DB (the ``pools import`` that
    ``prepare`` runs after ``db migrate``, in the same process), with their slots."""
    import sqlalchemy as sa

    from app.runtime.airflow_commands import pools

    engine = sa.create_engine(airflow_ready.airflow_db_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.text("SELECT pool, slots FROM slot_pool")).all()
    finally:
        engine.dispose()
    wanted = pools(airflow_ready)
    assert {name: slots for name, slots in rows if name in wanted} == wanted
    assert wanted == {"crawl_high": 2, "crawl_low": 1, "crawl_continuous": 1}


# a program ending through exit_without_teardown (argv[1]: the code), or sys.exit ("normal")
ENDING = """
import atexit, sys, threading, time
from app.runtime.airflow_batch import exit_without_teardown

class Kept:
    def __del__(self):
        print("freed by the teardown", flush=True)

kept = Kept()
atexit.register(lambda: print("atexit callback", flush=True))
threading.Thread(target=lambda: (time.sleep(0.3), print("thread done", flush=True))).start()
print("written, not flushed;", end="")
code = sys.argv[1]
if code == "normal":
    sys.exit(0)
exit_without_teardown(int(code) if code.isdigit() else code)
"""


def test_an_airflow_program_ends_as_sys_exit_would_without_the_interpreters_teardown() -> None:
    """``airflow_batch``'s end (its components' too): other threads joined, ``atexit``
    callbacks run, output flushed, the status of ``sys.exit(code)``; the objects are not freed
    one by one (a normal exit frees them: the same program ending with ``sys.exit``)."""
    said = "written, not flushed;thread done\natexit callback\n"
    for code, status in (("0", 0), ("3", 3), ("refused", 1)):
        done = subprocess.run(
            [sys.executable, "-c", ENDING, code], capture_output=True, text=True, timeout=60
        )
        assert (done.returncode, done.stdout) == (status, said), done.stderr
        assert done.stderr == ("refused\n" if code == "refused" else "")
    normal = subprocess.run(
        [sys.executable, "-c", ENDING, "normal"], capture_output=True, text=True, timeout=60
    )
    assert normal.stdout == said + "freed by the teardown\n", normal.stderr


def test_up_is_told_how_each_ended_component_ended(tmp_path: Path) -> None:
    """``AirflowProcesses.ended`` (what ``up`` prints when a component stops): the exit status,
    the signal that killed it, or that it is unknown when its launcher ended before reporting
    it; a running component is not listed."""
    import signal

    from app.runtime.airflow_launch import Component

    failed = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    killed = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    launcher = subprocess.Popen([sys.executable, "-c", "pass"], text=True)
    orphan = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        killed.send_signal(signal.SIGKILL)
        for proc in (failed, killed, launcher, orphan):
            proc.wait(60)
        procs = AirflowProcesses(
            get_settings(),
            procs={
                "scheduler": failed,
                "dag-processor": killed,
                "api-server": running,
                # forked by a launcher that is gone, and gone itself: no one reported its end
                "triggerer": Component("triggerer", orphan.pid, launcher),
            },
        )
        assert procs.ended() == {
            "scheduler": "exit status 3",
            "dag-processor": "killed by SIGKILL",
            "triggerer": "exit status unknown: its launcher ended before it",
        }
    finally:
        running.kill()
        running.wait()
