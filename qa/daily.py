"""The daily QA statistics (NAS_qual): one day's jobs → figures, report files, DB rows.

Why this shape: ``compute_day`` does the work from plain inputs (job descriptions, history,
origins) so that it runs on golden files in tests and from the CLI; ``run_daily`` is the thin
entry point the ``daily_qa_stats`` DAG and ``harvestflow qa daily`` call: read the DB, compute,
write ``<data_dir>/qa/<day>/``, replace the day's rows in qa_stats/qa_reports. Re-running a day
rewrites the same files byte for byte (no wall-clock time inside them, stable sort orders) and
the same rows, so backfills and retries are safe.
"""

from __future__ import annotations

import logging
from datetime import date, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import polars as pl

from harvestflow.contracts import ContractError
from harvestflow.contracts.jobdir import JobDir
from harvestflow.contracts.summary import JobSummary
from harvestflow.formats.fetch_status import FetchStatus
from harvestflow.formats.job_status import JobStatus
from harvestflow.progress import Progress
from harvestflow.settings import Settings, get_settings
from qa import codes, daily_compare, inputs, metrics, page_scores, report, store
from qa.crawllog_aggregate import CrawlLogError, aggregate_crawl_log
from qa.crawltable import empty_groups
from qa.day import DayComputation, JobOutcome
from qa.hosts import classify_hosts, host_of
from qa.inputs import JobInfo, crawl_log_path
from qa.report import stats_rows, summary_of

log = logging.getLogger(__name__)


def read_job_log(job: JobInfo, data_dir: Path, workers: int | None = None) -> JobOutcome:
    """Aggregate one job's crawl log, turning every failure into a named problem."""
    path = crawl_log_path(job.job_dir, data_dir)
    outcome = JobOutcome(job=job, log_path=path)
    if path is None:
        outcome.state, outcome.message = "missing", "job has no job directory"
        return outcome
    if not path.exists():
        outcome.state, outcome.message = "missing", f"crawl log missing: {path}"
        return outcome
    try:
        agg = aggregate_crawl_log(path, workers=workers)
    except CrawlLogError as exc:
        outcome.state, outcome.message = "unreadable", str(exc)
        return outcome
    except Exception as exc:  # one log the parser chokes on must not cost the whole day's report
        log.exception("QA: job %s: crawl log %s could not be aggregated", job.job_id, path)
        why = (str(exc).splitlines() or [""])[0][:200]
        outcome.state = "unreadable"
        outcome.message = f"{path}: could not be read ({type(exc).__name__}: {why})"
        return outcome
    outcome.aggregate = agg
    if agg.lines == 0:
        outcome.state, outcome.message = "empty", f"crawl log is empty: {path}"
    elif agg.bad_lines:
        outcome.state = "corrupt"
        first = agg.bad_examples[0] if agg.bad_examples else None
        where = f"; first at line {first.line}: {first.reason}" if first else ""
        outcome.message = f"{path}: {agg.bad_lines} of {agg.lines} lines unreadable, skipped{where}"
    return outcome


def _ints(statuses: frozenset[FetchStatus]) -> list[int]:
    """Plain numbers for polars (it would read an enum member as a category, not a number)."""
    return sorted(int(s) for s in statuses)


def _to_pandas(df: pl.DataFrame) -> pd.DataFrame:
    """Plain numpy/object columns (polars.to_pandas() would need pyarrow); integers without a
    null are handed over as int64 arrays, not Python lists (~0.1 s on 50,000 hosts)."""
    return pd.DataFrame(
        {
            c: df[c].cast(pl.Int64).to_numpy() if df[c].dtype.is_integer() and not df[c].null_count()
            else df[c].to_list()
            for c in df.columns
        }
    )  # fmt: skip


def _when(condition: pl.Expr, value: pl.Expr) -> pl.Expr:
    """``value`` where ``condition`` holds, else 0: summed per group, ~15% cheaper than
    ``value.filter(condition).sum()`` (a filtered copy per group and figure, measured)."""
    return pl.when(condition).then(value).otherwise(0)


def build_tables(outcomes: list[JobOutcome]) -> metrics.ScopeTables:
    """The compact per-job host, status and MIME tables, built in polars.

    Host → domain/TLD look-ups and MIME → family run once per distinct value; every per-line
    condition (captured, duplicate, budget, DNS failure, trap, robots, seed) becomes a sum per
    host here, so the pandas side only ever sees one row per (job, host), (job, status) and
    (job, MIME) — tens of thousands of rows for a 10-million-line day, not millions.
    """
    frames = [
        o.aggregate.groups.with_columns(pl.lit(o.job.job_id, dtype=pl.Int64).alias("job_id"))
        for o in outcomes
        if o.aggregate is not None and o.aggregate.groups.height
    ]
    g = pl.concat(frames) if frames else empty_groups().with_columns(
        pl.lit(0, dtype=pl.Int64).alias("job_id")
    )  # fmt: skip
    st = pl.col("status")
    cap = st.is_between(100, 599)
    lines = pl.col("lines")
    size = pl.col("bytes")
    # every per-host figure is a sum: sum per (job, authority) first, on the ~10^6 grouped rows
    # keyed by one string, then join the host/domain/TLD mapping and sum per host on the ~10^4
    # rows left (joining and grouping the big table on four keys cost ~0.2 s more, measured).
    # A missing authority or MIME is filled in on the small tables, not on the big one (a copy
    # of every string), and the distinct authorities are the per-authority table's own rows
    per_auth = g.group_by(["job_id", "auth"]).agg(
        _when(cap, lines).sum().alias("urls"),
        _when(cap, size).sum().alias("bytes"),
        lines.sum().alias("lines"),
        _when(cap & pl.col("dup"), lines).sum().alias("dup_urls"),
        _when(cap & pl.col("dup"), size).sum().alias("dup_bytes"),
        _when(st.is_in(_ints(codes.BUDGET_CODES)) | pl.col("quota"), lines).sum().alias("budget"),
        _when(st.is_in(_ints(codes.DNS_FAILURE_CODES)), lines).sum().alias("dns_fail"),
        _when(st.is_in(_ints(codes.TRAP_CODES)), lines).sum().alias("trap"),
        _when(st.is_in(_ints(codes.ROBOTS_CODES)), lines).sum().alias("robots"),
        _when(pl.col("seed"), lines).sum().alias("seeds"),
    )
    per_auth = per_auth.with_columns(pl.col("auth").fill_null(""))
    auths = per_auth["auth"].unique().to_list()
    names = [host_of(a) for a in auths]
    domains, tlds = classify_hosts(names)
    mapping = pl.DataFrame(
        {"auth": auths, "host": names, "domain": domains, "tld": tlds},
        schema={"auth": pl.String, "host": pl.String, "domain": pl.String, "tld": pl.String},
    )
    sums = [c for c in per_auth.columns if c not in ("job_id", "auth")]
    hosts = (
        per_auth.join(mapping, on="auth", how="left")
        .group_by(["job_id", "host", "domain", "tld"])
        .agg(pl.col(c).sum() for c in sums)
    )
    status = g.group_by(["job_id", "status"]).agg(lines.sum().alias("lines"))
    mime = (
        g.filter(cap)
        .group_by(["job_id", "mime"])
        .agg(lines.sum().alias("urls"), size.sum().alias("bytes"))
        .with_columns(pl.col("mime").fill_null("-"))
        .group_by(["job_id", "mime"])  # a missing MIME and "-" are one type
        .agg(pl.col("urls").sum(), pl.col("bytes").sum())
    )
    mimes = mime["mime"].unique().to_list()
    families = pl.DataFrame(
        {"mime": mimes, "mime_family": [codes.mime_family(m) for m in mimes]},
        schema={"mime": pl.String, "mime_family": pl.String},
    )
    mime = mime.join(families, on="mime", how="left")
    order = ["job_id", "host"]
    return metrics.ScopeTables(
        hosts=_to_pandas(hosts.sort(order)),
        status=_to_pandas(status.sort(["job_id", "status"])),
        mime=_to_pandas(mime.sort(["job_id", "mime"])),
    )


def _summary_history(outcomes: list[JobOutcome], known_jobs: set[int]) -> pd.DataFrame:
    """Stop reasons from the crawler's summary.json for jobs without historyinfo rows."""
    rows = []
    for out in outcomes:
        if out.job.job_id in known_jobs or out.log_path is None:
            continue
        # logs/crawl.log → the job directory
        path = JobDir(out.log_path.parent.parent).summary_json
        try:
            summary = JobSummary.read(path)
        except FileNotFoundError:
            continue
        except (OSError, ContractError) as exc:
            log.warning("%s: summary left out of the stop reasons: %s", path, exc)
            continue
        for domain, error in sorted(summary.bad_domains.items()):
            log.warning("%s: domain %s left out of the stop reasons: %s", path, domain, error)
        for domain, info in sorted(summary.domains.items()):
            rows.append((out.job.job_id, domain, info.stop_reason, info.objects, info.bytes))
    return pd.DataFrame(rows, columns=["job_id", "domain", "stopreason", "objects", "bytes"])


def _duration(outcomes: list[JobOutcome]) -> float:
    total = 0.0
    for out in outcomes:
        if out.job.duration_s > 0:
            total += out.job.duration_s
        elif out.aggregate and out.aggregate.first_ts and out.aggregate.last_ts:
            try:
                a = datetime.fromisoformat(out.aggregate.first_ts.replace("Z", "+00:00"))
                b = datetime.fromisoformat(out.aggregate.last_ts.replace("Z", "+00:00"))
                total += max((b - a).total_seconds(), 0.0)
            except ValueError:
                pass
    return total


def compute_day(
    day: date,
    jobs: list[JobInfo],
    data_dir: Path,
    *,
    history: pd.DataFrame | None = None,
    origins: dict[str, str] | None = None,
    dns_counts: dict[str, int] | None = None,
    top_n: int = 20,
    workers: int | None = None,
) -> DayComputation:
    """Read every job's crawl log and compute all scopes' families (no file, no DB write)."""
    outcomes = []
    with Progress("QA crawl logs", len(jobs), unit="jobs") as progress:
        for job in jobs:
            outcomes.append(read_job_log(job, data_dir, workers))
            progress.advance()
    tables = build_tables(outcomes)
    hist = history if history is not None else pd.DataFrame(
        columns=["job_id", "domain", "stopreason", "objects", "bytes"]
    )  # fmt: skip
    extra = _summary_history(outcomes, set(hist["job_id"].tolist()))
    if not extra.empty:
        hist = pd.concat([hist, extra], ignore_index=True) if not hist.empty else extra
    # selective (partial) harvests are curators' choices by construction
    origin_map = dict(origins or {})
    partial_jobs = {j.job_id for j in jobs if j.kind == "partial"}
    hosts = tables.hosts
    for domain in hosts.loc[hosts["job_id"].isin(partial_jobs), "domain"].unique().tolist():
        origin_map.setdefault(domain, "curator")

    comp = DayComputation(day=day, outcomes=outcomes, tables=tables, dns_counts=dns_counts or {})
    comp.problems = [
        f"job {o.job.job_id} ({o.job.harvest_name}): {o.message}"
        for o in outcomes
        if o.state != "ok"
    ]
    comp.scopes["day"] = metrics.compute(
        tables, top_n=top_n, origins=origin_map, history=hist,
        duration_s=_duration(outcomes), jobs=len(jobs),
    )  # fmt: skip
    by_job = {o.job.job_id: o for o in outcomes}
    all_ids = set(by_job)
    for harvest_id in sorted({j.harvest_id for j in jobs}):
        members = [o for o in outcomes if o.job.harvest_id == harvest_id]
        ids = [o.job.job_id for o in members]
        if set(ids) == all_ids:
            comp.scopes[f"harvest:{harvest_id}"] = comp.scopes["day"]
            continue
        comp.scopes[f"harvest:{harvest_id}"] = metrics.compute(
            tables.for_jobs(set(ids)), top_n=top_n, origins=origin_map,
            history=hist[hist["job_id"].isin(ids)], duration_s=_duration(members),
            jobs=len(ids),
        )  # fmt: skip
    for kind in ("partial", "full"):
        members = [o for o in outcomes if o.job.kind == kind]
        if not members:
            continue
        ids = [o.job.job_id for o in members]
        if set(ids) == all_ids:  # same jobs as the whole day: same figures, computed once
            comp.scopes[f"kind:{kind}"] = comp.scopes["day"]
            continue
        comp.scopes[f"kind:{kind}"] = metrics.compute(
            tables.for_jobs(set(ids)), top_n=top_n, origins=origin_map,
            history=hist[hist["job_id"].isin(ids)], duration_s=_duration(members),
            jobs=len(ids), detail=False,
        )  # fmt: skip
    job_rows = []
    for job_id in sorted(by_job):
        out = by_job[job_id]
        if all_ids == {job_id}:
            fam = comp.scopes["day"]
        else:
            fam = metrics.compute(
                tables.for_jobs({job_id}), origins=origin_map,
                history=hist[hist["job_id"] == job_id], duration_s=_duration([out]), jobs=1,
                detail=False,
            )  # fmt: skip
        comp.scopes[f"job:{job_id}"] = fam
        g = dict(fam.tables["general"].itertuples(index=False, name=None))
        agg = out.aggregate
        job_rows.append(
            {
                "job_id": job_id,
                "harvest_id": out.job.harvest_id,
                "harvest": out.job.harvest_name,
                "kind": "selective" if out.job.kind == "partial" else "broad",
                "run": out.job.harvest_num,
                "status": JobStatus.name_of(out.job.status),
                "log": out.state,
                "lines": agg.lines if agg else 0,
                "bad_lines": agg.bad_lines if agg else 0,
                "urls": g["urls"],
                "bytes": g["bytes"],
                "duplicate_urls": g["duplicate_urls"],
                # payload bytes written as revisits instead of again: the storage dedup saved
                "duplicate_bytes": g["duplicate_bytes"],
                "domains": g["domains"],
                "duration_s": g["duration_s"],
                "urls_per_s": g["urls_per_s"],
            }
        )
    comp.jobs_table = pd.DataFrame(job_rows)
    return comp


def run_daily(day: date, settings: Settings | None = None, *, engine: Any = None) -> dict:
    """Compute and publish one day's QA statistics; returns the summary dict.

    Writes ``<data_dir>/qa/<day>/`` (text per family, CSV, index.html + SVG charts) and
    replaces the day's rows in qa_stats and qa_reports. Idempotent per day.
    """
    # the DB layer (SQLAlchemy) and the search backend only here: compute_day and the report
    # run on files without importing them (~0.3 CPU-s a run, bench/run qa)
    from harvestflow import db
    from qa.documents import document_figures
    from search.backends import get_backend

    settings = settings or get_settings()
    engine = engine or db.get_engine(settings.harvest_db_url)
    top_n = int(settings.get("qa", "top_n", 20))
    jobs = inputs.jobs_ended_on(engine, day)
    log.info("QA %s: %d jobs ended that day", day, len(jobs))
    comp = compute_day(
        day,
        jobs,
        settings.data_dir,
        history=inputs.history_for_jobs(engine, [j.job_id for j in jobs]),
        origins=inputs.origin_classes(engine),
        dns_counts=inputs.dns_check_counts(engine, day),
        top_n=top_n,
        workers=int(settings.get("qa", "log_workers", 0)) or None,
    )
    comp.comparisons = daily_compare.build(comp, engine)
    comp.fulltext = get_backend(settings).day_counts(day)
    comp.documents = document_figures(engine, day)
    comp.page_qa = page_scores.day_scores(engine, jobs)
    report_dir = settings.path("qa", day.isoformat())
    with store.day_lock(engine, day):  # an overlapping run of the same day waits here
        written = report.write_report(comp, report_dir)
        summary = summary_of(comp, report_dir)
        summary["files"] = [p.name for p in written]
        stored = {**summary, **report.db_payload(report_dir)}
        store.save_day(engine, comp.day, stats_rows(comp), report_dir, stored)
    log.info("QA %s: report in %s (%d problems)", day, report_dir, len(comp.problems))
    return summary


def _human_bytes(n: float) -> str:
    value = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(value) < 1000 or unit == "TB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} TB"


def _rate(value: float) -> str:
    """A rate readable at both ends: 1,234.5 and 0.00125 (not "0.0" for a small test crawl)."""
    return f"{value:,.1f}" if value >= 10 else f"{value:.3g}"


def summary_lines(result: dict) -> list[str]:
    """A few lines a curator can read at the end of the task log."""
    g = result.get("general", {})
    lines = [
        f"QA {result.get('day')}: {result.get('jobs', 0)} jobs, {int(g.get('urls', 0)):,} URLs "
        f"({_human_bytes(g.get('bytes', 0))}) on {int(g.get('domains', 0)):,} domains",
        f"  new {int(g.get('new_urls', 0)):,} / duplicate {int(g.get('duplicate_urls', 0)):,} "
        f"URLs; {_rate(g.get('urls_per_s', 0))} URLs/s over {g.get('duration_s', 0):.0f} s of crawl",
        f"  storage saved by deduplication: {_human_bytes(g.get('duplicate_bytes', 0))}"
        f" ({int(g.get('duplicate_bytes', 0)):,} bytes written as revisits)",
    ]
    mf = result.get("mime_family_share", {})
    if mf:
        parts = ", ".join(f"{k} {100 * v:.1f}%" for k, v in mf.items() if v)
        lines.append(f"  MIME families: {parts or 'none'}")
    tlds = result.get("top_tlds", [])
    if tlds:
        lines.append("  top TLDs: " + ", ".join(f".{t} {100 * s:.1f}%" for t, s in tlds))
    hits = result.get("hits", {})
    if hits:
        lines.append(
            f"  budget hits on {hits.get('budget_hit_domains', 0)} domains, DNS failures on "
            f"{hits.get('dns_failure_domains', 0)}, trap hits on {hits.get('trap_domains', 0)}"
        )
    for r in result.get("run_changes", [])[:5]:
        lines.append(
            f"  {r['harvest']} run {r['run']} vs run {r['run_a']}: grew {r['grew']}, shrank "
            f"{r['shrank']}, newly failed {r['newly_failed']}, hit limits {r['hit_limits']}"
        )
    ft = result.get("fulltext")
    if ft:
        lines.append(
            f"  full text: {ft['extracted']:,} documents extracted from {ft['files']:,} WARC(s),"
            f" {ft['duplicates']:,} duplicate captures, {ft['skipped']:,} skipped,"
            f" {ft['failed']:,} failed"
        )
    for d in result.get("documents", [])[:20]:
        lines.append(
            f"  documents of target {d['record_id']} ({d['title'] or 'untitled'}): {d['found']}"
            f" found ({d['found_on_day']} that day), {d['available']} available,"
            f" {d['catalogued']} catalogued, {d['broken']} broken"
        )
    if result.get("page_qa"):
        lines.append("  QA of rendered pages:")
        lines.extend(f"    {line}" for line in page_scores.lines(result["page_qa"]))
    problems = result.get("problems", [])
    if problems:
        lines.append(f"  {len(problems)} crawl log problem(s):")
        lines.extend(f"    - {p}" for p in problems[:10])
        if len(problems) > 10:
            lines.append(f"    ... and {len(problems) - 10} more (see problems.txt)")
    else:
        lines.append("  all crawl logs read without errors")
    lines.append(f"  report: {result.get('report_dir')}/index.html")
    return lines
