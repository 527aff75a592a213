"""Adaptive revisiting vs a fixed-interval recrawl with the same number of fetches.

Part 1 (simulated clock, no waiting): N URLs on H hosts whose pages change as Poisson processes
with known rates (per URL mean change interval log-uniform between 1 hour and 90 days, 15% never
change; front pages of "news" hosts every 30-90 minutes). The continuous crawl's own code
(``RevisitPolicy`` + ``apply_visit``: the transition the crawl applies after each visit) runs
batches every 10 simulated minutes over D days; then a fixed-interval recrawl gets exactly the
same number of fetches, spread evenly (the comparison of Sigurðsson's AR paper). Printed: share
of changes captured (a visit captures a change when the page has a version it had not seen) and
the ratio adaptive / fixed.

Part 2 (``--replay``, needs the pywb oracle venv): fetch-to-replayable on the loopback. A
bounded run of the real crawler over pages on several loopback hosts with the production
politeness defaults, its closed WARCs indexed into the live collection (``nrt``) as
``run_batch`` does, pywb polled until each capture replays. Printed: median and max seconds
from fetch to replayable (target <= 300 s).

    .venv/bin/python bench/continuous/bench_continuous.py [--urls 10000 --hosts 100 --days 30]
        [--replay]
"""

from __future__ import annotations

import argparse
import datetime as dt
import heapq
import math
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

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


def simulate_fixed(pages: list[Page], days: float, fetches: int, seed: int):
    """The same number of fetches, each URL at the same interval (staggered phases)."""
    reset(pages, seed)
    end = days * 86400
    interval = len(pages) * end / fetches
    phase_rng = random.Random(seed + 1)
    events = []
    for i in range(len(pages)):
        t = phase_rng.uniform(0, interval)
        while t <= end:
            events.append((t, i))
            t += interval
    events.sort()
    seen = [-1] * len(pages)
    captured = 0
    for t, i in events:
        version = pages[i].advance(t)
        if seen[i] >= 0 and version != seen[i]:
            captured += 1
        seen[i] = version
    for p in pages:
        p.advance(end)
    return len(events), captured, sum(p.changes for p in pages), interval


def part1(args: argparse.Namespace) -> None:
    pages = make_pages(args.urls, args.hosts, args.seed)
    policies = {
        "adaptive": RevisitPolicy(min_wait_s=HOUR / 2),
        "adaptive+elapsed": RevisitPolicy(min_wait_s=HOUR / 2, use_elapsed=True),
    }
    print(
        f"{len(pages)} URLs on {args.hosts} hosts, {args.days} simulated days, batch every 10 min"
    )
    for name, policy in policies.items():
        started = time.perf_counter()
        fetches, captured, total = simulate_adaptive(pages, args.days, policy, args.seed)
        sim_s = time.perf_counter() - started
        f_fetches, f_captured, f_total, interval = simulate_fixed(
            pages, args.days, fetches, args.seed
        )
        if total != f_total:
            raise SystemExit(
                f"benchmark FAILED: the two strategies saw different change histories"
                f" ({total} vs {f_total} changes)"
            )
        print(
            f"{name:>17}: {fetches} fetches, {captured}/{total} changes captured "
            f"({captured / total:.1%}), {sim_s:.1f} s to simulate"
        )
        print(
            f"{'fixed interval':>17}: {f_fetches} fetches (every {interval / 3600:.1f} h), "
            f"{f_captured}/{f_total} captured ({f_captured / f_total:.1%})"
        )
        print(f"{'ratio':>17}: {captured / f_captured:.2f}x the changes for the same fetches")


def part2(args: argparse.Namespace) -> None:
    from bench.continuous.replay_latency import measure

    measure(args.replay_pages, args.replay_hosts, args.warc_size)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--urls", type=int, default=10000)
    ap.add_argument("--hosts", type=int, default=100)
    ap.add_argument("--days", type=float, default=30)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--replay", action="store_true", help="also measure fetch-to-replayable")
    ap.add_argument("--replay-pages", type=int, default=200)
    ap.add_argument("--replay-hosts", type=int, default=10)
    ap.add_argument("--warc-size", type=int, default=20_000, help="WARC rotation size (replay)")
    ap.add_argument("--replay-only", action="store_true", help="skip the policy simulation")
    ap.add_argument("--real", action="store_true", help="only the run through the real crawler")
    ap.add_argument("--real-urls", type=int, default=500)
    ap.add_argument("--real-hosts", type=int, default=10)
    ap.add_argument("--real-days", type=float, default=3)
    ap.add_argument("--real-step-h", type=float, default=2)
    args = ap.parse_args()
    if args.real:
        from bench.continuous.real_crawl import measure as real

        real(args.real_urls, args.real_hosts, args.real_days, args.real_step_h, args.seed)
        return
    if not args.replay_only:
        part1(args)
    if args.replay or args.replay_only:
        part2(args)


if __name__ == "__main__":
    main()
