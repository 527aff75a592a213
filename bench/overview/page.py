"""Our side of ``bench/run overview``: the curator overview as a curator's browser asks for it.

Serves the curator app (the one Airflow's api-server mounts) with uvicorn on loopback, asks for
``/`` N times over HTTP, one after the other, and writes each answer's time (``latency.json``)
and the figures the page shows (``stdout``: the attention panels' counts and the next harvests)
for the runner to compare with psql's.
"""

from __future__ import annotations

import argparse
import http.client
import json
import re
import socket
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

from fastapi import Request

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

_COUNT = {
    "failed_jobs": re.compile(r'id="failed-jobs">[^(]*\(([\d,\u202f ]+)\)'),
    "running": re.compile(r'id="running">[^(]*\(([\d,\u202f ]+)\)'),
}
_NEXT = re.compile(r'<section id="next-harvests">(.*?)</section>', re.S)
_NAME = re.compile(r'jobs\?harvest_id=\d+">([^<]+)</a>')


def figures(page: str) -> dict[str, Any]:
    """The counts and next harvests a curator reads on the overview."""
    out: dict[str, Any] = {}
    for key, pattern in _COUNT.items():
        found = pattern.search(page)
        out[key] = int(re.sub(r"\D", "", found.group(1))) if found else None
    section = _NEXT.search(page)
    out["next_harvests"] = _NAME.findall(section.group(1)) if section else None
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    import uvicorn

    from app.curator.actions import Role
    from app.curator.webapp import create_app
    from harvestflow import db
    from harvestflow.settings import get_settings

    settings = get_settings()
    engine = db.get_engine(settings.harvest_db_url)

    def viewer(request: Request) -> None:  # Airflow's login, as the plugin gives it
        request.state.user = "bench"
        request.state.role = Role.VIEWER

    app = create_app(lambda: engine, data_dir=settings.data_dir, auth=viewer)
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    times: list[float] = []
    page = ""
    try:
        for n in range(args.requests + 1):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            start = time.perf_counter()
            conn.request("GET", "/")
            resp = conn.getresponse()
            body = resp.read()
            elapsed = time.perf_counter() - start
            conn.close()
            if resp.status != 200:
                print(f"overview answered {resp.status}: {body[:300]!r}", file=sys.stderr)
                return 1
            if n:  # the first answer warms the app (templates compiled, pool opened)
                times.append(elapsed)
            page = body.decode()
    finally:
        server.should_exit = True
        thread.join(10)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "latency.json").write_text(
        json.dumps({"ms": [t * 1000 for t in times], "ms_median": statistics.median(times) * 1000})
    )
    print(json.dumps(figures(page), sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
