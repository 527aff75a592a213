"""Synthetic Heritrix crawl.log generator for the QA benchmark.

Why: the benchmark needs 10,000,000 realistic lines (BnF-like TLD, MIME and status shares,
Zipf-distributed host sizes, duplicates, budget hits, robots and DNS failures) without a real
crawl. Deterministic for a given seed so runs are comparable.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

import numpy as np

TLDS = (["fr"] * 62) + (["com"] * 27) + (["net"] * 2) + ["org"] * 4 + ["re", "nc", "eu", "de", "be"]
MIMES = [
    ("text/html", 0.55),
    ("text/css", 0.03),
    ("text/plain", 0.017),
    ("image/jpeg", 0.20),
    ("image/png", 0.10),
    ("image/gif", 0.062),
    ("application/pdf", 0.02),
    ("application/javascript", 0.019),
    ("audio/mpeg", 0.001),
    ("video/mp4", 0.001),
]
STATUSES = [
    ("200", 0.86),
    ("404", 0.04),
    ("301", 0.03),
    ("302", 0.02),
    ("500", 0.005),
    ("-9998", 0.015),
    ("-5003", 0.015),
    ("-6", 0.005),
    ("-1", 0.004),
    ("-4000", 0.003),
    ("-2", 0.003),
]
HOPS = ["-", "L", "LL", "LLE", "LLL", "R", "LE", "P", "LLLL"]


def generate(
    path: Path, lines: int, hosts: int = 50_000, seed: int = 1, chunk: int = 200_000
) -> None:
    rng = np.random.default_rng(seed)
    r = random.Random(seed)
    host_names = np.array(
        [f"{'www.' if r.random() < 0.6 else ''}site{i}.{r.choice(TLDS)}" for i in range(hosts)],
        dtype=object,
    )
    zipf_p = 1.0 / np.arange(1, hosts + 1) ** 1.1
    zipf_p /= zipf_p.sum()
    mime_names = np.array([m for m, _ in MIMES], dtype=object)
    mime_p = np.array([p for _, p in MIMES])
    mime_p /= mime_p.sum()
    st_names = np.array([s for s, _ in STATUSES], dtype=object)
    st_p = np.array([p for _, p in STATUSES])
    st_p /= st_p.sum()
    hops = np.array(HOPS, dtype=object)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as out:
        done = 0
        while done < lines:
            n = min(chunk, lines - done)
            h = rng.choice(hosts, size=n, p=zipf_p)
            st = rng.choice(st_names, size=n, p=st_p)
            mi = rng.choice(mime_names, size=n, p=mime_p)
            sizes = rng.integers(0, 400_000, size=n)
            dup = rng.random(n) < 0.12
            hp = rng.choice(hops, size=n)
            durs = rng.integers(1, 3000, size=n)
            pages = rng.integers(0, 10_000_000, size=n)
            rows = []
            for i in range(n):
                k = done + i
                sec = k // 1000
                ts = f"2026-11-22T{(sec // 3600) % 24:02d}:{(sec // 60) % 60:02d}:{sec % 60:02d}.{k % 1000:03d}Z"
                host = host_names[h[i]]
                status = st[i]
                uri = f"http://{host}/p/{pages[i]}.html"
                if status.startswith("-"):
                    size = "-"
                    mime = "unknown"
                    fetch = "-"
                    digest = "-"
                    ann = "Q:serverMaxSuccessKb" if status == "-5003" else "-"
                else:
                    size = str(sizes[i])
                    mime = mi[i]
                    fetch = f"20261122{(sec // 3600) % 24:02d}{(sec // 60) % 60:02d}{sec % 60:02d}{k % 1000:03d}+{durs[i]}"
                    digest = f"sha1:{pages[i]:032d}"
                    ann = "duplicate:digest" if dup[i] else "-"
                via = "-" if hp[i] == "-" else f"http://{host}/"
                rows.append(
                    f"{ts} {status:>5} {size:>10} {uri} {hp[i]} {via} {mime} #{k % 50:03d} "
                    f"{fetch} {digest} http://{host}/ {ann}\n"
                )
            out.write("".join(rows))
            done += n
    tmp.replace(path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("path", type=Path)
    ap.add_argument("--lines", type=int, default=10_000_000)
    ap.add_argument("--hosts", type=int, default=50_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    generate(args.path, args.lines, args.hosts, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
