"""Reading back one bounded crawl run: the visits it made and the links it found.

Why both crawl.log and the WARCs: crawl.log has every URI's outcome (failures, robots
exclusions, and the links left at the hop limit, which are the continuous crawl's new URLs) and
the fetch time; the WARC records have what the next visit needs (ETag, Last-Modified, the
record's file/offset/id for the dedup index) and the body for the noise-stripped digest.

The body a noise rule reads is decoded by the crawler's bounded inflation (crawler/inflate.py,
the template's default ``max_inflate_bytes``): a record that inflates past it (a compression
bomb, or a page too large to judge by a prefix) gets no noise digest — the strict payload
digest judges it — and a warning names it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator
from warcio.recordloader import ArcWarcRecord

from crawler.inflate import Inflater, record_body
from harvest.continuous.noise import NoiseFilter
from harvest.continuous.urlstate import Visit
from harvestflow.contracts.jobdir import JobDir
from harvestflow.formats.crawllog import CrawlLogLine
from harvestflow.formats.fetch_status import FetchStatus

log = logging.getLogger(__name__)
# never attempted in the run: out of scope, trap, operator, quota, time limit
NOT_ATTEMPTED = frozenset(
    {
        FetchStatus.UNATTEMPTED,
        FetchStatus.OUT_OF_SCOPE,
        FetchStatus.BLOCKED_BY_USER,
        FetchStatus.DEEMED_CHAFF,
        FetchStatus.BLOCKED_BY_QUOTA,
        FetchStatus.BLOCKED_BY_RUNTIME_LIMIT,
    }
)
PROFILE_SUFFIXES = ("identical-payload-digest", "server-not-modified")


@dataclass
class WarcInfo:
    file: str
    offset: int
    record_id: str | None
    date: str | None
    etag: str | None
    last_modified: str | None
    profile: str | None
    noise_digest: str | None
    status: int | None


@dataclass
class RunOutput:
    visits: list[Visit] = field(default_factory=list)
    discovered: list[tuple[str, str, str, str]] = field(
        default_factory=list
    )  # url, via, hops, seed
    warcs: list[Path] = field(default_factory=list)
    bad_lines: int = 0


def data_warcs(out_dir: Path) -> list[Path]:
    """The closed data WARCs of a run (not the metadata WARC, not ``.open`` files)."""
    warc_dir = JobDir(out_dir).warcs
    if not warc_dir.is_dir():
        return []
    return sorted(
        p for p in warc_dir.glob("*.warc.gz") if "-metadata-" not in p.name and p.is_file()
    )


def read_warc_infos(
    paths: list[Path], noise: NoiseFilter, inflater: Inflater | None = None
) -> dict[str, WarcInfo]:
    """URL → what its last response/revisit record says (bodies read only where a rule applies)."""
    infos: dict[str, WarcInfo] = {}
    inflater = inflater or Inflater()
    for path in paths:
        with path.open("rb") as fh:
            it = ArchiveIterator(fh)
            for rec in it:
                if rec.rec_type not in ("response", "revisit"):
                    continue
                url = rec.rec_headers.get_header("WARC-Target-URI") or ""
                http = rec.http_headers
                profile = None
                if rec.rec_type == "revisit":
                    prof = rec.rec_headers.get_header("WARC-Profile") or ""
                    profile = next((p for p in PROFILE_SUFFIXES if prof.endswith(p)), prof)
                ndigest = None
                if rec.rec_type == "response" and noise.applies(url):
                    ndigest = _noise_digest(noise, url, rec, inflater, path)
                status = None
                if http is not None:
                    try:
                        status = int(http.get_statuscode())
                    except (TypeError, ValueError):
                        status = None
                infos[url] = WarcInfo(
                    file=path.name,
                    offset=it.get_record_offset(),
                    record_id=rec.rec_headers.get_header("WARC-Record-ID"),
                    date=rec.rec_headers.get_header("WARC-Date"),
                    etag=http.get_header("ETag") if http is not None else None,
                    last_modified=http.get_header("Last-Modified") if http is not None else None,
                    profile=profile,
                    noise_digest=ndigest,
                    status=status,
                )
    return infos


def _noise_digest(
    noise: NoiseFilter, url: str, rec: ArcWarcRecord, inflater: Inflater, path: Path
) -> str | None:
    """The noise-stripped digest of a record's decoded body; None when it inflates past the
    bounds (judged by its strict digest instead)."""
    got = record_body(rec, inflater)
    if got.token is not None:
        got.token.release()  # read now, dropped below: nothing else holds it
    if got.cut:
        log.warning(
            "%s: %s inflates past %d bytes: no noise digest (judged by its payload digest)",
            path.name,
            url,
            inflater.limit,
        )
        return None
    return noise.digest(url, got.body)


def read_run(out_dir: Path, noise: NoiseFilter) -> RunOutput:
    """Visits (one per crawl.log line of a seed or embed fetch) and links at the hop limit."""
    out = RunOutput(warcs=data_warcs(out_dir))
    infos = read_warc_infos(out.warcs, noise)
    log_path = JobDir(out_dir).crawl_log
    if not log_path.exists():
        log.warning("%s: no crawl.log", log_path)
        return out
    with log_path.open(encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, 1):
            entry, why = CrawlLogLine.read(line)
            if entry is None:
                out.bad_lines += 1
                log.warning("%s:%d: bad crawl.log line skipped: %s", log_path, lineno, why)
                continue
            status = entry.status
            hops = entry.hops
            url = entry.url
            if "P" in hops:  # prerequisites (robots.txt) are not revisited on their own
                continue
            via = entry.via or ""
            seed = entry.seed
            if status in (FetchStatus.TOO_MANY_LINK_HOPS, FetchStatus.TOO_MANY_EMBED_HOPS):
                out.discovered.append((url, via, hops, seed or via))
                continue
            if status in NOT_ATTEMPTED:
                continue
            info = infos.get(url)
            digest = entry.digest
            mime = None if entry.mime in (None, "no-type") else entry.mime
            notes = ",".join(entry.annotations)  # substring tests, as before
            profile = info.profile if info else None
            if profile is None and "duplicate:server-not-modified" in notes:
                profile = "server-not-modified"
            elif profile is None and "duplicate:digest" in notes:
                profile = "identical-payload-digest"
            out.visits.append(
                Visit(
                    url=url,
                    fetched_at=entry.fetched_at(),
                    status=status,
                    mime=mime,
                    digest=digest,
                    noise_digest=info.noise_digest if info else None,
                    etag=info.etag if info else None,
                    last_modified=info.last_modified if info else None,
                    revisit_profile=profile,
                    warc_file=info.file if info else None,
                    warc_offset=info.offset if info else None,
                    record_id=info.record_id if info else None,
                    warc_date=info.date if info else None,
                    hops=hops,
                    seed=seed,
                )
            )
    return out
