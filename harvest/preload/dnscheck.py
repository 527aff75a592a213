"""Running the DNS check at scale: worker processes, files, settings.

Why: one asyncio loop on one core tops out near the speed of Python's datagram handling, so a
big check runs one :class:`~harvest.preload.dnswire.DnsChecker` per worker process, each fed with
batches through a queue and keeping its own window of queries full (a slow domain holds one
slot, never a whole batch). The parent keeps a bounded number of domains outstanding, so memory
does not grow with the input, and yields results as they come.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import multiprocessing as mp
import os
import queue
import threading
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harvest.preload.dnsbase import format_result, timed_out
from harvest.preload.dnswire import (
    DnsChecker,
    DnsSettings,
    Result,
    new_event_loop,
    parse_nameserver,
    read_hosts_file,
)
from harvest.preload.normalise import RejectedDomain, normalise_host
from harvestflow.atomic import atomic_open, commit
from harvestflow.formats.fields import tsv_field
from harvestflow.progress import Progress

log = logging.getLogger(__name__)

_FLUSH_EVERY = 2000
_FLUSH_INTERVAL_S = 0.2


def system_nameservers() -> tuple[tuple[str, int], ...]:
    """The resolvers of /etc/resolv.conf (production default when none is configured)."""
    import dns.resolver

    try:
        resolver = dns.resolver.Resolver()
    except dns.resolver.NoResolverConfiguration:
        return ()
    return tuple((str(ns), int(resolver.port)) for ns in resolver.nameservers)


def dns_settings(
    settings: Any = None,
    nameservers: Iterable[str] | None = None,
    hosts_file: str | None = None,
    static_only: bool | None = None,
    **overrides: Any,
) -> DnsSettings:
    """DnsSettings from the ``[preload]`` section, explicit arguments winning."""
    section: dict[str, Any] = {}
    if settings is not None:
        section = dict(settings.data.get("preload", {}))
    names = list(nameservers) if nameservers else list(section.get("nameservers", []))
    servers = tuple(parse_nameserver(n) for n in names)
    hosts = hosts_file if hosts_file is not None else section.get("hosts_file", "")
    static = read_hosts_file(hosts) if hosts else {}
    if static_only is None:
        static_only = bool(section.get("static_only", False))
    if not servers and not static_only:
        servers = system_nameservers()
    values: dict[str, Any] = {
        "nameservers": servers,
        "timeout_s": float(section.get("dns_timeout_s", 2.0)),
        "retries": int(section.get("dns_retries", 2)),
        "max_in_flight": int(section.get("dns_max_in_flight", 2000)),
        "static": static,
        "static_only": static_only,
    }
    values.update(overrides)
    return DnsSettings(**values)


def default_processes(settings: Any = None) -> int:
    configured = 0
    if settings is not None:
        configured = int(settings.get("preload", "dns_processes", 0) or 0)
    return configured if configured > 0 else (os.cpu_count() or 1)


# --- in this process (a loop in a helper thread) -------------------------------------------------
def _iter_inline(domains: Iterable[str], settings: DnsSettings) -> Iterator[Result]:
    results: queue.SimpleQueue[Result | None] = queue.SimpleQueue()
    failure: list[BaseException] = []

    async def feed() -> AsyncIterator[str]:
        for domain in domains:
            yield domain

    def run() -> None:
        loop = new_event_loop()
        try:
            checker = DnsChecker(settings, lambda d, c, x: results.put((d, c, x)))
            loop.run_until_complete(checker.run(feed()))
        except BaseException as exc:
            failure.append(exc)
        finally:
            loop.close()
            results.put(None)

    thread = threading.Thread(target=run, name="dns-check", daemon=True)
    thread.start()
    while (item := results.get()) is not None:
        yield item
    thread.join()
    if failure:
        raise failure[0]


# --- in worker processes -------------------------------------------------------------------------
def _worker(settings: DnsSettings, inbox: Any, outbox: Any) -> None:
    """Process body: check batches from ``inbox`` until None, send result lists to ``outbox``."""
    buffer: list[Result] = []

    def on_result(domain: str, cls: str, detail: str) -> None:
        buffer.append((domain, cls, detail))
        if len(buffer) >= _FLUSH_EVERY:
            outbox.put(buffer.copy())
            buffer.clear()

    async def feed() -> AsyncIterator[str]:
        loop = asyncio.get_running_loop()
        while True:
            batch = await loop.run_in_executor(None, inbox.get)
            if batch is None:
                return
            for domain in batch:
                yield domain

    async def flusher() -> None:
        while True:
            await asyncio.sleep(_FLUSH_INTERVAL_S)
            if buffer:
                outbox.put(buffer.copy())
                buffer.clear()

    async def main() -> None:
        task = asyncio.ensure_future(flusher())
        try:
            await DnsChecker(settings, on_result).run(feed())
        finally:
            task.cancel()

    loop = new_event_loop()
    try:
        loop.run_until_complete(main())
    finally:
        loop.close()
    if buffer:
        outbox.put(buffer)
    outbox.put(None)


def _iter_processes(
    domains: Iterable[str], settings: DnsSettings, processes: int, batch_size: int
) -> Iterator[Result]:
    ctx = mp.get_context("spawn")  # no fork of a threaded parent (Airflow task, DB pools)
    inbox: Any = ctx.Queue()
    outbox: Any = ctx.Queue()
    workers = [
        ctx.Process(target=_worker, args=(settings, inbox, outbox), daemon=True)
        for _ in range(processes)
    ]
    for worker in workers:
        worker.start()
    source = iter(domains)
    submitted = received = finished = 0
    exhausted = False
    limit = processes * (settings.max_in_flight + batch_size) * 2

    def top_up() -> None:
        nonlocal submitted, exhausted
        while not exhausted and submitted - received < limit:
            batch = list(itertools.islice(source, batch_size))
            if not batch:
                exhausted = True
                for _ in workers:
                    inbox.put(None)
                return
            inbox.put(batch)
            submitted += len(batch)

    try:
        top_up()
        while finished < len(workers):
            try:
                message = outbox.get(timeout=5)
            except queue.Empty:
                dead = [w for w in workers if w.exitcode not in (None, 0)]
                if dead:
                    raise RuntimeError(
                        f"DNS check worker died (exit code {dead[0].exitcode})"
                    ) from None
                continue
            if message is None:
                finished += 1
                continue
            received += len(message)
            yield from message
            top_up()
    finally:
        for worker in workers:
            if worker.is_alive():
                worker.terminate()
            worker.join(timeout=5)
        inbox.close()
        outbox.close()


def iter_check(
    domains: Iterable[str],
    settings: DnsSettings,
    processes: int = 1,
    batch_size: int = 2000,
) -> Iterator[Result]:
    """Check ``domains``; yields (domain, class, detail) in completion order.

    ``processes`` <= 1 runs in this process (a loop in a helper thread), more starts that many
    worker processes. Closing the generator early stops the workers.
    """
    if processes <= 1:
        return _iter_inline(domains, settings)
    return _iter_processes(domains, settings, processes, batch_size)


# --- files ---------------------------------------------------------------------------------------
def read_domain_lines(path: Path) -> Iterator[str]:
    """Names of a one-per-line file; blank lines and # comments skipped.

    For the preload's own chunk files (already normalised); a file given by a person goes
    through :func:`read_checked_names`.
    """
    with path.open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            name = line.strip()
            if name and not name.startswith("#"):
                yield name


NOT_UTF8 = "not-utf-8"


@dataclass(frozen=True)
class RejectedLine:
    """A line of a name list that is not a domain name: never asked, reported with its line."""

    line: int
    reason: str  # one of harvest.preload.normalise's reason words, or NOT_UTF8
    detail: str
    text: str

    def message(self, source: str) -> str:
        detail = f" ({tsv_field(self.detail)})" if self.detail else ""
        return f"{source} line {self.line}: {self.reason}{detail}: {tsv_field(self.text)[:200]}"

    def tsv(self) -> str:
        fields = (str(self.line), self.reason, self.detail[:300], self.text[:300])
        return "\t".join(tsv_field(f) for f in fields) + "\n"


REJECTS_HEADER = "line\treason\tdetail\ttext\n"


def read_checked_names(
    path: Path, extra_suffixes: frozenset[str], rejects: list[RejectedLine]
) -> Iterator[str]:
    """The host names of a person's one-per-line list, as DNS asks them (IDN in punycode).

    Why checked: a URL, a line with spaces, tabs or NUL, a wildcard, an IP address or a bare
    public suffix is no name to ask DNS about; asked anyway it came back with a class that
    looked like a verdict (a URL ``active``), and a tab in it shifted the output's columns.
    Each such line is appended to ``rejects`` (with its number) instead; blank lines and
    ``#`` comments are skipped. The checks are the preload's (``normalise_host``), with
    ``extra_suffixes`` accepted as suffixes (``test``).
    """
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, 1):
            try:
                line = raw.decode("utf-8").strip()
            except UnicodeDecodeError as exc:
                text = raw.decode("utf-8", errors="replace").strip()
                rejects.append(RejectedLine(number, NOT_UTF8, str(exc), text))
                continue
            if not line or line.startswith("#"):
                continue
            try:
                yield normalise_host(line, extra_suffixes).host
            except RejectedDomain as exc:
                rejects.append(RejectedLine(number, exc.reason, exc.detail, line))


def _done_in(path: Path) -> set[str]:
    done: set[str] = set()
    if path.exists():
        with path.open(encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.endswith("\n") and "\t" in line:  # a torn last line is checked again
                    done.add(line.split("\t", 1)[0])
    return done


def check_dns_file(
    input_path: Path,
    output_path: Path,
    settings: DnsSettings,
    processes: int = 1,
    bar: bool = False,
    extra_suffixes: frozenset[str] = frozenset(),
    rejected: list[RejectedLine] | None = None,
) -> dict[str, int]:
    """Check every name of ``input_path`` into ``output_path`` (``domain<TAB>class<TAB>detail``).

    Results go to ``<output>.part`` as they come (flushed often) and the file is renamed when
    complete; a re-run after a kill reads the part file and checks only the names missing
    from it, so nothing is lost or repeated. Lines that are not domain names are written to
    ``<output>.rejects.tsv`` (``line, reason, detail, text``) and counted as ``rejected``;
    ``timeouts`` counts the names no nameserver answered at all. ``rejected`` (when given)
    receives the rejected lines too.
    """
    part = output_path.with_name(output_path.name + ".part")
    rejects_path = rejects_file(output_path)
    done = _done_in(part)
    if done:
        log.info("resuming %s: %d names already checked", part, len(done))
        _truncate_torn_line(part)
    rejected = [] if rejected is None else rejected
    total = sum(1 for _ in read_checked_names(input_path, extra_suffixes, rejected))
    counts: dict[str, int] = {"names": total, "resumed": len(done), "rejected": len(rejected)}
    counts["timeouts"] = 0
    write_rejects(rejects_path, rejected)
    todo = (n for n in read_checked_names(input_path, extra_suffixes, []) if n not in done)
    with (
        part.open("a", encoding="utf-8") as out,
        Progress("dns check", total, unit="domains", bar=bar) as progress,
    ):
        progress.advance(len(done))
        pending = 0
        for domain, cls, detail in iter_check(todo, settings, processes=processes):
            out.write(format_result((domain, cls, detail)))
            counts[cls] = counts.get(cls, 0) + 1
            counts["timeouts"] += timed_out(cls, detail)
            pending += 1
            if pending >= 5000:
                out.flush()
                progress.advance(pending)
                pending = 0
        progress.advance(pending)
    # appended to across resumed runs (not a fresh temporary file): renamed when complete
    commit(part, output_path)
    return counts


def rejects_file(output_path: Path) -> Path:
    """Where the rejected lines of a check written to ``output_path`` go."""
    return output_path.with_name(output_path.name + ".rejects.tsv")


def write_rejects(path: Path, rejected: list[RejectedLine]) -> None:
    """The rejects file (header + one line each), written whole under a temporary name."""
    with atomic_open(path, "w") as handle:
        handle.write(REJECTS_HEADER)
        handle.writelines(r.tsv() for r in rejected)


def _truncate_torn_line(path: Path) -> None:
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        cut = data.rfind(b"\n") + 1
        with path.open("r+b") as handle:
            handle.truncate(cut)
