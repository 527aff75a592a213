"""Indexing benchmark: our indexer vs cdxj-indexer, our merge vs ``LC_ALL=C sort -m``.

Prints, for the same ≥1 GB of gzipped WARCs in one run: MB/s and records/s of cdxj-indexer and of
``harvestflow index cdx`` (one process and ``--processes``), whether the outputs are identical line
by line, then the time to merge the per-file sorted CDXJ files with our merge and with
``LC_ALL=C sort -m``, and the merge's peak memory for two index sizes. Ratios, not absolute
times, are the result (the machine is shared). Usage:

    .venv/bin/python bench/index/run.py [--data /tmp/hf-bench-index] [--gb 1.0] [--processes 2]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ORACLE = REPO / ".oracle-venv" / "bin" / "cdxj-indexer"
PY = sys.executable

MERGE_CODE = """
import resource, sys, time
from pathlib import Path
from indexing.merge import merge_sorted
t = time.perf_counter()
stats = merge_sorted([Path(p) for p in sys.argv[2:]], Path(sys.argv[1]))
peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
           resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
print(time.perf_counter() - t, stats.lines, peak)
"""


def timed(cmd: list[str], out: Path, env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall-clock and CPU seconds (user + system, all descendant processes) of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    with open(out, "wb") as fh:
        subprocess.run(cmd, stdout=fh, check=False, env=env, cwd=REPO)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def line_diff(a: Path, b: Path) -> int:
    with open(a, "rb") as fa, open(b, "rb") as fb:
        la, lb = fa.read().splitlines(), fb.read().splitlines()
    return sum(1 for x, y in zip(la, lb, strict=False) if x != y) + abs(len(la) - len(lb))


def index_bench(warcs: list[str], work: Path, mb: float, processes: int) -> None:
    ref = work / "ref.cdxj"
    t_ref, c_ref = timed([str(ORACLE), *warcs], ref)
    records = ref.read_bytes().count(b"\n")
    runs = {}
    for procs, verify in ((1, True), (processes, True), (1, False), (processes, False)):
        out = work / f"ours-{procs}-{verify}.cdxj"
        cmd = [
            PY,
            "-m",
            "indexing.cli",
            "index",
            "cdx",
            *warcs,
            "--format",
            "cdxj",
            "--processes",
            str(procs),
        ] + ([] if verify else ["--no-verify"])
        wall, cpu = timed(cmd, out)
        runs[(procs, verify)] = (wall, cpu, line_diff(ref, out))
    print(f"{records} records. Wall-clock (shared machine: see CPU columns too):")
    print(
        f"{'indexer':38} {'wall s':>7} {'MB/s':>6} {'rec/s':>7} {'x ref':>6} {'CPU s':>6}"
        f" {'rec/CPU-s':>9} {'x ref':>6} lines differing"
    )
    print(
        f"{'cdxj-indexer':38} {t_ref:7.1f} {mb / t_ref:6.1f} {records / t_ref:7.0f} {1:6.2f}"
        f" {c_ref:6.1f} {records / c_ref:9.0f} {1:6.2f}"
    )
    for (procs, verify), (wall, cpu, diff) in runs.items():
        label = f"harvestflow {procs} proc, {'verify' if verify else 'no-verify'}"
        print(
            f"{label:38} {wall:7.1f} {mb / wall:6.1f} {records / wall:7.0f} {t_ref / wall:6.2f}"
            f" {cpu:6.1f} {records / cpu:9.0f} {c_ref / cpu:6.2f} {diff}"
        )
    ref11, ours11 = work / "ref.cdx", work / "ours.cdx"
    timed([str(ORACLE), "-11", *warcs], ref11)
    timed(
        [
            PY,
            "-m",
            "indexing.cli",
            "index",
            "cdx",
            *warcs,
            "--format",
            "cdx11",
            "--processes",
            str(processes),
        ],
        ours11,
    )
    print(
        f"CDX11 ({records} records): lines differing from cdxj-indexer -11: "
        f"{line_diff(ref11, ours11)}"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=Path("/tmp/hf-bench-index"))
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--merge-only", action="store_true", help="reuse the indexing outputs")
    args = ap.parse_args()
    warc_dir = args.data / "warcs"
    subprocess.run(
        [PY, str(Path(__file__).with_name("gen_warcs.py")), str(warc_dir), "--gb", str(args.gb)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    warcs = sorted(str(p) for p in warc_dir.glob("*.warc.gz"))
    mb = sum(os.path.getsize(p) for p in warcs) / 1e6
    work = args.data / "out"
    work.mkdir(exist_ok=True)
    print(f"input: {len(warcs)} gzipped WARC files, {mb:.0f} MB")

    if not args.merge_only:
        index_bench(warcs, work, mb, args.processes)
    # merge: per-file sorted CDXJ, several variants of each to make a sizeable index
    sys.path.insert(0, str(REPO))
    from indexing.cdx import sorted_lines

    parts = work / "parts"
    parts.mkdir(exist_ok=True)
    lines = (work / "ours-1-True.cdxj").read_text(encoding="utf-8").splitlines()
    by_file: dict[str, list[str]] = {}
    for line in lines:
        by_file.setdefault(line.rsplit('"filename": "', 1)[1], []).append(line)
    files = []
    for k in range(4):  # 4 "days" of the same captures under other file names
        for name, flines in by_file.items():
            base = name.rstrip('"}')
            p = parts / f"v{k}-{base}.cdxj"
            p.write_text(
                "".join(
                    x.replace(".warc.gz", f"-v{k}.warc.gz") + "\n" for x in sorted_lines(flines)
                )
            )
            files.append(str(p))
    env = {**os.environ, "LC_ALL": "C"}
    t_sort, _ = timed(["sort", "-m", *files], work / "sorted-m.cdxj", env)
    t_wall = time.perf_counter()
    res = subprocess.run(
        [PY, "-c", MERGE_CODE, str(work / "merged.cdxj"), *files],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    t_wall = time.perf_counter() - t_wall
    t_merge, n_lines, rss_big = res.stdout.split()
    same = (work / "merged.cdxj").read_bytes() == (work / "sorted-m.cdxj").read_bytes()
    half = files[: len(files) // 4]
    res_small = subprocess.run(
        [PY, "-c", MERGE_CODE, str(work / "merged-small.cdxj"), *half],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    _, n_small, rss_small = res_small.stdout.split()
    print(
        f"merge of {len(files)} sorted CDXJ files, {n_lines} lines: ours {float(t_merge):.2f} s"
        f" ({t_wall:.2f} s with interpreter start), LC_ALL=C sort -m {t_sort:.2f} s, ratio"
        f" {float(t_merge) / t_sort:.2f} ({t_wall / t_sort:.2f}) (target <= 1.2),"
        f" identical output: {same}"
    )
    print(
        f"merge peak RSS: {int(rss_small) // 1024} MB for {n_small} lines, "
        f"{int(rss_big) // 1024} MB for {n_lines} lines"
    )


if __name__ == "__main__":
    main()
