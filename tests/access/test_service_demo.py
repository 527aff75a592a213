"""After ``harvestflow demo`` (the session's shared run), ``harvestflow access serve`` replays the
sample site's seed page with every embed from the archive (the sample site is stopped once the
demo ends), and in headless Chromium pywb's banner states the capture's date and time (and
ours the collection and the harvest definition and job) and the calendar lists the captures."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from harvestflow.services.postgres import port_open
from tests.support.browser import chromium
from tests.support.demo_fixture import DemoPlatform
from tests.support.platform_cli import HARVESTFLOW
from tests.support.replay import cdx, embedded, get

pytestmark = [pytest.mark.airflow, pytest.mark.slow]


@pytest.fixture
def replay(demo_platform: DemoPlatform, replay_venv: Path) -> Iterator[str]:
    """``harvestflow access serve`` on the demo's data dir; yields its base URL."""
    demo_platform.check()
    # the demo's indexing_merge built the ZipNum (its refresh_access task), before any serve
    state = json.loads((demo_platform.data / "access/zipnum/all/all.state.json").read_text())
    assert state["lines"] > 12 and state["inputs"]["main"]["signature"]
    proc = subprocess.Popen(
        [HARVESTFLOW, "access", "serve"],
        env=demo_platform.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None
    base = ""
    try:
        deadline = time.monotonic() + 180
        for line in proc.stdout:
            if m := re.search(r"replay: (http://\S+)all/", line):
                base = m.group(1)
                break
            assert time.monotonic() < deadline, "no replay line"
        assert base, "access serve exited before serving"
        yield base
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(60)
    assert proc.returncode == 0
    assert not port_open("127.0.0.1", int(base.rsplit(":", 1)[1].strip("/")))


def sha1_b32(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()


def test_demo_seed_page_replays_with_banner_and_calendar(
    demo_platform: DemoPlatform, replay: str
) -> None:
    port = demo_platform.env["HARVESTFLOW_SAMPLESITE__PORT"]
    seed = f"http://www.example-a.test:{port}/"
    assert not port_open("127.0.0.1", int(port))  # the sample site is gone: archive only
    captures = cdx(replay, "all", seed)
    assert captures, f"{seed} not in the replay index"
    ts = captures[-1]["timestamp"]

    logs = list(demo_platform.data.glob("jobs/*/*/*/logs/crawl.log"))
    fields = [line.split() for log in logs for line in log.read_text().splitlines()]
    resources = embedded(fields, seed)
    assert len(resources) >= 12
    status, body = get(f"{replay}all/{ts}mp_/{seed}")
    assert status == 200 and b"<h1>" in body
    for url in resources:
        status, data = get(f"{replay}all/{ts}id_/{url}")
        assert status == 200, url
        found = cdx(replay, "all", url)
        assert sha1_b32(data) in {c["digest"] for c in found}, url  # the archived bytes

    when = datetime.strptime(ts, "%Y%m%d%H%M%S")
    with chromium() as driver:
        driver.get(f"{replay}all/{ts}/{seed}")
        wait = WebDriverWait(driver, 60)
        wait.until(lambda d: "Current Capture" in d.find_element(By.TAG_NAME, "body").text)
        banner = driver.find_element(By.TAG_NAME, "body").text
        assert f"{when.month}/{when.day}/{when.year}" in banner, banner[:500]
        assert when.strftime("%M:%S") in banner, banner[:500]
        # our line: the collection and the harvest (definition, job) of the capture
        # the capture shown is the newest in the index (a later job on this data dir may have
        # fetched the seed too): its WARC's name starts <harvest>-<job>- (crawler/warc/files.py),
        # and that job's own crawl.log (jobs/<harvest>/<job>/<ts>/logs/) lists the seed
        hid, jid = captures[-1]["filename"].split("-")[:2]
        job_logs = [log for log in logs if (log.parts[-5], log.parts[-4]) == (hid, jid)]
        assert any(f" {seed} " in log.read_text() for log in job_logs), (hid, jid)
        wait.until(lambda d: "job" in d.find_element(By.ID, "hf-capture-info").text)
        info = driver.find_element(By.ID, "hf-capture-info").text
        assert f"collection all · harvest definition {hid}, job {jid}" in info, info
        driver.get(f"{replay}all/*/{seed}")
        wait.until(lambda d: "All-time (" in d.find_element(By.TAG_NAME, "body").text)
        calendar = driver.find_element(By.TAG_NAME, "body").text
        n = len(captures)
        assert f"All-time ({n} capture{'s' if n > 1 else ''})" in calendar, calendar[:300]
        assert str(when.year) in calendar
