"""Benchmark helpers with logic of their own: the merge peer's sort options, the QA log's truth.

Why: the merge benchmark's peer must run ``sort -m`` with the options our merge gives sort, read
from our real command line; the QA benchmark checks QA against the counts the generator says it
wrote, so those counts must be what is in the file.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _load(path: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_{Path(path).stem}", BENCH / path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_merge_peer_gets_our_sort_options(tmp_path: Path) -> None:
    run = _load("index/run.py")
    files = []
    for n in range(3):
        p = tmp_path / f"part{n}.cdxj"
        p.write_text("".join(f"com,example)/{n}/{k:03d} 2026 {{}}\n" for k in range(5)))
        files.append(str(p))
    cmd = run.our_sort_command(files, tmp_path / "merged.cdxj")
    assert cmd[1:3] == ["-m", "-u"] and cmd[-3:] == files
    # three inputs merged in one batch; no -S given, so both use sort's default buffer
    assert run.sort_tuning(cmd) == ["--batch-size=3"]
    assert (tmp_path / "merged.cdxj").read_text().count("\n") == 15
    # options given as two words, and -o's value, are told apart
    other = ["sort", "-m", "-u", "-S", "64M", "--batch-size=9", "-o", "out", "--", "a", "b"]
    assert run.sort_tuning(other) == ["-S", "64M", "--batch-size=9"]


def test_generated_crawl_log_matches_its_truth_file(tmp_path: Path) -> None:
    gen = _load("qa/gen_crawllog.py")
    log = tmp_path / "crawl.log"
    gen.generate(log, 40_000, hosts=2_000)
    truth = json.loads(gen.truth_path(log).read_text(encoding="utf-8"))
    status: Counter[str] = Counter()
    mime: Counter[str] = Counter()
    rejected = 0
    lines = log.read_text(encoding="utf-8").splitlines()
    for line in lines:
        f = line.split()
        # 12 fields, or a 13th that is Heritrix's {...} extra-info object (never generated)
        fields_ok = len(f) == 12 or (len(f) == 13 and f[12][:1] == "{" and f[12][-1:] == "}")
        ok = fields_ok and f[0][:4] == "2026" and f[1].lstrip("-").isdigit()
        if ok and -(2**31) <= int(f[1]) < 2**31:
            status[str(int(f[1]))] += 1
            mime[f[6]] += 1
        else:
            rejected += 1
    assert len(lines) == truth["lines"] == 40_000
    assert rejected == truth["rejected"] == sum(truth["odd"].values()) > 0
    assert dict(status) == truth["S"] and dict(mime) == truth["M"]
    assert "text/html;charset=utf-8" in mime and "-404" in status
    assert any(not line.isascii() for line in lines)
    assert all(v > 0 for v in truth["shares"].values()), truth["shares"]
