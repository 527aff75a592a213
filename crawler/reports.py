"""Heritrix's end-of-crawl reports, computed from crawl.log and the frontier state.

Every value a server could choose (hosts and URLs from links, MIME types, the seeds' redirect
targets from ``Location``) goes through harvestflow.formats.fields, so no report column shifts;
crawl.log lines with the wrong field count are left out and named in crawler.log.

Why from crawl.log: it is the one record that survives restarts (a resumed job appends to it),
so reports written from it cover every run of the job, and they agree with the log a curator
can grep. Formats (headers and columns) follow Heritrix 3 so existing scripts read them.
"""

from __future__ import annotations

import logging
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from crawler.state import CrawlState, FrontierState
from harvestflow.atomic import atomic_write_text
from harvestflow.formats.crawllog import CrawlLogLine
from harvestflow.formats.fetch_status import FetchStatus
from harvestflow.formats.fields import clean_field
from harvestflow.formats.urls import canonical_key, host_of

log = logging.getLogger(__name__)

CRAWL_STATUS_TEXT = {
    "complete": "Finished",
    "time_limit": "Finished - Timelimit hit",
    "unfinished": "Aborted by operator",
    "stopped": "Finished - Stopped by operator",
}


def is_disregard(status: int) -> bool:
    """Refused before fetching (scope, robots, traps, budgets, bad URLs)."""
    return status <= FetchStatus.DEEMED_CHAFF or status == FetchStatus.UNFETCHABLE_URI


@dataclass
class HostStats:
    urls: int = 0
    bytes: int = 0
    robots: int = 0
    novel_urls: int = 0
    novel_bytes: int = 0
    dup_urls: int = 0
    dup_bytes: int = 0
    notmod_urls: int = 0
    notmod_bytes: int = 0
    errors: int = 0


@dataclass
class Tally:
    processed: int = 0
    successes: int = 0
    failures: int = 0
    disregards: int = 0
    novel: int = 0
    dup: int = 0
    notmod: int = 0
    total_bytes: int = 0
    novel_bytes: int = 0
    dup_bytes: int = 0
    notmod_bytes: int = 0
    hosts: dict[str, HostStats] = field(default_factory=lambda: defaultdict(HostStats))
    mimes: Counter[str] = field(default_factory=Counter)
    mime_bytes: Counter[str] = field(default_factory=Counter)
    codes: Counter[str] = field(default_factory=Counter)
    sources: Counter[tuple[str, str]] = field(default_factory=Counter)
    by_key: dict[str, tuple[int, str]] = field(default_factory=dict)
    bad_lines: int = 0


def tally_crawl_log(path: Path) -> Tally:
    t = Tally()
    if not path.exists():
        return t
    with path.open(encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, 1):
            f, why = CrawlLogLine.read(line)
            if f is None:
                t.bad_lines += 1
                if t.bad_lines <= 10:
                    log.warning(
                        "%s:%d: bad crawl.log line left out of the reports: %s", path, lineno, why
                    )
                continue
            status = f.status
            size = f.size if f.size is not None and f.size >= 0 else 0
            host = host_of(f.url)
            hs = t.hosts[host]
            t.processed += 1
            t.codes[str(status)] += 1
            t.by_key[canonical_key(f.url)] = (status, f.url)
            if status == FetchStatus.ROBOTS_PRECLUDED:
                hs.robots += 1
            if status <= 0:
                if is_disregard(status):
                    t.disregards += 1
                else:
                    t.failures += 1
                    hs.errors += 1
                continue
            t.successes += 1
            t.total_bytes += size
            hs.urls += 1
            hs.bytes += size
            mime = f.mime or "-"
            t.mimes[mime] += 1
            t.mime_bytes[mime] += size
            t.sources[(f.seed or "-", host)] += 1
            notes = f.annotations
            if "duplicate:digest" in notes:
                t.dup += 1
                t.dup_bytes += size
                hs.dup_urls += 1
                hs.dup_bytes += size
            elif "duplicate:server-not-modified" in notes:
                t.notmod += 1
                t.notmod_bytes += size
                hs.notmod_urls += 1
                hs.notmod_bytes += size
            else:
                t.novel += 1
                t.novel_bytes += size
                hs.novel_urls += 1
                hs.novel_bytes += size
    return t


def _write(path: Path, text: str) -> None:
    atomic_write_text(path, text)


def _duration(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 86400}d{s % 86400 // 3600}h{s % 3600 // 60}m{s % 60}s"


def write_reports(
    report_dir: Path,
    crawl_log: Path,
    state: CrawlState,
    seeds: list[str],
    crawl_name: str,
    crawl_status: str,
    started: float,
) -> Tally:
    """Write the six Heritrix reports (+ source report); returns the tally for the summary."""
    report_dir.mkdir(parents=True, exist_ok=True)
    t = tally_crawl_log(crawl_log)
    if t.bad_lines:
        log.warning("%s: %d bad line(s) left out of the reports", crawl_log, t.bad_lines)
    elapsed = max(time.time() - started, 1e-6)
    crawled = [s for s in seeds if t.by_key.get(canonical_key(s), (0, ""))[0] > 0]
    lines = [
        f"crawl name: {crawl_name}",
        f"crawl status: {crawl_status}",
        f"duration: {_duration(elapsed)}",
        f"seeds crawled: {len(crawled)}",
        f"seeds uncrawled: {len(seeds) - len(crawled)}",
        f"hosts visited: {sum(1 for h in t.hosts.values() if h.urls)}",
        f"URIs processed: {t.processed}",
        f"URI successes: {t.successes}",
        f"URI failures: {t.failures}",
        f"URI disregards: {t.disregards}",
        f"novel URIs: {t.novel}",
        f"duplicate-by-hash URIs: {t.dup}",
        f"not-modified URIs: {t.notmod}",
        f"total crawled bytes: {t.total_bytes}",
        f"novel crawled bytes: {t.novel_bytes}",
        f"duplicate-by-hash crawled bytes: {t.dup_bytes}",
        f"not-modified crawled bytes: {t.notmod_bytes}",
        # payloads written as revisits instead of again (a 304's size is not known: not counted)
        f"storage saved by deduplication: {t.dup_bytes} bytes ({t.dup + t.notmod} revisits)",
        f"URIs/sec: {t.successes / elapsed:.2f}",
        f"KB/sec: {t.total_bytes / 1024 / elapsed:.0f}",
    ]
    _write(report_dir / "crawl-report.txt", "\n".join(lines) + "\n")

    redirects = {
        k[len("redirect:") :]: v
        for k, v in state.db.execute("SELECT key, value FROM meta WHERE key LIKE 'redirect:%'")
    }
    out = ["[code] [status] [seed] [redirect]"]
    for seed in seeds:
        code = t.by_key.get(canonical_key(seed), (0, ""))[0]
        status = "CRAWLED" if code > 0 else "NOTCRAWLED"
        redirect = clean_field(redirects.get(seed), empty="")
        out.append(f"{code} {status} {clean_field(seed)} {redirect}".rstrip())
    _write(report_dir / "seeds-report.txt", "\n".join(out) + "\n")

    remaining = state.queued_by_host()
    out = [
        "[#urls] [#bytes] [host] [#robots] [#remaining] [#novel-urls] [#novel-bytes]"
        " [#dup-by-hash-urls] [#dup-by-hash-bytes] [#not-modified-urls] [#not-modified-bytes]"
    ]
    for host, h in sorted(t.hosts.items(), key=lambda kv: (-kv[1].urls, kv[0])):
        out.append(
            f"{h.urls} {h.bytes} {clean_field(host)} {h.robots} {remaining.get(host, 0)} {h.novel_urls}"
            f" {h.novel_bytes} {h.dup_urls} {h.dup_bytes} {h.notmod_urls} {h.notmod_bytes}"
        )
    _write(report_dir / "hosts-report.txt", "\n".join(out) + "\n")

    out = ["[#urls] [#bytes] [mime-types]"]
    for mime, n in sorted(t.mimes.items(), key=lambda kv: (-kv[1], kv[0])):
        out.append(f"{n} {t.mime_bytes[mime]} {clean_field(mime)}")
    _write(report_dir / "mimetype-report.txt", "\n".join(out) + "\n")

    out = ["[#urls] [rescode]"]
    for rescode, n in sorted(t.codes.items(), key=lambda kv: (-kv[1], kv[0])):
        out.append(f"{n} {clean_field(rescode)}")
    _write(report_dir / "responsecode-report.txt", "\n".join(out) + "\n")

    out = ["[source] [host] [#urls]"]
    for (source, host), n in sorted(t.sources.items(), key=lambda kv: (kv[0][0], -kv[1])):
        out.append(f"{clean_field(source)} {clean_field(host)} {n}")
    _write(report_dir / "source-report.txt", "\n".join(out) + "\n")

    out = [
        "queue precedence currentSize totalEnqueues sessionBalance lastCost (averageCost)"
        " lastDequeueTime wakeTime totalSpend/totalBudget errorCount lastPeekUri lastQueuedUri"
    ]
    queued: dict[str, list[str]] = defaultdict(list)
    for (url,) in state.db.execute(
        "SELECT url FROM urls WHERE status=? ORDER BY rowid", (FrontierState.QUEUED,)
    ):
        queued[host_of(url)].append(url)
    enqueued = (FrontierState.QUEUED, FrontierState.DONE, FrontierState.FAILED)
    enqueues = Counter(
        host_of(u)
        for (u,) in state.db.execute("SELECT url FROM urls WHERE status IN (?, ?, ?)", enqueued)
    )
    for host in sorted(set(enqueues) | set(queued)):
        q = queued.get(host, [])
        hs = t.hosts.get(host, HostStats())
        out.append(
            f"{clean_field(host)} 1 {len(q)} {enqueues[host]} 0 1(1) - - {hs.urls}/-1 {hs.errors}"
            f" {clean_field(q[0] if q else None)} {clean_field(q[-1] if q else None)}"
        )
    _write(report_dir / "frontier-report.txt", "\n".join(out) + "\n")
    return t
