"""Synthetic Heritrix crawl.log generator for the QA benchmark.

Why: the benchmark needs 10,000,000 realistic lines (BnF-like TLD, MIME and status shares,
Zipf-distributed host sizes, duplicates, budget hits, robots and DNS failures) without a real
crawl. Deterministic for a given seed so runs are comparable.

The lines a fast path would like to skip are there in fixed shares (chosen, not measured on a
real log; bench/README.md states them): MIME types with parameters, non-ASCII URLs (IDN hosts
in Unicode form, UTF-8 paths) and odd lines (truncated, garbage, a status out of range). The
generator also writes ``<log>.truth.json``: the status and MIME counts of the lines a correct
parser accepts and the number it must reject, so the benchmark checks QA against what was
written, not against another parser.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
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
    ("-404", 0.001),
    ("-61", 0.001),
    ("-7", 0.0005),
    ("-3", 0.0005),
    ("-50", 0.0005),
]
HOPS = ["-", "L", "LL", "LLE", "LLL", "R", "LE", "P", "LLLL"]

# MIME types that carry a charset parameter in a share of their lines
TEXTUAL = {"text/html", "text/css", "text/plain", "application/javascript"}
CHARSET_SHARE = 0.25  # of textual lines: "text/html;charset=utf-8" (spaces removed, one field)
# of textual lines: "text/html; charset=utf-8" as sent: 13 fields, a shifted line that a
# crawl.log reader must refuse and name (harvestflow.formats.crawllog: a 13th field is only
# Heritrix's {...} extra-info object), counted with the odd lines to reject
RAW_PARAM_SHARE = 0.001
IDN_HOST_SHARE = 0.005  # of hosts: Unicode names (café12.fr), written as such
UTF8_PATH_SHARE = 0.02  # of lines: a UTF-8 path (/actualités/été-12.html)
# odd lines a parser must reject (and name), per line written
TRUNCATED_SHARE = 1e-4  # cut mid-line (crash, concatenated logs)
GARBAGE_SHARE = 5e-5  # a stack trace, an HTML fragment, junk in the log
BAD_STATUS_SHARE = 5e-5  # a status out of the 32-bit range (-99999999999)
IDN_WORDS = ["café", "élysée", "château", "crème", "forêt", "musée", "bücher", "straße"]
GARBAGE = [
    "\tat org.archive.crawler.frontier.WorkQueueFrontier.next(WorkQueueFrontier.java:812)",
    "java.lang.OutOfMemoryError: Java heap space",
    "<html><head><title>502 Bad Gateway</title></head>",
    "#@!~~ ~~ \x7f\x7f ^^^",
]


def truth_path(path: Path) -> Path:
    return path.with_name(path.name + ".truth.json")


def generate(
    path: Path, lines: int, hosts: int = 50_000, seed: int = 1, chunk: int = 200_000
) -> None:
    rng = np.random.default_rng(seed)
    r = random.Random(seed)
    names = []
    for i in range(hosts):
        www = "www." if r.random() < 0.6 else ""
        tld = r.choice(TLDS)
        if r.random() < IDN_HOST_SHARE:
            names.append(f"{www}{r.choice(IDN_WORDS)}{i}.{tld}")
        else:
            names.append(f"{www}site{i}.{tld}")
    host_names = np.array(names, dtype=object)
    status_counts: Counter[str] = Counter()
    mime_counts: Counter[str] = Counter()
    odd = {"truncated": 0, "garbage": 0, "bad status": 0, "13 fields": 0}
    shares = {"charset": 0, "raw parameter": 0, "IDN host": 0, "UTF-8 path": 0}
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
            kind = rng.random(n)  # odd line?
            param = rng.random(n)
            utf8 = rng.random(n) < UTF8_PATH_SHARE
            rows = []
            for i in range(n):
                k = done + i
                sec = k // 1000
                ts = f"2026-11-22T{(sec // 3600) % 24:02d}:{(sec // 60) % 60:02d}:{sec % 60:02d}.{k % 1000:03d}Z"
                host = host_names[h[i]]
                status = st[i]
                raw = False  # a MIME parameter written with its space (13 fields)
                if utf8[i]:
                    uri = f"http://{host}/actualités/été-{pages[i]}.html"
                    shares["UTF-8 path"] += 1
                else:
                    uri = f"http://{host}/p/{pages[i]}.html"
                if not host.isascii():
                    shares["IDN host"] += 1
                if status.startswith("-"):
                    size = "-"
                    mime = "unknown"
                    fetch = "-"
                    digest = "-"
                    ann = "Q:serverMaxSuccessKb" if status == "-5003" else "-"
                else:
                    size = str(sizes[i])
                    mime = mi[i]
                    if mime in TEXTUAL and param[i] < CHARSET_SHARE:
                        charset = "iso-8859-1" if param[i] < CHARSET_SHARE / 5 else "utf-8"
                        if param[i] < RAW_PARAM_SHARE:
                            mime += f"; charset={charset}"
                            raw = True
                        else:
                            mime += f";charset={charset}"
                            shares["charset"] += 1
                    fetch = f"20261122{(sec // 3600) % 24:02d}{(sec // 60) % 60:02d}{sec % 60:02d}{k % 1000:03d}+{durs[i]}"
                    digest = f"sha1:{pages[i]:032d}"
                    ann = "duplicate:digest" if dup[i] else "-"
                via = "-" if hp[i] == "-" else f"http://{host}/"
                line = (
                    f"{ts} {status:>5} {size:>10} {uri} {hp[i]} {via} {mime} #{k % 50:03d} "
                    f"{fetch} {digest} http://{host}/ {ann}"
                )
                u = kind[i]
                if u < TRUNCATED_SHARE:
                    cut = len(line) * (1 + k % 4) // 10  # 10-40 % of the line
                    line = line[: max(cut, 1)]
                    odd["truncated"] += 1
                elif u < TRUNCATED_SHARE + GARBAGE_SHARE:
                    line = GARBAGE[k % len(GARBAGE)]
                    odd["garbage"] += 1
                elif u < TRUNCATED_SHARE + GARBAGE_SHARE + BAD_STATUS_SHARE:
                    line = line.replace(f" {status:>5} ", " -99999999999 ", 1)
                    odd["bad status"] += 1
                elif raw:
                    odd["13 fields"] += 1
                    shares["raw parameter"] += 1
                else:
                    # what a correct parser reads from this line (awk's $2 and $7)
                    status_counts[str(int(status))] += 1
                    mime_counts[mime] += 1
                rows.append(line + "\n")
            out.write("".join(rows))
            done += n
    truth = {
        "lines": lines,
        "rejected": sum(odd.values()),
        "odd": odd,
        "shares": shares,
        "S": dict(status_counts),
        "M": dict(mime_counts),
    }
    truth_path(path).write_text(json.dumps(truth, indent=1, ensure_ascii=False) + "\n")
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
