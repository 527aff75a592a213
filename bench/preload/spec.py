"""bench/run preload: the DNS check (``harvestflow preload check-dns``) against dnsperf on the
same names, served by Knot DNS on loopback.

Why dnsperf: it is the tool DNS operators measure a server with; one A query per name, the
same total window (~200 queries outstanding) and as many threads as our worker processes, so
the wall ratio is shown beside the per-CPU-second one. It does not classify: it is the ceiling
of asking. The names (bench_dns.py's ``generate``: A, CNAME → A, AAAA only, TXT only,
NXDOMAIN, and a zone served with Knot's mod-noudp so that the checker must re-ask over TCP)
and Knot are prepared before the rounds; Knot runs outside both sides' process trees.

Output check: both sides asked about every name; ours classified every name as its zone says
(a misclassified name makes the figures differ: the run fails, the first names in
``misclassified.tsv`` of the round's output). dnsperf's lost queries are observed, not compared.
"""

from __future__ import annotations

import atexit
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.preload.bench_dns import SLOW_ZONE, ZONE, free_port, generate, start_knot
from bench.runner.spec import Benchmark, Side, Target

REPO = Path(__file__).resolve().parents[2]
PROCESSES = 2
IN_FLIGHT = 100  # per process: ~200 in all, as dnsperf's -q (knot's default socket buffers)


class DnsBenchmark(Benchmark):
    name = "preload"
    title = "the broad-crawl preload's DNS check vs dnsperf on the same names (Knot on loopback)"
    output_check = (
        "every name asked on both sides (results lines / dnsperf's queries sent), and every"
        " name classified by ours as its zone says (misclassified names: 0)"
    )
    unit = "names"
    targets = (Target("≥ 10,000 names per wall second (median)", "observed:names_per_s", 10_000.0),)

    def __init__(self) -> None:
        self.expected: dict[str, str] = {}
        self.work = Path()
        self.port = 0
        self.knot: subprocess.Popen[bytes] | None = None

    def prepare(self, work: Path, quick: bool) -> dict[str, Any]:
        for tool in ("knotd", "dnsperf"):
            if not shutil.which(tool):
                raise SystemExit(
                    f"bench/run preload: {tool} not found (apt-get install knot dnsperf)"
                )
        n = 5_000 if quick else 200_000
        self.work = work / f"zone-{n}"
        shutil.rmtree(self.work, ignore_errors=True)
        self.work.mkdir(parents=True)
        self.expected = generate(self.work, n)
        self.port = free_port()
        self.knot = start_knot(self.work, self.port)
        atexit.register(self._stop)
        counts: dict[str, int] = {}
        for cls in self.expected.values():
            counts[cls] = counts.get(cls, 0) + 1
        return {
            "names": n,
            "expected_classes": counts,
            "source": "bench/preload/bench_dns.py generate(): 83 % A, 3 % CNAME → A, 2 % AAAA"
            " only, 2 % TXT only, 10 % NXDOMAIN, 1 in 20,000 in a zone answered over TCP only",
        }

    def _stop(self) -> None:
        if self.knot is not None and self.knot.poll() is None:
            self.knot.terminate()
            self.knot.wait(timeout=30)

    def sides(self) -> tuple[Side, Side]:
        ours = Side(
            "harvestflow",
            [sys.executable, "-m", "app.cli.main", "preload", "check-dns",
             str(self.work / "domains.txt"), "--nameserver", f"127.0.0.1:{self.port}",
             "-o", "{out}/results.tsv", "--processes", str(PROCESSES),
             "--in-flight", str(IN_FLIGHT), "--timeout", "2", "--retries", "2"],
            PROCESSES,
            f"{PROCESSES} worker processes, {IN_FLIGHT} queries in flight each, time-out 2 s,"
            " 2 retries, TCP after a truncated answer; results file written and renamed",
            # the zones' one-label suffixes, accepted as the demo's "test" is
            env={"HARVESTFLOW_PRELOAD__EXTRA_SUFFIXES": f'["test", "{ZONE}", "{SLOW_ZONE}"]'},
            shown=f"harvestflow preload check-dns <names> --nameserver <knot> --processes {PROCESSES}",
        )  # fmt: skip
        peer = Side(
            "dnsperf",
            ["dnsperf", "-s", "127.0.0.1", "-p", str(self.port), "-d",
             str(self.work / "queries.txt"), "-n", "1", "-c", "4", "-T", str(PROCESSES),
             "-q", str(PROCESSES * IN_FLIGHT), "-t", "2"],
            PROCESSES,
            f"one A query per name, {PROCESSES} threads, 4 clients, {PROCESSES * IN_FLIGHT}"
            " outstanding, time-out 2 s, no retry",
            shown=f"dnsperf -d <queries> -n 1 -T {PROCESSES} -q {PROCESSES * IN_FLIGHT}",
        )  # fmt: skip
        return ours, peer

    def figures(self, side: Side, out: Path) -> Any:
        if side.name == "dnsperf":
            text = (out / "stdout").read_text()
            sent = re.search(r"Queries sent:\s+(\d+)", text)
            return {"names": int(sent.group(1)) if sent else -1, "misclassified": 0}
        wrong, names = [], 0
        with (out / "results.tsv").open(encoding="utf-8") as fh:
            for line in fh:
                domain, cls, detail = line.rstrip("\n").split("\t", 2)
                names += 1
                if self.expected.get(domain) != cls:
                    wrong.append(f"{domain}\t{cls}\t{self.expected.get(domain)}\t{detail}\n")
        if wrong:
            (out.parent / f"{out.name}-misclassified.tsv").write_text("".join(wrong[:100]))
        return {"names": names, "misclassified": len(wrong)}

    def problems(self, figures: Any) -> list[str]:
        if figures["names"] != len(self.expected):
            return [f"{figures['names']} names answered, {len(self.expected)} asked"]
        return []

    def units(self, figures: Any) -> int | None:
        return int(figures["names"])

    def observe(self, side: Side, out: Path) -> dict[str, float]:
        measured = out.parent / f"{out.name}.measure.json"
        import json

        wall = json.loads(measured.read_text())["wall_s"] if measured.exists() else 0
        seen: dict[str, float] = {"names_per_s": len(self.expected) / wall if wall else 0.0}
        if side.name == "dnsperf":
            lost = re.search(r"Queries lost:\s+(\d+)", (out / "stdout").read_text())
            seen["lost"] = float(lost.group(1)) if lost else -1.0
        return seen


BENCHMARK = DnsBenchmark()
