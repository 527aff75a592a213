"""Merge benchmark: our merge of per-file sorted CDXJ files vs ``LC_ALL=C sort -m``.

The indexing comparison (ours vs cdxj-indexer) runs under the benchmark runner:
``bench/run index`` (bench/index/spec.py). This script prints the time to merge the per-file
sorted CDXJ files with our merge and with ``LC_ALL=C sort -m`` given the same
``--batch-size``/buffer options as ours, and the merge's peak memory for two index sizes. The
merge inputs are cdxj-indexer's lines for the WARCs (one untimed run). An output differing from
the peer's fails the run. Not yet ported to the runner. Usage:

    .venv/bin/python bench/index/run.py [--data /tmp/hf-bench-index] [--gb 1.0]
        [--merge-rounds 6] [--merge-copies 20] [--crawled]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
ORACLE = REPO / ".oracle-venv" / "bin" / "cdxj-indexer"
PY = sys.executable

MERGE_CODE = """
import resource, sys, time
from pathlib import Path
from typing import Any
from indexing.merge import merge_sorted
t = time.perf_counter()
stats = merge_sorted([Path(p) for p in sys.argv[2:]], Path(sys.argv[1]))
# VmHWM, not RUSAGE_SELF: ru_maxrss keeps the RSS of the forked benchmark before exec
hwm = [int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmHWM")][0]
peak = max(hwm, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
print(time.perf_counter() - t, stats.lines, peak)
"""


@dataclass
class Run:
    wall: float  # seconds
    cpu: float  # user + system seconds of the process and every descendant it waited for
    rss_mb: float  # peak RSS of the largest process in the tree


def run_cmd(cmd: list[str], out: Path, env: dict[str, str] | None = None) -> Run:
    """Run ``cmd`` with stdout to ``out``; its own wall, CPU and peak RSS (``wait4``)."""
    with open(out, "wb") as fh:
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=fh, env=env, cwd=REPO)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
        proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(
            f"benchmark FAILED: {' '.join(cmd[:6])} ... exited {proc.returncode} (stdout in {out})"
        )
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def _loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def reference_index(warcs: list[str], work: Path) -> Path:
    """cdxj-indexer's lines for ``warcs`` (untimed): what the merge inputs are made of."""
    ref = work / "ref.cdxj"
    if not ref.exists():
        run_cmd([str(ORACLE), *warcs], ref)
    return ref


def _merge_inputs(work: Path, copies: int) -> list[str]:
    """Per-file sorted CDXJ files: ``copies`` "days" of the captures under other file names."""
    from indexing.cdx import sorted_lines

    parts = work / "parts"
    shutil.rmtree(parts, ignore_errors=True)
    parts.mkdir()
    lines = (work / "ref.cdxj").read_text(encoding="utf-8").splitlines()
    by_file: dict[str, list[str]] = {}
    for line in lines:
        by_file.setdefault(line.rsplit('"filename": "', 1)[1], []).append(line)
    files = []
    for k in range(copies):
        for name, flines in by_file.items():
            base = name.rstrip('"}')
            p = parts / f"v{k}-{base}.cdxj"
            renamed = [x.replace(".warc.gz", f"-v{k}.warc.gz") for x in flines]
            p.write_text("".join(x + "\n" for x in sorted_lines(renamed)))
            files.append(str(p))
    return files


def _cpu_s() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def sort_tuning(merge_cmd: list[str]) -> list[str]:
    """The options of our ``sort -m`` command that tune it (batch size, buffer, threads...):
    everything but the merge itself, ``-u``, ``-o FILE`` and the inputs."""
    args = merge_cmd[merge_cmd.index("-m") + 1 :]
    args = args[: args.index("--")] if "--" in args else [a for a in args if a.startswith("-")]
    tuning: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
        elif a == "-o":
            skip = True
        elif a not in ("-u", "--unique") and not a.startswith("--output"):
            tuning.append(a)
    return tuning


def our_sort_command(files: list[str], output: Path) -> list[str]:
    """The ``sort -m`` command line our merge runs for ``files`` (recorded from one untimed run)."""
    import indexing.merge as merge

    seen: list[list[str]] = []
    real_run = subprocess.run

    def spy(cmd: Any, *a: Any, **kw: Any) -> Any:
        if isinstance(cmd, list) and "-m" in cmd:
            seen.append([str(c) for c in cmd])
        return real_run(cmd, *a, **kw)

    merge.subprocess.run = spy  # type: ignore[assignment]
    try:
        merge.merge_sorted([Path(p) for p in files], output)
    finally:
        merge.subprocess.run = real_run
    if not seen:
        raise SystemExit("benchmark FAILED: our merge did not run sort -m (sort(1) missing?)")
    return seen[0]


def merge_bench(work: Path, rounds: int, copies: int) -> None:
    """Our ``merge_sorted`` (in this process) against ``LC_ALL=C sort -m``, alternating.

    Wall-clock ratios per round and CPU-time ratios (user + system of the process and its
    ``sort`` children): on a shared machine the CPU ratio moves less with the neighbours' load.
    """
    from indexing.merge import merge_sorted

    files = _merge_inputs(work, copies)
    env = {**os.environ, "LC_ALL": "C"}
    # the peer runs with the batch size and buffer options our merge gives sort
    ours_cmd = our_sort_command(files, work / "merged.cdxj")
    tuning = sort_tuning(ours_cmd)
    peer_cmd = ["sort", "-m", *tuning, *files]
    print(
        f"merge: ours runs sort {' '.join(ours_cmd[1 : ours_cmd.index('--')])} -- <files>;"
        f" peer: LC_ALL=C sort -m {' '.join(tuning)} <files> (same tuning; sort's default"
        f" buffer size unless listed)"
    )
    sort_runs: list[Run] = []
    ours_runs: list[Run] = []
    print(f"merge, load average before: {_loadavg()}")
    for r in range(rounds):
        for side in ("sort", "ours") if r % 2 == 0 else ("ours", "sort"):
            if side == "sort":
                sort_runs.append(run_cmd(peer_cmd, work / "sorted-m.cdxj", env))
            else:
                t, c = time.perf_counter(), _cpu_s()
                stats = merge_sorted([Path(p) for p in files], work / "merged.cdxj")
                ours_runs.append(Run(time.perf_counter() - t, _cpu_s() - c, 0.0))
    ratios = [a.wall / b.wall for a, b in zip(ours_runs, sort_runs, strict=True)]
    cpu_ratios = [a.cpu / b.cpu for a, b in zip(ours_runs, sort_runs, strict=True)]
    same = (work / "merged.cdxj").read_bytes() == (work / "sorted-m.cdxj").read_bytes()
    t = time.perf_counter()
    merge_sorted([Path(p) for p in files], work / "merged-py.cdxj", engine="python")
    t_py = time.perf_counter() - t
    print(
        f"merge of {len(files)} sorted CDXJ files, {stats.lines} lines, {rounds} rounds:"
        f" ours (sort -m -u -o, then sort -c -u + line count, fsync) median"
        f" {statistics.median(x.wall for x in ours_runs):.2f} s,"
        f" LC_ALL=C sort -m {' '.join(tuning)} median"
        f" {statistics.median(x.wall for x in sort_runs):.2f} s;"
        f" wall ratio median {statistics.median(ratios):.2f}"
        f" (rounds: {', '.join(f'{x:.2f}' for x in ratios)}) (target <= 1.2);"
        f" CPU ratio median {statistics.median(cpu_ratios):.2f}"
        f" (ours {statistics.median(x.cpu for x in ours_runs):.2f} CPU s,"
        f" sort -m {statistics.median(x.cpu for x in sort_runs):.2f});"
        f" identical output: {same};"
        f" pure-Python heapq engine (fallback, not the default): {t_py:.2f} s;"
        f" load average {_loadavg()}"
    )
    if not same:
        raise SystemExit("benchmark FAILED: our merged output differs from sort -m's")
    res = {}
    for label, subset in (("small", files[: len(files) // 4]), ("big", files)):
        out = subprocess.run(
            [PY, "-c", MERGE_CODE, str(work / f"merged-{label}.cdxj"), *subset],
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO,
        ).stdout.split()
        res[label] = (int(out[1]), int(out[2]) // 1024)
    print(
        "merge peak RSS (our process or its sort): "
        + ", ".join(f"{mb} MB for {n} lines" for n, mb in res.values())
        + f"; load average after: {_loadavg()}"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=Path("/tmp/hf-bench-index"))
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--merge-rounds", type=int, default=6)
    ap.add_argument("--merge-copies", type=int, default=20, help="merge input: N x the index")
    ap.add_argument(
        "--crawled",
        action="store_true",
        help="WARCs written by our crawler (crawl_warcs.py: a generated site crawled on loopback)"
        " instead of WARCs generated in the crawler's layout (gen_warcs.py)",
    )
    args = ap.parse_args()
    if args.crawled:
        subprocess.run(
            [
                PY,
                str(Path(__file__).with_name("crawl_warcs.py")),
                str(args.data),
                "--gb",
                str(args.gb * 1.25),
            ],  # bodies compress by ~20 %: crawl a bit more than --gb
            check=True,
            stdout=subprocess.DEVNULL,
        )
        warc_dir = args.data / "crawl" / "warcs"
    else:
        warc_dir = args.data / "warcs"
        subprocess.run(
            [
                PY,
                str(Path(__file__).with_name("gen_warcs.py")),
                str(warc_dir),
                "--gb",
                str(args.gb),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    warcs = sorted(str(p) for p in warc_dir.glob("*.warc.gz"))
    mb = sum(os.path.getsize(p) for p in warcs) / 1e6
    work = args.data / "out"
    work.mkdir(exist_ok=True)
    source = "crawled by our crawler" if args.crawled else "generated in our crawler's layout"
    print(f"input: {len(warcs)} gzipped WARC files, {mb:.0f} MB, {source}")

    reference_index(warcs, work)
    sys.path.insert(0, str(REPO))
    merge_bench(work, args.merge_rounds, args.merge_copies)


if __name__ == "__main__":
    main()
