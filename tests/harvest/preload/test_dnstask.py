"""The DNS-check task: results stored with their time, a killed run resumes without loss."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import sqlalchemy as sa

from harvest.preload.dnstask import dns_check_chunk
from tests.support.dnsserver import ZoneServer


def _rows(engine: sa.Engine, run_id: str) -> dict[str, tuple[str, str]]:
    with engine.connect() as conn:
        return {
            d: (c, x)
            for d, c, x in conn.execute(
                sa.text("SELECT domain, class, detail FROM dns_checks WHERE run_id = :r"),
                {"r": run_id},
            )
        }


def test_chunk_results_are_stored_and_a_rerun_asks_nothing_again(
    db_engine: sa.Engine, preload_settings, run_id: str, zone_server: ZoneServer, tmp_path: Path
) -> None:
    chunk = tmp_path / "chunk-00000.txt"
    chunk.write_text("exists.test\nnothere.test\nnoaddr.test\nservfail.test\nalias.test\n")
    first = dns_check_chunk(
        run_id, str(chunk), [zone_server.address], settings=preload_settings, engine=db_engine
    )
    assert (first["active"], first["failed"], first["unknown"]) == (2, 2, 1)
    rows = _rows(db_engine, run_id)
    assert rows["exists.test"][0] == "active" and rows["nothere.test"] == ("failed", "NXDOMAIN")
    assert rows["servfail.test"][0] == "unknown"
    with db_engine.connect() as conn:
        stamped = conn.execute(
            sa.text(
                "SELECT count(*) FROM dns_checks WHERE run_id = :r AND checked_at > now() - interval '1 hour'"
            ),
            {"r": run_id},
        ).scalar()
    assert stamped == 5
    asked = zone_server.queries.total()
    second = dns_check_chunk(
        run_id, str(chunk), [zone_server.address], settings=preload_settings, engine=db_engine
    )
    assert (second["skipped"], second["checked"]) == (5, 0)
    assert zone_server.queries.total() == asked


def test_killed_mid_check_then_rerun_loses_and_repeats_nothing(
    db_engine: sa.Engine, services, run_id: str, zone_server: ZoneServer, tmp_path: Path
) -> None:
    names = [f"n{i:04d}.test" for i in range(1500)]
    chunk = tmp_path / "chunk-00000.txt"
    chunk.write_text("\n".join(names) + "\n")
    zone_server.delay_s = 0.002  # ~3 s for the whole chunk
    env = dict(os.environ, HARVESTFLOW_PRELOAD__DNS_COMMIT_EVERY="100")
    code = (
        "import sys; from harvest.preload.dnstask import dns_check_chunk;"
        "dns_check_chunk(sys.argv[1], sys.argv[2], [sys.argv[3]])"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, run_id, str(chunk), zone_server.address], env=env
    )
    deadline = time.monotonic() + 60
    while len(_rows(db_engine, run_id)) < 300 and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = _rows(db_engine, run_id)
    assert 300 <= len(before) < len(names), "the kill must land mid-check"
    zone_server.delay_s = 0.0
    result = dns_check_chunk(run_id, str(chunk), [zone_server.address], engine=db_engine)
    after = _rows(db_engine, run_id)
    assert sorted(after) == names  # nothing lost
    assert result["skipped"] == len(before) and result["checked"] == len(names) - len(before)
    # names stored before the kill were not asked again by the re-run
    assert all(zone_server.queries[(name, "A")] == 1 for name in before)
    assert all(after[name] == before[name] for name in before)
