"""Adaptive revisiting against the best fixed per-class schedule, for the same fetches.

``bench/run continuous`` (bench/continuous/spec.py) runs the two sides of the simulation, each a
process of this script (``--side adaptive`` / ``--side fixed``):

N URLs on H hosts whose pages change as Poisson processes with known rates (per URL mean change
interval log-uniform between 1 hour and 90 days, 15 % never change; front pages of "news"
hosts every 30-90 minutes). ``adaptive``: the continuous crawl's own code (``RevisitPolicy`` +
``apply_visit``: the transition the crawl applies after each visit) runs batches every 10
simulated minutes over D days. ``fixed``: the same number of fetches (``--fetches``, the
adaptive side's, known from a run before the rounds) as a fixed interval per class of URL, the
classes a fixed schedule's user knows (news host or not, front page or deeper), each class's
interval chosen with the true change rates of its pages (:func:`class_intervals`): the best a
fixed per-class schedule can do. Both see the same change history (per-page random streams).
Each side writes ``result.json``: fetches, changes that happened, changes captured (a visit
captures a change when the page has a version it had not seen).

``--replay`` (needs the pywb oracle venv): fetch-to-replayable on the loopback. A bounded run of
the real crawler over pages on several loopback hosts with the production politeness defaults,
its closed WARCs indexed into the live collection (``nrt``) as ``run_batch`` does, pywb polled
until each capture replays. Printed: median and max seconds from fetch to replayable.

    .venv/bin/python bench/continuous/bench_continuous.py --side adaptive|fixed --out DIR
        [--urls 10000 --hosts 100 --days 30] [--fetches F]
    .venv/bin/python bench/continuous/bench_continuous.py --replay-only
"""

from __future__ import annotations

import argparse
import datetime as dt
import heapq
import json
import math
import random
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from harvest.continuous.policy import HOUR, RevisitPolicy  # noqa: E402
from harvest.continuous.urlstate import Visit, apply_visit, new_state  # noqa: E402

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
TICK = 600.0  # the continuous crawl starts a batch every 10 minutes


@dataclass
class Page:
    url: str
    host: str
    depth: int
    mean_change_s: float  # inf: never changes
    next_change: float = 0.0
    version: int = 0
    changes: int = 0  # changes that happened inside the period
    rng: random.Random | None = None  # the page's own: both strategies see the same history

    def advance(self, t: float) -> int:
        """Apply the changes up to time t; returns the current version."""
        assert self.rng is not None
        while self.next_change <= t:
            self.version += 1
            self.changes += 1
            self.next_change += self.rng.expovariate(1.0 / self.mean_change_s)
        return self.version


def make_pages(n_urls: int, n_hosts: int, seed: int) -> list[Page]:
    rng = random.Random(seed)
    pages: list[Page] = []
    per_host = max(1, n_urls // n_hosts)
    for h in range(n_hosts):
        host = f"h{h:03d}.test"
        news = h % 5 == 0
        for i in range(per_host):
            if i == 0 and news:
                mean = rng.uniform(0.5, 1.5) * HOUR
            elif rng.random() < 0.15:
                mean = math.inf
            else:
                mean = math.exp(rng.uniform(math.log(HOUR), math.log(90 * 24 * HOUR)))
            pages.append(Page(f"http://{host}/p{i}", host, 0 if i == 0 else 1 + i % 3, mean))
    return pages


def reset(pages: list[Page], seed: int) -> None:
    for i, p in enumerate(pages):
        p.rng = random.Random(seed * 1_000_003 + i)
        p.version = 0
        p.changes = 0
        p.next_change = (
            math.inf if math.isinf(p.mean_change_s) else p.rng.expovariate(1.0 / p.mean_change_s)
        )


def simulate_adaptive(pages: list[Page], days: float, policy: RevisitPolicy, seed: int):
    reset(pages, seed)
    end = days * 86400
    states = [new_state(p.url, p.host, p.url, p.depth, T0, policy) for p in pages]
    seen = [-1] * len(pages)
    heap = [(0.0, i) for i in range(len(pages))]
    heapq.heapify(heap)
    fetches = captured = 0
    t = 0.0
    while t <= end:
        while heap and heap[0][0] <= t:
            _, i = heapq.heappop(heap)
            page = pages[i]
            version = page.advance(t)
            fetches += 1
            if seen[i] >= 0 and version != seen[i]:
                captured += 1
            seen[i] = version
            visit = Visit(
                url=page.url,
                fetched_at=T0 + dt.timedelta(seconds=t),
                status=200,
                mime="text/html",
                digest=f"sha1:{version}",
                warc_file="sim.warc.gz",
                warc_offset=0,
                warc_date="-",
            )
            states[i], _ = apply_visit(states[i], visit, policy)
            heapq.heappush(heap, ((states[i].next_due - T0).total_seconds(), i))
        t += TICK
    for p in pages:
        p.advance(end)
    total = sum(p.changes for p in pages)
    return fetches, captured, total


def page_class(page: Page) -> str:
    """What a fixed schedule's user knows of a URL: its host's kind and whether it is a front
    page (not its change rate)."""
    news = int(page.host[1:4]) % 5 == 0  # make_pages' news hosts
    return f"{'news' if news else 'other'} {'front' if page.depth == 0 else 'deep'}"


def class_intervals(pages: list[Page], days: float, fetches: int) -> dict[str, float]:
    """Per class, the revisit interval that captures the most changes for ``fetches`` in all.

    Expected changes captured by visiting a page of rate r every I seconds over T: about
    (T / I)(1 - exp(-r I)). Each class gets the interval (log grid, 10 min to T) maximising its
    sum minus mu times its fetches; mu is bisected until the classes' fetches meet the budget.
    The rates are the pages' true ones: more than a curator knows, the peer's best case.
    """
    end = days * 86400
    classes: dict[str, list[float]] = {}
    for p in pages:
        rate = 0.0 if math.isinf(p.mean_change_s) else 1.0 / p.mean_change_s
        classes.setdefault(page_class(p), []).append(rate)
    grid = np.geomspace(TICK, end, 600)
    gains, costs = {}, {}
    for name, rates in classes.items():
        r = np.array(rates)[:, None]
        gains[name] = ((end / grid) * (1 - np.exp(-r * grid))).sum(axis=0)
        costs[name] = len(rates) * end / grid

    def choose(mu: float) -> dict[str, int]:
        return {c: int(np.argmax(gains[c] - mu * costs[c])) for c in classes}

    low, high = 0.0, 1.0
    while sum(costs[c][k] for c, k in choose(high).items()) > fetches:
        high *= 2
    for _ in range(100):
        mid = (low + high) / 2
        if sum(costs[c][k] for c, k in choose(mid).items()) > fetches:
            low = mid
        else:
            high = mid
    return {c: float(grid[k]) for c, k in choose(high).items()}


def simulate_fixed(pages: list[Page], days: float, fetches: int, seed: int):
    """Exactly ``fetches`` fetches: each class at its own interval (staggered phases), all the
    intervals scaled by one factor until there are enough, the latest fetches beyond the
    budget dropped."""
    reset(pages, seed)
    end = days * 86400
    intervals = class_intervals(pages, days, fetches)

    def schedule(scale: float) -> list[tuple[float, int]]:
        phase_rng = random.Random(seed + 1)
        events = []
        for i, page in enumerate(pages):
            interval = intervals[page_class(page)] * scale
            t = phase_rng.uniform(0, interval)
            while t <= end:
                events.append((t, i))
                t += interval
        return events

    scale = 1.0
    events = schedule(scale)
    while len(events) < fetches:
        scale *= 0.99
        events = schedule(scale)
    events.sort()
    del events[fetches:]
    seen = [-1] * len(pages)
    captured = 0
    for t, i in events:
        version = pages[i].advance(t)
        if seen[i] >= 0 and version != seen[i]:
            captured += 1
        seen[i] = version
    for p in pages:
        p.advance(end)
    shown = {c: round(v * scale / 3600, 2) for c, v in sorted(intervals.items())}
    return len(events), captured, sum(p.changes for p in pages), shown


def run_side(args: argparse.Namespace) -> None:
    """One side of ``bench/run continuous``: its figures into ``args.out/result.json``."""
    pages = make_pages(args.urls, args.hosts, args.seed)
    result: dict[str, object]
    if args.side == "adaptive":
        policy = RevisitPolicy(min_wait_s=HOUR / 2)
        fetches, captured, total = simulate_adaptive(pages, args.days, policy, args.seed)
        result = {"fetches": fetches, "captured": captured, "changes": total}
    else:
        fetches, captured, total, hours = simulate_fixed(pages, args.days, args.fetches, args.seed)
        result = {"fetches": fetches, "captured": captured, "changes": total,
                  "interval_h": hours}  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "result.json").write_text(json.dumps(result) + "\n")


def part2(args: argparse.Namespace) -> None:
    from bench.continuous.replay_latency import measure

    measure(args.replay_pages, args.replay_hosts, args.warc_size)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--side", choices=["adaptive", "fixed"], help="one side of bench/run")
    ap.add_argument("--out", type=Path, help="the side's result.json goes here")
    ap.add_argument("--fetches", type=int, help="the fixed side's budget: the adaptive's fetches")
    ap.add_argument("--urls", type=int, default=10000)
    ap.add_argument("--hosts", type=int, default=100)
    ap.add_argument("--days", type=float, default=30)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--replay-only", action="store_true", help="measure fetch-to-replayable")
    ap.add_argument("--replay-pages", type=int, default=200)
    ap.add_argument("--replay-hosts", type=int, default=10)
    ap.add_argument("--warc-size", type=int, default=20_000, help="WARC rotation size (replay)")
    args = ap.parse_args()
    if args.side:
        if args.out is None or (args.side == "fixed" and not args.fetches):
            ap.error("--side needs --out, and --side fixed --fetches")
        run_side(args)
    elif args.replay_only:
        part2(args)
    else:
        ap.error("--side adaptive|fixed --out DIR, or --replay-only")


if __name__ == "__main__":
    main()
