"""The DNS benchmark's names and server: N domains and the class each must get, served by Knot.

Why generated: the expected class of every name must be known (mostly existing, a tenth
NXDOMAIN, some CNAME chains, AAAA-only and no-address names, a few "slow" ones whose zone only
answers over TCP: knot's mod-noudp sends a truncated reply over UDP). ``bench/run preload``
(spec.py) runs the check and its peer on them. Needs the Debian packages knot and dnsperf
(apt-get install knot dnsperf).
"""

from __future__ import annotations

import random
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

ZONE = "bench"
SLOW_ZONE = "slowbench"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.bind(("127.0.0.1", 0))
        return int(udp.getsockname()[1])


def generate(workdir: Path, n: int, seed: int = 5) -> dict[str, str]:
    """Zone files and the expected class of each queried domain."""
    rnd = random.Random(seed)
    expected: dict[str, str] = {}
    lines = [
        f"$ORIGIN {ZONE}.",
        "$TTL 3600",
        f"@ SOA ns.{ZONE}. admin.{ZONE}. 1 3600 600 86400 60",
        f"@ NS ns.{ZONE}.",
        "ns A 127.0.0.1",
    ]
    slow_lines = [
        f"$ORIGIN {SLOW_ZONE}.",
        "$TTL 3600",
        f"@ SOA ns.{ZONE}. admin.{ZONE}. 1 3600 600 86400 60",
        f"@ NS ns.{ZONE}.",
    ]
    n_slow = max(5, n // 20000)
    for i in range(n - n_slow):
        name = f"d{i:07d}"
        roll = rnd.random()
        if roll < 0.10:
            expected[f"{name}.{ZONE}"] = "failed"  # NXDOMAIN: not in the zone
        elif roll < 0.12:
            lines.append(f'{name} TXT "no address"')
            expected[f"{name}.{ZONE}"] = "failed"
        elif roll < 0.14:
            lines.append(f"{name} AAAA 2001:db8::{i % 65536:x}")
            expected[f"{name}.{ZONE}"] = "active"
        elif roll < 0.17:
            lines.append(f"{name} CNAME t{name}")
            lines.append(f"t{name} A 10.{i % 256}.{(i >> 8) % 256}.1")
            expected[f"{name}.{ZONE}"] = "active"
        else:
            lines.append(f"{name} A 10.{i % 256}.{(i >> 8) % 256}.{(i >> 16) % 256}")
            expected[f"{name}.{ZONE}"] = "active"
    for i in range(n_slow):
        slow_lines.append(f"s{i} A 10.255.0.{i % 256}")
        expected[f"s{i}.{SLOW_ZONE}"] = "active"
    (workdir / f"{ZONE}.zone").write_text("\n".join(lines) + "\n")
    (workdir / f"{SLOW_ZONE}.zone").write_text("\n".join(slow_lines) + "\n")
    names = list(expected)
    rnd.shuffle(names)
    (workdir / "domains.txt").write_text("\n".join(names) + "\n")
    (workdir / "queries.txt").write_text("".join(f"{d} A\n" for d in names))
    return expected


def start_knot(workdir: Path, port: int) -> subprocess.Popen[bytes]:
    conf = workdir / "knot.conf"
    conf.write_text(
        f"""server:
    listen: 127.0.0.1@{port}
    rundir: {workdir}
    udp-workers: 2
    tcp-workers: 2
database:
    storage: {workdir}
log:
  - target: stderr
    any: warning
template:
  - id: default
    storage: {workdir}
    semantic-checks: off
    journal-content: none
    zonefile-sync: -1
zone:
  - domain: {ZONE}
    file: {ZONE}.zone
  - domain: {SLOW_ZONE}
    file: {SLOW_ZONE}.zone
    module: mod-noudp
"""
    )
    proc = subprocess.Popen(["knotd", "-c", str(conf)], stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    import dns.message
    import dns.query

    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("knotd exited: " + proc.stderr.read().decode()[-2000:])  # type: ignore[union-attr]
        try:
            q = dns.message.make_query(f"ns.{ZONE}.", "A")
            r = dns.query.udp(q, "127.0.0.1", port=port, timeout=0.5)
            if r.answer:
                return proc
        except Exception:
            pass
        time.sleep(0.5)
    proc.kill()
    raise RuntimeError("knotd did not load the zone in time")
