"""One way to run a crawl job in a test: the fast template, the job dict and the crawler subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from warcio.archiveiterator import ArchiveIterator

from app.demo.samplesite import SampleSite

REPO = Path(__file__).resolve().parents[2]


ORACLE_BIN = REPO / ".oracle-venv" / "bin"


FAST_TEMPLATE = {
    "delay_factor": 0.0,
    "min_delay_ms": 0,
    "max_delay_ms": 0,
    "connections_per_host": 4,
    "retries": 1,
    "download_timeout_s": 10,
    "dedup_mime_exclude": "^text/",
}

# the template's HTTP clients (crawler/asyncio_fetch.py): crawl tests that exercise the fetch
# itself run with each
FETCH_CLIENTS = ("twisted", "asyncio")


@dataclass
class CrawlResult:
    out: Path
    summary: dict[str, Any]
    proc: subprocess.CompletedProcess[str]

    @property
    def crawl_log(self) -> list[str]:
        return (self.out / "logs" / "crawl.log").read_text().splitlines()

    def log_fields(self) -> list[list[str]]:
        return [line.split() for line in self.crawl_log]

    def data_warcs(self) -> list[Path]:
        return sorted(p for p in (self.out / "warcs").glob("*.warc.gz") if "metadata" not in p.name)

    def response_uris(self) -> set[str]:
        """The target URIs of the response records in the data WARCs (what was captured)."""
        captured = set()
        for warc in self.data_warcs():
            with warc.open("rb") as fh:
                for rec in ArchiveIterator(fh):
                    if rec.rec_type == "response":
                        captured.add(rec.rec_headers.get_header("WARC-Target-URI"))
        return captured

    def line_for(self, url: str) -> list[str]:
        found = [f for f in self.log_fields() if f[3] == url]
        assert found, f"{url} not in crawl.log"
        return found[-1]


def make_job(
    site: SampleSite, seeds: list[str], template: dict | None = None, **extra: Any
) -> dict:
    job = {
        "job_id": extra.pop("job_id", 7),
        "harvest_id": extra.pop("harvest_id", 2),
        "seeds": seeds,
        "template": {**FAST_TEMPLATE, **(template or {})},
        "resolve": site.resolve_map(),
    }
    job.update(extra)
    return job


def run_crawl(job: dict, out: Path, *, check: bool = True, timeout: float = 120) -> CrawlResult:
    """Run ``python -m crawler --job`` on ``job`` into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    job_path = out.parent / f"{out.name}-job.json"
    job_path.write_text(json.dumps(job))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "crawler",
            "--job",
            str(job_path),
            "--out",
            str(out),
            "--progress-interval",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
    )
    if check:
        assert proc.returncode == 0, proc.stderr[-3000:]
    summary_path = out / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    return CrawlResult(out, summary, proc)


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=20) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def our_cdx(meta_warc: Path, dest: Path) -> None:
    with meta_warc.open("rb") as fh:
        for rec in ArchiveIterator(fh):
            if (rec.rec_headers.get_header("WARC-Target-URI") or "").startswith(
                "metadata://harvestflow/crawl/index/cdx"
            ):
                dest.write_bytes(rec.content_stream().read())
                return
    raise AssertionError("no CDX in the metadata WARC")


def fetched(lines: list[str]) -> list[str]:
    return [
        ln.split()[3]
        for ln in lines
        if len(ln.split()) == 12 and int(ln.split()[1]) > 0 and ln.split()[4] != "P"
    ]


def _job_row(db_engine) -> int:
    with db_engine.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO harvestdefinitions (harvest_id, name, kind) VALUES (1, 'h', 'partial')"
            )
        )
        return int(
            conn.execute(
                sa.text(
                    "INSERT INTO jobs (harvest_id, harvest_num, job_index, status, channel,"
                    " template_name, template, seedlist) VALUES (1, 1, 0, 1, 'CIBLEE', 't', '{}', '')"
                    " RETURNING job_id"
                )
            ).scalar_one()
        )


def _oracle_cdx11(warcs: list[Path]) -> list[str]:
    out = subprocess.run(
        [str(ORACLE_BIN / "cdxj-indexer"), "-11", *map(str, warcs)],
        check=True,
        capture_output=True,
    ).stdout.decode("utf-8")
    return [ln for ln in out.split("\n") if ln and not ln.startswith(" CDX")]


def _bytes_order(lines: list[str]) -> list[str]:
    return sorted(lines, key=lambda s: s.encode("utf-8"))


def start_crawl(job: dict, job_path: Path, out: Path) -> subprocess.Popen[bytes]:
    """The crawler process on ``job`` (written to ``job_path``) in the background, for a test
    that kills it mid-crawl and then resumes the job with :func:`run_crawl`."""
    job_path.write_text(json.dumps(job))
    return subprocess.Popen(
        [sys.executable, "-m", "crawler", "--job", str(job_path), "--out", str(out)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def crawl_side_by_side(jobs: dict[str, dict], tmp_path: Path) -> dict[str, Any]:
    """Each job of ``jobs`` crawled by its own crawler process, all at once (:func:`run_crawl`
    in a thread each, into ``tmp_path/<name>``); their results by name."""
    results: dict[str, Any] = {}

    def crawl(name: str) -> None:
        results[name] = run_crawl(jobs[name], tmp_path / name, timeout=300)

    threads = [threading.Thread(target=crawl, args=(n,)) for n in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results
