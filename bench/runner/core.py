"""Run one benchmark under the rules and write ``bench/results/<name>.json``.

Why one place: the order of the sides, the measurement of whole process trees, the output
check and the medians are the same for every benchmark, so they are written once, here. A run
whose output check fails (or a side that exits non-zero) writes a results file that says so and
holds no ratio, and the runner exits non-zero.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.runner import rules
from bench.runner.spec import Benchmark, Side, Target

log = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[2]
MEASURE = Path(__file__).resolve().with_name("measure.py")
RESULTS = REPO / "bench" / "results"


def loadavg() -> list[float]:
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


def wait_for_quiet(
    max_s: float,
    cores: int,
    read: Callable[[], list[float]] = loadavg,
    sleep: Callable[[float], None] = time.sleep,
) -> float:
    """Wait until the 1-minute load is at or under ``rules.quiet_load(cores)``, at most
    ``max_s`` seconds; the seconds waited (recorded in the round: a run is only judged on
    quiet starts, and the wait is how it gets them without a person watching the load)."""
    waited, step = 0.0, 5.0
    while read()[0] > rules.quiet_load(cores) and waited < max_s:
        sleep(step)
        waited += step
    return waited


def _git(*args: str, cwd: Path = REPO) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=False
    ).stdout.rstrip("\n")  # not strip(): a porcelain line starts with a space


RUNNER_OUTPUTS = ("bench/results/", "bench/README.md", "docs/scaling.md")


def uncommitted(cwd: Path = REPO) -> list[str]:
    """The tracked files of the tree that differ from its commit (``git status`` paths), but for
    the runner's own outputs: results files and the README's tables it regenerates (one call
    running several benchmarks rewrites them between benchmarks; they hold no code)."""
    return [
        path
        for line in _git("status", "--porcelain", "--untracked-files=no", cwd=cwd).splitlines()
        if not (path := line[3:]).startswith(RUNNER_OUTPUTS)
    ]


def machine() -> dict[str, Any]:
    model = ""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    boot = Path("/proc/sys/kernel/random/boot_id")
    return {
        # which boot of which machine: figures of two runs compare only on the same one (the
        # project's VMs change between sessions, and their CPUs differ by up to 2.4 x)
        "boot_id": boot.read_text().strip() if boot.exists() else "",
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)),
        "cpu_model": model,
        "kernel": platform.release(),
        "python": platform.python_version(),
    }


def measure_side(side: Side, out: Path, grace_s: float = 30.0) -> dict[str, Any]:
    """Run ``side`` once under the subreaper wrapper; wall, CPU and RSS of its whole tree."""
    out.mkdir(parents=True, exist_ok=True)
    result = out.parent / f"{out.name}.measure.json"
    wrapper = [sys.executable, str(MEASURE), str(result), str(out / "stdout")]
    wrapper += [str(out / "stderr"), str(grace_s), "--", *side.argv(out)]
    subprocess.run(wrapper, cwd=side.cwd or REPO, env={**os.environ, **side.env}, check=True)
    measured: dict[str, Any] = json.loads(result.read_text())
    return measured


# the C extensions setup.py builds (as it builds them: -O3), compiled in an exported tree
EXTENSIONS = ("qa/_crawlscan.c",)


def _build_extension(tree: Path, source: str) -> None:
    """Compile ``source`` in place as setup.py's build_ext would (the venv's setuptools cannot
    run setup.py outside pip's build isolation)."""
    target = tree / (source[:-2] + (sysconfig.get_config_var("EXT_SUFFIX") or ".so"))
    cmd = [sysconfig.get_config_var("CC").split()[0] or "cc", "-O3", "-shared", "-fPIC"]
    cmd += [f"-I{sysconfig.get_paths()['include']}", str(tree / source), "-o", str(target)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise rules.RuleError(f"cannot build {source} of the old commit: {done.stderr[-500:]}")


def export_commit(commit: str, work: Path) -> tuple[str, Path]:
    """The tree of ``commit`` exported under ``work`` (``git archive``; the C extension built
    in place), for a regression check; (full hash, directory). Reused when already there."""
    sha = _git("rev-parse", "--verify", f"{commit}^{{commit}}")
    if not sha:
        raise rules.RuleError(f"--against {commit}: not a commit of this repository")
    tree = work / f"tree-{sha[:12]}"
    if not (tree / ".exported").exists():
        shutil.rmtree(tree, ignore_errors=True)
        tree.mkdir(parents=True)
        archive = subprocess.run(
            ["git", "archive", "--format=tar", sha], cwd=REPO, capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        for source in EXTENSIONS:
            if (tree / source).exists():
                _build_extension(tree, source)
        (tree / ".exported").touch()
    return sha, tree


def against_sides(ours: Side, tree: Path, sha: str) -> tuple[Side, Side]:
    """(new, old): our side as this tree runs it and as ``tree`` (an older commit) runs it.

    The same command (the benchmark's own scripts from this tree); only the library code
    differs: each side's PYTHONPATH and working directory are its own tree, which come before
    the editable install on the import path.
    """

    def at(name: str, root: Path, code: str) -> Side:
        env = {**ours.env, "PYTHONPATH": str(root)}
        return replace(ours, name=name, env=env, cwd=str(root), tuning=f"{code}: {ours.tuning}")

    new = at("new", REPO, "this tree")
    old = at("old", tree, f"commit {sha[:9]}'s library code, same command")
    return new, old


def _tail(path: Path, n: int = 800) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except OSError:
        return ""


def compile_bytecode(tree: Path) -> list[str]:
    """Compile the project's packages in ``tree`` to bytecode before the rounds; the packages.

    Why: a peer installed by pip has its modules compiled at install time, and an installed
    harvestflow (or an editable one after its first run) has too; but where the environment
    sets PYTHONDONTWRITEBYTECODE (this machine's sessions do), our side would compile every
    module from source in every round, a cost its users do not pay. Python reads compiled
    files whatever that variable says; only writing them is off.
    """
    packages = sorted(p.name for p in tree.iterdir() if p.is_dir() and (p / "__init__.py").exists())
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "-j", "0", *packages],
        cwd=tree,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return packages


def run_benchmark(
    bench: Benchmark,
    rounds: int,
    quick: bool = False,
    results_dir: Path = RESULTS,
    work_root: Path | None = None,
    against: str | None = None,
    settle_max_s: float = 0.0,
) -> tuple[int, Path]:
    """Run ``bench`` for ``rounds`` rounds; (exit code, results file).

    With ``against`` (a commit), a regression check: our side as this tree runs it against the
    same side with that commit's library code, alternating, in the same run (no peer, no
    targets); the results file is ``<name>-against-<commit>.json``. Each round starts once
    the load has settled (``wait_for_quiet``, at most ``settle_max_s``: ``bench/run`` waits
    ``rules.SETTLE_MAX_S``, its own tests and ``--quick`` not at all).
    """
    rules.check_rounds(rounds)
    work = (work_root or Path(os.environ.get("TMPDIR", "/tmp")) / "hf-bench") / bench.name
    work.mkdir(parents=True, exist_ok=True)
    cores = len(os.sched_getaffinity(0))
    wait_for_quiet(settle_max_s, cores)  # the previous benchmark's trailing load, if any
    started = datetime.now(UTC)
    load_before = loadavg()
    description = bench.prepare(work, quick)
    compile_bytecode(REPO)
    ours, peer = bench.sides()
    run_name, sha = bench.name, None
    if against is not None:
        sha, tree = export_commit(against, work)
        compile_bytecode(tree)
        ours, peer = against_sides(ours, tree, sha)
        run_name = f"{bench.name}-against-{sha[:9]}"
    names = (ours.name, peer.name)
    orders = rules.round_orders(names, rounds)
    if bench.order is not None:  # a benchmark's own order: refused unless it alternates
        if len(bench.order) != rounds:
            raise rules.RuleError(
                f"{bench.name}: its order has {len(bench.order)} rounds, the run {rounds}"
            )
        orders = [list(o) for o in bench.order]
    rules.check_order(orders, names)
    side_of = {ours.name: ours, peer.name: peer}
    per_round: list[dict[str, Any]] = []
    failures: list[str] = []
    check_rounds: list[dict[str, Any]] = []
    units: int | None = None
    for r, order in enumerate(orders):
        settled_s = wait_for_quiet(settle_max_s, cores)
        row: dict[str, Any] = {"round": r + 1, "order": order, "load_before": loadavg()}
        row["settled_s"] = settled_s
        figures: dict[str, Any] = {}
        for name in order:
            out = work / f"round-{r + 1}" / name
            if out.exists():
                subprocess.run(["rm", "-rf", str(out)], check=True)
            m = measure_side(side_of[name], out)
            row[name] = m
            if m["exit_code"] != 0:
                failures.append(
                    f"round {r + 1}: {name} exited {m['exit_code']}: {_tail(out / 'stderr')}"
                )
            else:
                figures[name] = bench.figures(side_of[name], out)
                m["observed"] = bench.observe(side_of[name], out)
        per_round.append(row)
        print(
            f"{bench.name} round {r + 1} ({' first, '.join(order)} second): "
            + ", ".join(
                f"{n} {row[n]['wall_s']:.2f} s wall, {row[n]['cpu_s']:.2f} CPU-s" for n in names
            )
            + f"; load {' '.join(f'{x:.2f}' for x in row['load_before'])}"
            + (f" (after {settled_s:.0f} s waiting for it to settle)" if settled_s else ""),
            flush=True,
        )
        if failures:
            break
        same = figures[ours.name] == figures[peer.name]
        problems = bench.problems(figures[ours.name]) if same else []
        check_rounds.append({"round": r + 1, "equal": same, "problems": problems})
        if not same:
            failures.append(f"round {r + 1}: {_difference(figures, names)}")
            break
        if problems:
            failures.append(f"round {r + 1}: " + "; ".join(problems))
            break
        units = bench.units(figures[ours.name])
        for name in names:
            subprocess.run(["rm", "-rf", str(work / f"round-{r + 1}" / name)], check=True)
    dirty = uncommitted()
    result: dict[str, Any] = {
        "benchmark": run_name,
        "title": bench.title + (f" — regression check against {sha[:9]}" if sha else ""),
        "kind": "regression" if sha else "peer",
        "against": sha,
        "date": started.isoformat(timespec="seconds"),
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": _git("rev-parse", "HEAD"),
        "tree_dirty": bool(dirty),
        "uncommitted_files": dirty,
        "machine": {**machine(), "load_before": load_before, "load_after": loadavg()},
        "quick": quick,
        "rounds": rounds,
        "input": description,
        # both sides run from compiled bytecode, as installed packages do (compile_bytecode)
        "bytecode": "compiled before the rounds",
        "sides": {
            s.name: {
                "role": role,
                "command": s.command,
                "shown": s.shown or " ".join(s.command),
                "env": s.env,
                "parallelism": s.parallelism,
                "tuning": s.tuning,
            }
            for role, s in (("ours", ours), ("peer", peer))
        },
        "order": orders,
        "per_round": per_round,
        "output_check": {
            "compares": bench.output_check,
            "rounds": check_rounds,
            "passed": not failures,
            "failures": failures,
        },
    }
    if not failures:
        targets = () if sha else bench.targets
        result.update(_figures(bench, per_round, names, ours, peer, units, targets))
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / f"{run_name}.json"
    path.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    if failures:
        print(f"{bench.name}: FAILED, no ratio written:\n  " + "\n  ".join(failures))
        return 1, path
    print(f"{bench.name}: {result['headline']['text']}")
    return 0, path


def _difference(figures: dict[str, Any], names: tuple[str, str]) -> str:
    a, b = (figures[n] for n in names)
    if isinstance(a, dict) and isinstance(b, dict):
        keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
        shown = {k: (a.get(k), b.get(k)) for k in keys[:5]}
        return f"outputs differ ({names[0]}, {names[1]}) in {keys[:5]}: {shown}"[:2000]
    return f"outputs differ: {names[0]} {str(a)[:300]!r}, {names[1]} {str(b)[:300]!r}"


def _figures(
    bench: Benchmark,
    per_round: list[dict[str, Any]],
    names: tuple[str, str],
    ours: Side,
    peer: Side,
    units: int | None,
    targets_wanted: tuple[Target, ...],
) -> dict[str, Any]:
    """Medians, ratios (peer / ours: > 1 means ours costs less), rates, targets, headline."""
    summary = rules.summarize(per_round, names)
    observed = rules.observed_medians(per_round, names)
    if observed:
        summary["observed"] = observed
    same_parallelism = ours.parallelism == peer.parallelism
    if not same_parallelism:
        summary["ratios"]["wall"] = {
            "shown": False,
            "reason": f"{ours.name} runs {ours.parallelism} at once, {peer.name}"
            f" {peer.parallelism}: only the per-CPU-second ratio compares them",
        }
    else:
        summary["ratios"]["wall"]["shown"] = True
    cpu = summary["ratios"]["cpu"]["median"]
    if units:
        summary["units"] = {"unit": bench.unit, "count": units}
        for name in names:
            med = summary["medians"][name]
            med["per_cpu_s"] = units / med["cpu_s"] if med["cpu_s"] else None
    targets = []
    for t in targets_wanted:
        if t.metric.startswith("observed:"):
            value = observed.get(ours.name, {}).get(t.metric.removeprefix("observed:"))
        elif t.metric.startswith("observed_ratio:"):  # ours' median over the peer's
            key = t.metric.removeprefix("observed_ratio:")
            mine, theirs = (observed.get(n, {}).get(key) for n in names)
            value = mine / theirs if mine is not None and theirs else None
        elif t.metric == "cpu_ms_per_unit":  # ours' median CPU-seconds per unit, in ms
            cpu_s = summary["medians"][ours.name]["cpu_s"]
            value = cpu_s * 1000 / units if units else None
        else:
            ratio = summary["ratios"][t.metric]
            value = ratio.get("median") if ratio.get("shown", True) else None
        met = None
        if value is not None:
            met = value >= t.minimum and (t.maximum is None or value <= t.maximum)
        targets.append(
            {
                "text": t.text,
                "metric": t.metric,
                "minimum": t.minimum,
                "maximum": t.maximum,
                "value": value,
                "met": met,
            }
        )
    text = f"{cpu:.2f} x {peer.name} per CPU-second ({peer.name} CPU-s / {ours.name} CPU-s)"
    if same_parallelism:
        text += f"; wall {summary['ratios']['wall']['median']:.2f} x (same parallelism)"
    summary["headline"] = {"metric": "cpu", "value": cpu, "text": text}
    summary["targets"] = targets
    return summary
