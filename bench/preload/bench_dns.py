"""Benchmark: harvestflow's DNS check against dnsperf on the same queries.

Generates N domains (mostly existing, a tenth NXDOMAIN, some CNAME chains, AAAA-only and
no-address names, a few "slow" ones whose zone only answers over TCP: knot's mod-noudp sends a
truncated reply over UDP), serves them from Knot DNS on a loopback port, then measures

- dnsperf sending one A query per domain (the server's ceiling on this machine);
- harvestflow's DNS check (``harvestflow preload check-dns``, worker processes, results file)
  on the same domains,

and prints domains/s of both, their ratio, the share of domains classified correctly and the
peak RSS of the checker. Run:  .venv/bin/python bench/preload/bench_dns.py [--domains 1000000]
Needs the Debian packages knot and dnsperf (apt-get install knot dnsperf).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
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


def run_dnsperf(workdir: Path, port: int, outstanding: int) -> float:
    out = subprocess.run(
        [
            "dnsperf",
            "-s",
            "127.0.0.1",
            "-p",
            str(port),
            "-d",
            str(workdir / "queries.txt"),
            "-n",
            "1",
            "-c",
            "4",
            "-T",
            "2",
            "-q",
            str(outstanding),
            "-t",
            "2",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    match = re.search(r"Queries per second:\s+([\d.]+)", out)
    if not match:
        raise RuntimeError("dnsperf output not understood:\n" + out)
    lost = re.search(r"Queries lost:\s+(\d+)", out)
    print(f"dnsperf: {match.group(1)} queries/s, lost {lost.group(1) if lost else '?'}")
    return float(match.group(1))


def udp_errors() -> dict[str, int]:
    """Kernel UDP counters (drops on full socket buffers show up here)."""
    lines = [
        line.split()
        for line in Path("/proc/net/snmp").read_text().splitlines()
        if line.startswith("Udp:")
    ]
    stats = dict(zip(lines[0][1:], (int(v) for v in lines[1][1:]), strict=False))
    return {k: stats.get(k, 0) for k in ("InErrors", "RcvbufErrors", "SndbufErrors")}


def tree_rss_kib(pid: int) -> int:
    """Resident memory of a process and all its descendants (sum of VmRSS, KiB)."""
    total = 0
    todo = [pid]
    while todo:
        current = todo.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
        todo.extend(int(c) for c in children)
    return total


def run_harvestflow(
    workdir: Path, port: int, expected: dict[str, str], processes: int, in_flight: int
) -> tuple[float, float, float]:
    """``harvestflow preload check-dns`` in its own process: rate, share correct, peak RSS."""
    out = workdir / "results.tsv"
    cmd = [
        sys.executable, "-c", "import sys; from app.cli.main import main; sys.exit(main())",
        "preload", "check-dns", str(workdir / "domains.txt"),
        "--nameserver", f"127.0.0.1:{port}", "-o", str(out),
        "--processes", str(processes), "--in-flight", str(in_flight),
        "--timeout", "2", "--retries", "2",
    ]  # fmt: skip
    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL)
    peak_kib = 0
    while proc.poll() is None:
        peak_kib = max(peak_kib, tree_rss_kib(proc.pid))
        time.sleep(0.2)
    elapsed = time.monotonic() - started
    if proc.returncode:
        raise RuntimeError(f"check-dns failed with exit code {proc.returncode}")
    peak_mib = peak_kib / 1024
    correct = total = 0
    wrong: list[list[str]] = []
    with out.open(encoding="utf-8") as handle:
        for line in handle:
            domain, cls, detail = line.rstrip("\n").split("\t", 2)
            total += 1
            if expected.get(domain) == cls:
                correct += 1
            elif len(wrong) < 10:
                wrong.append([domain, cls, detail])
    if wrong:
        print("misclassified (first 10):", wrong)
    if total != len(expected):
        print(f"WARNING: {total} results for {len(expected)} domains")
    return len(expected) / elapsed, correct / len(expected), peak_mib


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--domains", type=int, default=1_000_000)
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1)
    # knot's sockets keep the system default buffer (~200 KB, about two hundred queries): a
    # larger window only overflows it; both tools get the same total outstanding queries
    parser.add_argument("--in-flight", type=int, default=100)
    parser.add_argument("--dnsperf-outstanding", type=int, default=200)
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args()
    for tool in ("knotd", "dnsperf"):
        if not shutil.which(tool):
            sys.exit(f"{tool} not found: apt-get install knot dnsperf")
    workdir = Path(tempfile.mkdtemp(prefix="bench-preload-"))
    port = free_port()
    print(f"generating {args.domains} domains in {workdir}")
    expected = generate(workdir, args.domains)
    knot = start_knot(workdir, port)
    try:
        peer = run_dnsperf(workdir, port, args.dnsperf_outstanding)
        before = udp_errors()
        ours, share, peak = run_harvestflow(workdir, port, expected, args.processes, args.in_flight)
        after = udp_errors()
        print(
            "kernel UDP drops during harvestflow's run (all processes of the machine):",
            {k: after[k] - before[k] for k in after},
        )
    finally:
        knot.terminate()
        knot.wait(timeout=30)
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    print(
        f"harvestflow: {ours:,.0f} domains/s ({args.processes} processes, "
        f"{args.in_flight} in flight each)"
    )
    print(f"dnsperf:     {peer:,.0f} queries/s (one A query per domain)")
    print(f"ratio harvestflow/dnsperf: {ours / peer:.2f}")
    print(f"classified correctly: {100 * share:.3f}%")
    print(f"peak RSS of check-dns (sum over its processes, sampled every 0.2 s): {peak:.0f} MiB")


if __name__ == "__main__":
    main()
