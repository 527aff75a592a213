"""bench/run access-lookups: pywb on our ZipNum index against pywb on the flat CDXJ, the same
lookups through its CDX API.

Why this peer: pywb serves a flat, sorted CDXJ as well as a ZipNum; a user with one big CDXJ
names the file as a collection's ``index`` and is done. Each side is the replay venv's pywb
(the service's version) started by ``lookup_side.py`` on its own ``config.yaml``: ours a
collection whose index is our ZipNum (pywb's ``zipnum`` source, the summary of
``access.index.reindex``, ``max_blocks`` from ``[access]``), the peer the flat file; both read
the same ACL file (pywb checks every capture of an answer against it, as the service's). Not
in ours: the service's ``index_group`` (ZipNum + the folder of files not merged yet) and
gateway, so the index is what differs.

Queries: the URL of random captures (exact) and their host's front page as a prefix, both
``limit=100``, 1,000 each (``--quick`` 50), over the 2,000,000 captures of the access build
benchmark's generator (``--quick`` 20,000), warm (an untimed pass first), one at a time, a
connection each. Output check, every round: every answer's body, in query order (count,
captures and SHA-256), equal on both sides, none empty (every query comes from a capture).
The latencies (p50, p95 per shape) are observed figures of each side; a side's CPU is pywb's
start, both passes and the client's.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.runner.spec import Benchmark, Side, Target

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
REINDEX = "from access.index import reindex; reindex(force=True)"
SEPARATOR = b"\n\x00\n"
# one rule, as the service's ACL file holds the curators' rules: pywb checks every capture
ACL = 'fr,blocked-example)/ - {"access": "exclude", "url": "http://blocked-example.fr/"}\n'


def sample_queries(flat: Path, n: int, seed: int = 7) -> list[dict[str, Any]]:
    """``n`` exact and ``n`` prefix lookups from random captures of ``flat``."""
    rnd, size = random.Random(seed), flat.stat().st_size
    urls: list[str] = []
    with flat.open("rb") as fh:
        while len(urls) < n:
            fh.seek(rnd.randrange(size))
            fh.readline()
            line = fh.readline()
            if line:
                urls.append(json.loads(line.split(b" ", 2)[2])["url"])
    exact = [{"shape": "exact", "params": {"url": u, "limit": "100"}} for u in urls]
    prefix = [
        {"shape": "prefix", "params": {"url": "/".join(u.split("/", 3)[:3]) + "/",
                                       "matchType": "prefix", "limit": "100"}}
        for u in urls
    ]  # fmt: skip
    return exact + prefix


class AccessLookupBenchmark(Benchmark):
    name = "access-lookups"
    title = "lookups of 2,000,000 captures: pywb on our ZipNum vs pywb on the flat CDXJ"
    output_check = (
        "every answer's body in query order (count, captures, SHA-256), equal between the"
        " sides, none empty"
    )
    unit = "lookups"
    targets = (
        Target("p95 exact lookup ≤ 50 ms (median, ms)", "observed:exact p95 ms", 0.0,
               maximum=50.0),
        Target("exact p50 ≤ 1.0 × the flat file's (ours / peer)",
               "observed_ratio:exact p50 ms", 0.0, maximum=1.0),
        Target("prefix p50 ≤ 1.0 × the flat file's (ours / peer)",
               "observed_ratio:prefix p50 ms", 0.0, maximum=1.0),
    )  # fmt: skip

    def __init__(self) -> None:
        self.work = Path()
        self.lookups = 0
        self.ports = (0, 0)
        self.wayback = ""

    def prepare(self, work: Path, quick: bool) -> dict[str, Any]:
        captures, hosts, n = (20_000, 500, 50) if quick else (2_000_000, 20_000, 1_000)
        self.work, self.lookups = work, 2 * n
        data = work / f"data-{captures}-{hosts}"
        env = {"HARVESTFLOW_DATA_DIR": str(data)}
        os.environ.update(env)
        sys.path.insert(0, str(HERE))  # bench_access imports its neighbour pagecache
        import bench_access

        from access.config import AccessConfig
        from harvestflow import settings as settings_mod
        from indexing.layout import Layout
        from tests.support.environment import free_port

        settings_mod.reset()
        settings = settings_mod.get_settings()
        cfg = AccessConfig.from_settings(settings)
        flat = Layout.from_settings(settings).big_cdx("cdxj")
        built = data / "zipnum-built-v2"  # v2: blocks apart (access.zipnum.BLOCK_GAP)
        if not built.exists():
            flat.parent.mkdir(parents=True, exist_ok=True)
            bench_access.generate(flat, captures, hosts)
            subprocess.run([sys.executable, "-c", REINDEX], env={**os.environ, **env},
                           cwd=REPO, check=True)  # fmt: skip
            built.touch()
        (work / "acl.aclj").write_text(ACL)
        acl = json.dumps(str(work / "acl.aclj"))
        summary = json.dumps(str(cfg.zipnum_dir("all") / "all.idx"))
        indexes = {
            "zipnum": f"\n      type: zipnum\n      path: {summary}\n"
            f"      max_blocks: {cfg.max_blocks}",
            "flat": f" {json.dumps(str(flat))}",
        }
        for side, index in indexes.items():
            folder = work / f"pywb-{side}"
            folder.mkdir(exist_ok=True)
            (folder / "config.yaml").write_text(
                f"collections:\n  all:\n    index:{index}\n    acl_paths: [{acl}]\n"
            )
        with (work / "queries.jsonl").open("w") as fh:
            for query in sample_queries(flat, n):
                fh.write(json.dumps(query) + "\n")
        self.wayback = str(cfg.wayback)
        self.ports = (free_port(), free_port())
        subprocess.run(["cat", str(flat)], check=True, stdout=subprocess.DEVNULL)
        return {
            "captures": captures,
            "hosts": hosts,
            "lookups": self.lookups,
            "flat_mb": round(flat.stat().st_size / 1e6, 1),
            "block_lines": cfg.block_lines,
            "max_blocks": cfg.max_blocks,
            "source": "bench/access/bench_access.py generate (seed 20); queries from random"
            " captures (seed 7): exact URL and its host's front page as a prefix, limit=100",
        }

    def sides(self) -> tuple[Side, Side]:
        child = [sys.executable, str(HERE / "lookup_side.py"), self.wayback]
        queries = str(self.work / "queries.jsonl")

        def side(name: str, port: int, tuning: str) -> Side:
            folder = str(self.work / f"pywb-{name}")
            return Side(
                name,
                [*child, folder, "all", str(port), queries, "{out}"],
                1,
                tuning,
                shown=f"python bench/access/lookup_side.py wayback pywb-{name}/ all"
                " <port> queries.jsonl <out>",
            )

        ours = side("zipnum", self.ports[0], "pywb's zipnum source on our ZipNum (summary,"
                    " .loc, shards of access.index.reindex; [access] block_lines and"
                    " max_blocks), the same ACL file; pywb start, an untimed pass and the"
                    " timed pass of the lookups, the client's CPU included")  # fmt: skip
        peer = side("flat", self.ports[1], "pywb's file source on the flat, sorted CDXJ"
                    " (`index: <all.cdxj>`), the same ACL file; pywb start, an untimed pass"
                    " and the timed pass of the lookups, the client's CPU included")  # fmt: skip
        return ours, peer

    def figures(self, side: Side, out: Path) -> Any:
        data = (out / "answers").read_bytes()
        bodies = data.split(SEPARATOR)[:-1]
        captures = [sum(1 for line in b.splitlines() if line.strip()) for b in bodies]
        return {
            "answers": len(bodies),
            "captures": sum(captures),
            "empty": captures.count(0),
            "sha256": hashlib.sha256(data).hexdigest(),
        }

    def problems(self, figures: Any) -> list[str]:
        found = []
        if figures["answers"] != self.lookups:
            found.append(f"{figures['answers']} answers for {self.lookups} lookups")
        if figures["empty"]:
            found.append(f"{figures['empty']} empty answers (every query is a capture's)")
        return found

    def units(self, figures: Any) -> int | None:
        return int(figures["answers"])

    def observe(self, side: Side, out: Path) -> dict[str, float]:
        latency: dict[str, float] = json.loads((out / "latency.json").read_text())
        return latency
