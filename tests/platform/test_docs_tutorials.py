"""The manual's first tutorial works: its commands, run in order as a reader would run them,
take a crawl feed to a replayed page on the sample site.

Why run it: a tutorial is the first page a new engineer follows to the letter, and a renamed
option or a changed output breaks it without any other test noticing. The commands are the
fenced blocks the page marks with ``<!-- tutorial-step -->``, run as one bash script (the
background processes it starts, ``&``, and its ``kill %1`` need one shell) in a fresh data
directory with this session's ports: the page's default ports (8099 for the sample site, 8090
for replay) are replaced by the session's, nothing else is changed.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

from harvestflow.settings import PROJECT_ROOT
from tests.support.platform_cli import HARVESTFLOW, isolated_env

TUTORIAL = PROJECT_ROOT / "docs" / "tutorials" / "first-selective-harvest.md"
MARKER = "<!-- tutorial-step -->"


def tutorial_steps(markdown: str) -> list[str]:
    """The bodies of the fenced blocks that follow a tutorial-step marker, in page order."""
    steps = re.findall(re.escape(MARKER) + r"\s*\n```[a-z]*\n(.*?)\n```", markdown, flags=re.DOTALL)
    assert len(steps) == markdown.count(MARKER), "a marker without a fenced block under it"
    return steps


def test_the_tutorial_marks_its_commands() -> None:
    steps = tutorial_steps(TUTORIAL.read_text())
    assert steps[0].startswith("harvestflow services start")
    assert any("selection import feed.json" in s for s in steps)
    assert "access serve" in steps[-2] and "services stop" in steps[-1]


def test_first_selective_harvest_tutorial_runs_from_feed_to_replay(tmp_path: Path) -> None:
    env = isolated_env(tmp_path / "var")
    site_port = env["HARVESTFLOW_SAMPLESITE__PORT"]
    replay_port = str(urlsplit(env["HARVESTFLOW_ACCESS__URL"]).port)
    script = ["set -euo pipefail"]
    for number, step in enumerate(tutorial_steps(TUTORIAL.read_text()), 1):
        step = step.replace(":8099", f":{site_port}").replace(":8090", f":{replay_port}")
        script += [f"echo '### tutorial step {number}'", step]
    proc = subprocess.Popen(
        ["bash", "-c", "\n".join(script)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        subprocess.run([HARVESTFLOW, "services", "stop"], env=env, capture_output=True, timeout=240)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)  # a background server the script left behind
    assert proc.returncode == 0, out[-6000:]
    assert "1 new" in out  # the feed's target imported
    assert '"tutorial-daily"' in out  # and made a definition
    assert "<title>Example A — front page</title>" in out  # replayed from the archive
    assert (tmp_path / "replayed.html").exists()
