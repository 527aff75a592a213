"""A StatsD receiver on loopback: Airflow's metrics and the crawlers' gauges, kept for /metrics.

Why our own (as Prometheus' statsd_exporter does): Airflow sends StatsD (``[metrics]
statsd_on``, set by ``harvestflow up``) with InfluxDB-style tags (``name,dag_id=x:1|c``), and a
crawler sends its progress the same way; UDP costs the sender nothing and never blocks it. Names
become Prometheus names (``airflow.ti.finish`` -> ``airflow_ti_finish``), tags labels. Counters
add up, gauges keep the last value (``+n``/``-n`` move it), timers become a summary (count, sum
in seconds). Gauges not updated for ``gauge_ttl_s`` are dropped (a crawl that ended); at most
``MAX_SERIES`` series are kept, the rest are counted as dropped.
"""

from __future__ import annotations

import logging
import re
import socket
import threading
import time
from dataclasses import dataclass

log = logging.getLogger(__name__)

MAX_SERIES = 20_000
MAX_DATAGRAM = 65_535
_NAME_BAD = re.compile(r"[^a-zA-Z0-9_:]")
_LABEL_BAD = re.compile(r"[^a-zA-Z0-9_]")
Labels = tuple[tuple[str, str], ...]


@dataclass
class Series:
    """One series: its StatsD type (``c``, ``g``, ``ms``), value (or count and sum)."""

    kind: str
    value: float = 0.0
    count: int = 0
    updated: float = 0.0
    changed: float = 0.0


def prom_name(raw: str) -> str:
    name = _NAME_BAD.sub("_", raw.strip())
    return f"_{name}" if name[:1].isdigit() else name


def parse_line(line: str) -> tuple[str, Labels, str, float, bool] | None:
    """(name, labels, type, value, is_delta) of one StatsD line, or None when malformed."""
    metric, sep, rest = line.partition(":")
    if not sep or not metric:
        return None
    fields = rest.split("|")
    if len(fields) < 2:
        return None
    raw_value, kind = fields[0].strip(), fields[1].strip()
    if kind not in ("c", "g", "ms", "h"):
        return None
    rate = 1.0
    for extra in fields[2:]:
        if extra.startswith("@"):
            try:
                rate = float(extra[1:]) or 1.0
            except ValueError:
                return None
    try:
        value = float(raw_value)
    except ValueError:
        return None
    name, *tags = metric.split(",")
    labels: list[tuple[str, str]] = []
    for tag in tags:
        key, eq, val = tag.partition("=")
        if eq and key:
            labels.append((_LABEL_BAD.sub("_", key), val))
    delta = kind == "g" and raw_value[:1] in "+-"
    if kind == "c":
        value /= rate
    return prom_name(name), tuple(sorted(labels)), "ms" if kind == "h" else kind, value, delta


class StatsdStore:
    """The series received so far; thread-safe (the receiver writes, scrapes and rules read)."""

    def __init__(self, gauge_ttl_s: float = 3600.0) -> None:
        self.gauge_ttl_s = gauge_ttl_s
        self.series: dict[tuple[str, Labels], Series] = {}
        self.kinds: dict[str, str] = {}  # a name keeps its first type (Prometheus needs one)
        self.dropped = 0
        self.lock = threading.Lock()

    def feed(self, datagram: str, now: float | None = None) -> None:
        now = time.time() if now is None else now
        with self.lock:
            for line in datagram.splitlines():
                parsed = parse_line(line)
                if parsed is None:
                    if line.strip():
                        self.dropped += 1
                    continue
                self._apply(*parsed, now)

    def _apply(
        self, name: str, labels: Labels, kind: str, value: float, delta: bool, now: float
    ) -> None:
        key = (name, labels)
        s = self.series.get(key)
        if s is None:
            if len(self.series) >= MAX_SERIES or self.kinds.setdefault(name, kind) != kind:
                self.dropped += 1
                return
            s = self.series[key] = Series(kind, changed=now)
        elif s.kind != kind:
            self.dropped += 1
            return
        before = (s.value, s.count)
        if kind == "c":
            s.value += value
        elif kind == "g":
            s.value = s.value + value if delta else value
        else:
            s.count += 1
            s.value += value / 1000.0
        s.updated = now
        if (s.value, s.count) != before:
            s.changed = now

    def snapshot(self, now: float | None = None) -> dict[tuple[str, Labels], Series]:
        """A copy of the live series, stale gauges dropped first."""
        now = time.time() if now is None else now
        with self.lock:
            stale = [
                k
                for k, s in self.series.items()
                if s.kind == "g" and now - s.updated > self.gauge_ttl_s
            ]
            for key in stale:
                del self.series[key]
            return {
                k: Series(s.kind, s.value, s.count, s.updated, s.changed)
                for k, s in self.series.items()
            }


class StatsdReceiver:
    """A UDP socket on loopback feeding a :class:`StatsdStore` from a daemon thread."""

    def __init__(self, store: StatsdStore, host: str, port: int) -> None:
        self.store = store
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((host, port))
        self.sock.settimeout(0.5)
        self.port = self.sock.getsockname()[1]
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="statsd-receiver", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                data = self.sock.recv(MAX_DATAGRAM)
            except TimeoutError:
                continue
            except OSError:
                return
            self.store.feed(data.decode("utf-8", errors="replace"))

    def stop(self) -> None:
        self._stop.set()
        if self.thread.is_alive():
            self.thread.join(timeout=2)
        self.sock.close()
