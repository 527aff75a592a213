"""Each alert reaches the webhook the test starts: a failed DAG run (Airflow's callback), a
stalled crawl, a crawl stopping on a full disk, a data folder's disk filling, index lag and a
fixity failure (the rules of the metrics service)."""

from __future__ import annotations

import json
import os
import socketserver
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from app.runtime.monitor_service import stage_probes
from harvestflow import settings as settings_mod
from harvestflow.monitoring.config import MonitorConfig
from harvestflow.monitoring.exporter import MetricsService
from harvestflow.monitoring.probes import disk_probe
from tests.support.crawl import REPO, run_crawl
from tests.support.monitoring import Webhook, matching, scrape
from tests.support.platform_site import SlowSite, slow_job
from tests.support.runstates import DagTests


def service(probes: dict[str, Any] | None = None) -> MetricsService:
    svc = MetricsService(MonitorConfig.from_settings(), probes or {})
    svc.start()
    return svc


def test_a_stalled_crawl_raises_its_alert_at_the_webhook(
    webhook: Webhook, monitor_ports: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A crawl whose next page never comes: no URL done for stalled_crawl_minutes (here 3 s)
    while its crawler still reports running -> one ``stalled_crawl`` alert naming the job."""
    monkeypatch.setenv("HARVESTFLOW_MONITORING__STALLED_CRAWL_MINUTES", "0.05")
    monkeypatch.setenv("HARVESTFLOW_MONITORING__CHECK_INTERVAL_S", "0.5")
    settings_mod.reset()
    site = SlowSite(2, page_s=40)
    svc = service()
    job = slow_job(site, 61, {"download_timeout_s": 60})
    job_path = tmp_path / "job.json"
    job_path.write_text(json.dumps(job))
    out = tmp_path / "out"
    crawler = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "crawler",
            "--job",
            str(job_path),
            "--out",
            str(out),
            "--progress-interval",
            "0.5",
        ],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        alert = webhook.wait_for("stalled_crawl", timeout=90)
        assert alert["detail"]["job_id"] == 61
        assert alert["detail"]["urls_done"] >= 1  # the seed; then a page that never comes
        assert "crawl job 61: no URL done" in alert["text"]
        running = matching(scrape(svc.url), "harvestflow_crawl_running", job="61")
        assert running == 1
    finally:
        crawler.kill()  # a graceful stop would wait for the page in flight
        crawler.wait(timeout=30)
        svc.stop()
        site.stop()


def test_a_full_disk_stops_the_crawl_dormant_and_raises_its_alert(
    webhook: Webhook, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Below [crawler] min_free_disk_mb (here more than any disk has) the crawl takes no URL,
    ends ``unfinished`` (resumable) and the webhook hears ``crawl_disk_full`` once."""
    monkeypatch.setenv("HARVESTFLOW_CRAWLER__MIN_FREE_DISK_MB", str(10**12))
    site = SlowSite(3, page_s=0)
    try:
        result = run_crawl(slow_job(site, 62), tmp_path / "out", check=False)
    finally:
        site.stop()
    assert result.proc.returncode == 3, result.proc.stderr[-2000:]
    assert result.summary["status"] == "unfinished"
    assert site.requests() == []  # not one fetch started
    alert = webhook.wait_for("crawl_disk_full", timeout=5)
    assert alert["detail"]["job_id"] == 62
    assert "dormant, resumable" in alert["text"]
    assert [b["kind"] for b in webhook.bodies] == ["crawl_disk_full"]


@pytest.fixture()
def small_disk(tmp_path: Path) -> Any:
    """An 8 MB tmpfs (we run as root), unmounted after the test."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mnt)], check=True)
    yield mnt
    subprocess.run(["umount", str(mnt)], check=True)


def test_a_filling_data_disk_raises_disk_low_and_resolves_once_freed(
    webhook: Webhook, monitor_ports: None, small_disk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARVESTFLOW_DATA_DIR", str(small_disk))
    monkeypatch.setenv("HARVESTFLOW_INDEXING__REPOSITORY_LOCATIONS", "[]")
    settings_mod.reset()
    svc = service({"disk": disk_probe(settings_mod.get_settings())})
    try:
        assert svc.check_rules() == []
        before = matching(scrape(svc.url), "harvestflow_disk_free_bytes", folder="data_dir")
        (small_disk / "fill").write_bytes(os.urandom(8_000_000))  # over 90 % of 8 MiB
        after = matching(scrape(svc.url), "harvestflow_disk_free_bytes", folder="data_dir")
        assert before - after >= 8_000_000
        assert [a.kind for a in svc.check_rules()] == ["disk_low"]
        alert = webhook.wait_for("disk_low", timeout=5)
        assert alert["detail"]["path"] == str(small_disk)
        assert svc.check_rules() == []  # latched: no second message
        (small_disk / "fill").unlink()
        assert [a.status for a in svc.check_rules()] == ["resolved"]
        webhook.wait_for("disk_low", status="resolved", timeout=5)
    finally:
        svc.stop()


def test_index_lag_above_its_hours_raises_index_lag(
    services: settings_mod.Settings,
    db_engine: sa.Engine,
    webhook: Webhook,
    monitor_ports: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A finished job's WARCs, written two hours ago and not indexed: over index_lag_hours = 1
    -> ``index_lag``; once indexed the lag is 0 and the alert resolves."""
    from indexing.chain import ingest, pending_files, process_file
    from tests.support.chainkit import job_warcs, make_harvest, make_job, wipe_chain_dirs

    monkeypatch.setenv("HARVESTFLOW_MONITORING__INDEX_LAG_HOURS", "1")
    monkeypatch.setenv("HARVESTFLOW_INDEXING__MIN_FREE_BYTES", "0")
    settings_mod.reset()
    settings = settings_mod.get_settings()
    wipe_chain_dirs(settings.data_dir)
    hid = make_harvest(db_engine, "lag")
    _, job_dir = make_job(db_engine, settings.data_dir, hid, files=1, seed=9)
    old = time.time() - 2 * 3600
    for warc in job_warcs(job_dir):
        os.utime(warc, (old, old))
    svc = service(stage_probes(settings))
    try:
        scraped = scrape(svc.url)
        assert matching(scraped, "harvestflow_index_lag_seconds") >= 2 * 3600 - 60
        assert matching(scraped, "harvestflow_index_pending_files") == len(job_warcs(job_dir))
        assert "index_lag" in [a.kind for a in svc.check_rules()]
        webhook.wait_for("index_lag", timeout=5)
        ingest(settings)
        for name in pending_files(settings):
            process_file(name, settings)
        scraped = scrape(svc.url)
        assert matching(scraped, "harvestflow_index_pending_files") == 0
        assert matching(scraped, "harvestflow_index_lag_seconds") == 0
        svc.check_rules()
        webhook.wait_for("index_lag", status="resolved", timeout=5)
    finally:
        svc.stop()


def test_a_file_bad_in_every_copy_raises_fixity_failure(
    services: settings_mod.Settings,
    db_engine: sa.Engine,
    webhook: Webhook,
    monitor_ports: None,
) -> None:
    """An audit that recorded a file bad in every copy (preservation.records, as the audit
    does) -> ``fixity_failure``; the next clean audit resolves it."""
    from preservation import records

    settings = settings_mod.get_settings()
    svc = service(stage_probes(settings))
    try:
        for failed in (1, 0):
            with db_engine.begin() as conn:
                audit_id = records.audit_started(conn, share=1.0, period_days=365, copies=["s3"])
                counts = {
                    "files": 3,
                    "bytes": 30,
                    "good": 3 - failed,
                    "repaired": 0,
                    "failed": failed,
                }
                records.audit_progress(conn, audit_id, counts)
                records.audit_finished(conn, audit_id, "{}")
            scraped = scrape(svc.url)
            assert matching(scraped, "harvestflow_fixity_last_audit_failed_files") == failed
            sent = svc.check_rules()
            if failed:
                assert [a.kind for a in sent] == ["fixity_failure"]
                assert "bad in every copy" in webhook.wait_for("fixity_failure")["text"]
            else:
                assert [a.status for a in sent] == ["resolved"]
    finally:
        svc.stop()


def test_a_failed_dag_run_raises_its_alert_and_airflow_sends_its_own_metrics(
    services: settings_mod.Settings, webhook: Webhook, airflow_runs: DagTests
) -> None:
    """``airflow dags test`` of a run that fails (a setting its first task refuses): the DAG's
    on_failure_callback posts ``failed_run`` naming the DAG, and Airflow's own StatsD metrics
    (``[metrics] statsd_on``, set by harvestflow) reach /metrics with their tags as labels."""
    svc = service()
    try:
        proc = airflow_runs.run("indexing_merge", HARVESTFLOW_INDEXING__CDX_FORMATS='["bogus"]')
        assert proc.returncode != 0, proc.stdout[-2000:]
        alert = webhook.wait_for("failed_run", timeout=30)
        assert alert["detail"]["dag_id"] == "indexing_merge"
        assert "DAG indexing_merge run" in alert["text"]
        scraped = scrape(svc.url)
        failed = matching(
            scraped, "airflow_ti_finish_total", dag_id="indexing_merge", state="failed"
        )
        assert failed >= 1, sorted(k for k in scraped if k.startswith("airflow_"))
    finally:
        svc.stop()


class Smtp:
    """A loopback SMTP server keeping each message it is given (EHLO, MAIL, RCPT, DATA)."""

    def __init__(self) -> None:
        self.messages: list[bytes] = []
        box = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                self.wfile.write(b"220 test ESMTP\r\n")
                body: list[bytes] | None = None
                for line in self.rfile:
                    if body is not None:
                        if line.rstrip(b"\r\n") == b".":
                            box.messages.append(b"".join(body))
                            body = None
                            self.wfile.write(b"250 queued\r\n")
                        else:
                            body.append(line)
                        continue
                    verb = line[:4].upper()
                    if verb == b"DATA":
                        body = []
                        self.wfile.write(b"354 end with .\r\n")
                    elif verb == b"QUIT":
                        self.wfile.write(b"221 bye\r\n")
                        return
                    else:
                        self.wfile.write(b"250 ok\r\n")

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_an_alert_goes_to_the_webhook_and_by_email_when_configured(
    webhook: Webhook, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harvestflow.monitoring.alerts import Alert, send

    smtp = Smtp()
    try:
        monkeypatch.setenv("HARVESTFLOW_MONITORING__SMTP_HOST", "127.0.0.1")
        monkeypatch.setenv("HARVESTFLOW_MONITORING__SMTP_PORT", str(smtp.port))
        monkeypatch.setenv("HARVESTFLOW_MONITORING__EMAIL_TO", '["ops@example.org"]')
        settings_mod.reset()
        assert send(Alert("index_lag", "a WARC has waited 7.0 h", {"lag_s": 25200}))
    finally:
        smtp.stop()
    assert webhook.wait_for("index_lag", timeout=5)["detail"] == {"lag_s": 25200}
    [message] = smtp.messages
    assert b"Subject: [harvestflow ALERT] a WARC has waited 7.0 h" in message
    assert b"To: ops@example.org" in message


def test_an_alert_that_cannot_be_delivered_is_logged_and_never_raised(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from harvestflow.monitoring.alerts import Alert, send
    from tests.support.environment import free_port

    url = f"http://127.0.0.1:{free_port()}/nobody"
    monkeypatch.setenv("HARVESTFLOW_MONITORING__WEBHOOK_URL", url)
    settings_mod.reset()
    assert send(Alert("disk_low", "/data: 3 % free")) is False
    assert f"alert disk_low not delivered to {url}" in caplog.text
    settings_mod.reset()
