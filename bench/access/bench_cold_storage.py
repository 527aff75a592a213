"""Cold lookups on storage of a chosen latency: pywb's ZipNum reader against its flat-file
reader, where the index is not in memory.

Why: ``bench_access.py`` measures the access service on this VM's disk, which its host caches
(a read costs ~12 µs), so its "cold" lookups cost what warm ones do. Here the same index files
(a ``bench_access.py --keep DIR`` directory) are read through ``slowfs.py``, a FUSE
pass-through whose every read that misses the page cache costs ``--latencies`` µs, by
``pywb_readers.py --cold`` (pywb's own readers, in the replay venv: every lookup after all the
index files' pages were dropped). Per latency: the effective read latency measured through the
mount (random 4 KB reads), then exact and prefix lookups on both readers, p50 and storage
reads a lookup, medians of the rounds.

    .venv/bin/python bench/access/bench_cold_storage.py --keep DIR [--latencies 0,100,1000]
        [--queries 300] [--rounds 3]

Needs ``fusepy`` and libfuse 2 (``apt-get install libfuse2``, ``.venv/bin/pip install
fusepy``) and root or ``/dev/fuse`` access. Any child exiting non-zero stops the run (exit 1).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

from slowfs import read_counter  # noqa: E402  (beside this file)


def probe(path: Path, n: int = 200) -> float:
    """p50 µs of a random 4 KB read of ``path`` after its pages were dropped."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        rnd, times = random.Random(3), []
        for _ in range(n):
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            offset = rnd.randrange(max(1, size // 4096)) * 4096
            t0 = time.perf_counter()
            os.pread(fd, 4096, offset)
            times.append(time.perf_counter() - t0)
    finally:
        os.close(fd)
    return statistics.median(times) * 1e6


def readers(python: Path, data: Path, counter: Path | None, extra: list[str]) -> dict:
    cmd = [
        str(python),
        str(HERE / "pywb_readers.py"),
        str(data / "access" / "zipnum" / "all" / "all.idx"),
        str(data / "index" / "cdx" / "big.cdxj"),
        "--json",
        *extra,
    ]
    if counter:
        cmd += ["--counter", str(counter)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{' '.join(cmd)} exited {done.returncode}: {done.stderr[-2000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def mounted(latency_us: float, data: Path, work: Path) -> tuple[subprocess.Popen[bytes], Path]:
    mount, counter = work / f"mnt-{latency_us:g}", work / f"counter-{latency_us:g}"
    mount.mkdir()
    proc = subprocess.Popen(
        [
            *(sys.executable, str(HERE / "slowfs.py"), str(data), str(mount)),
            *("--latency-us", str(latency_us), "--counter", str(counter)),
        ],
        stderr=subprocess.PIPE,
    )
    for _ in range(100):
        if os.path.ismount(mount):
            return proc, counter
        if proc.poll() is not None:
            err = proc.stderr.read() if proc.stderr else b""
            raise SystemExit(f"slowfs exited {proc.returncode}: {err!r}")
        time.sleep(0.1)
    proc.kill()
    raise SystemExit(f"slowfs did not mount {mount}")


def unmount(proc: subprocess.Popen[bytes], mount: Path) -> None:
    subprocess.run(["umount", str(mount)], check=False)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if proc.returncode not in (0, -15):
        raise SystemExit(f"slowfs exited {proc.returncode}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keep", type=Path, required=True, help="a bench_access.py --keep DIR")
    ap.add_argument("--latencies", default="0,100,1000", help="µs a storage read, comma-separated")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    data = args.keep.resolve() / "data"
    python = REPO / ".replay-venv" / "bin" / "python"
    common = ["--queries", str(args.queries), "--rounds", str(args.rounds)]
    rows = []
    with tempfile.TemporaryDirectory(prefix="hf-cold-") as tmp:
        for latency in (float(x) for x in args.latencies.split(",")):
            proc, counter = mounted(latency, data, Path(tmp))
            mount = Path(tmp) / f"mnt-{latency:g}"
            try:
                effective = probe(mount / "index" / "cdx" / "big.cdxj")
                exact = readers(python, mount, counter, ["--cold", *common])
                prefix = readers(python, mount, counter, ["--cold", "--prefix", *common])
                served = read_counter(counter)
            finally:
                unmount(proc, mount)
            if not served[0]:
                raise SystemExit(f"nothing was read through {mount}: not a cold measurement")
            rows.append((latency, effective, exact, prefix))
            print(f"latency {latency:g} us done; load {os.getloadavg()[0]:.1f}", flush=True)
    print(f"\ncold lookups ({args.queries} a shape, median of {args.rounds} rounds), µs p50:")
    print(
        f"{'set µs':>7} {'read µs':>8} | {'exact flat':>10} {'ZipNum':>8} {'ratio':>6}"
        f" {'reads':>11} | {'prefix flat':>11} {'ZipNum':>8} {'ratio':>6} {'reads':>11}"
    )
    for latency, effective, exact, prefix in rows:
        cells = []
        for fig in (exact, prefix):
            f, z = fig["flat p50 us"], fig["zipnum p50 us"]
            cells.append(
                f"{f:10.0f} {z:8.0f} {z / f:6.2f} {fig['flat reads']:5.1f}/{fig['zipnum reads']:<5.1f}"
            )
        print(f"{latency:7g} {effective:8.0f} | {cells[0]} | {cells[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
