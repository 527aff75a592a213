"""A crawl slot's crawler in bench/scale/simulate.py: the fetch loop with its host leases.

Why a process of its own (``--crawler process``, the default): on the platform a crawl task
prepares its job, runs the crawler as a child process (``python -m crawler``: one process, one
event loop, per crawl slot) and records the results once it has ended; the crawler takes and gives
back the host leases, the task does the bookkeeping. When the simulation ran the fetch loop in the
Celery task's thread (``--crawler thread``, 25 slots per process), a lease's reply waited for the
interpreter lock held by the other slots' prepare_job/record_job_results (Python, ~1 s per job),
a wait no crawler has. Here each slot keeps one such process for all its jobs (the start-up of a
process per job is not what is measured) and the fetches stay sleeps.

The leases are called as crawler.leases' middleware calls them: on a thread of a pool
(``deferToThread``), awaited by the loop's thread, the hop there and back in the figure; each
call's latency is taken on the loop's side (what the crawler waits), with the CPU time of the
thread that made it.

Protocol: one JSON request per line on stdin (a job), one JSON answer per line on stdout.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def _timed(fn: Callable[..., Any], *args: Any) -> tuple[Any, float]:
    c = time.thread_time()
    result = fn(*args)
    return result, time.thread_time() - c


def crawl(
    leases: Any,
    hosts: list[str],
    fetch_s: float,
    delay_s: float,
    hop: ThreadPoolExecutor | None = None,
    beat: Callable[[], None] = lambda: None,
) -> dict[str, Any]:
    """One job's fetch loop: per host, take its lease (asking again after the wait it says),
    a fetch (a sleep of ``fetch_s``), give it back with ``delay_s``; ``beat`` after each fetch.
    Returns each call's latency and CPU (ms), the waits for a held host and the loop's span."""
    takes: list[float] = []
    cpu: list[float] = []

    def call(fn: Callable[..., Any], *args: Any) -> Any:
        t = time.monotonic()
        result, c = _timed(fn, *args) if hop is None else hop.submit(_timed, fn, *args).result()
        takes.append(round(1000 * (time.monotonic() - t), 3))
        cpu.append(round(1000 * c, 3))
        return result

    waits = 0
    start = time.time()
    for host in hosts:
        while (wait := call(leases.try_take, host)) != 0.0:
            waits += 1
            time.sleep(wait)
        time.sleep(fetch_s)  # the fetch
        call(leases.give_back, host, delay_s)
        beat()
    return {
        "takes": takes,
        "cpu": cpu,
        "waits": waits,
        "lease_start": start,
        "lease_end": time.time(),
    }


def _leases(req: dict[str, Any], engines: dict[str, Any]) -> Any:
    """The job's lease client: in the broker, a connection of its own (as a crawler has); in
    PostgreSQL, one pooled connection kept by this process."""
    if req["store"] == "broker":
        from crawler.broker_leases import BrokerHostLeases

        return BrokerHostLeases.from_url(
            req["url"], req["holder"], 30.0, poll_s=req["poll_s"], grace_s=req["grace_s"]
        )
    import sqlalchemy as sa

    from crawler.lease_tables import HostLeases

    if "pg" not in engines:
        engines["pg"] = sa.create_engine(req["url"], pool_size=1, max_overflow=0)
    return HostLeases(engines["pg"], req["holder"], 30.0)


def main() -> int:
    sys.path.insert(0, str(REPO))
    hop = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lease")
    engines: dict[str, Any] = {}
    for line in sys.stdin:
        req = json.loads(line)
        leases = _leases(req, engines)
        try:
            answer = crawl(leases, req["hosts"], req["fetch_s"], req["delay_s"], hop)
        except Exception as exc:  # the task records it as the job's failure
            answer = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"}
        finally:
            if req["store"] == "broker":
                leases.close()
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
