"""Metric families computed from the grouped crawl-log rows of one scope (day, job, harvest).

Why: every figure NAS_qual publishes is a sum over the small grouped table the crawl-log pass
produces (``crawltable.GROUP_KEYS`` + host/domain/TLD columns), so the families are plain pandas
group-bys here, independent of where the rows came from; tests feed hand-made rows and check
hand-computed figures.

Vocabulary (kept identical in every report):
- *line*: one crawl.log line, whatever its status;
- *URL* (captured): a line with an HTTP status (100-599) — what went into the WARCs;
- *new* vs *duplicate*: captured URLs without / with ``duplicate:`` in the annotations (revisit);
- *domain size*: captured URLs of a registrable domain in the scope; buckets < 10, 10-10,000,
  > 10,000 (the broad crawl's default budget).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from harvestflow.formats.stop_reasons import StopReason
from qa import codes

SIZE_BUCKETS = (("<10", 0, 9), ("10-10000", 10, 10_000), (">10000", 10_001, None))
ORIGIN_CLASSES = ("curator", "registry", "database", "redirect", "other", "unknown")


@dataclass
class Families:
    """Tables per metric family, plus flat (family, key, value) figures for the DB and CSV."""

    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    stats: list[tuple[str, str, float]] = field(default_factory=list)

    def add(self, family: str, key: str, value: float) -> None:
        self.stats.append((family, key, float(value)))


def _share(part: float, whole: float) -> float:
    return round(part / whole, 6) if whole else 0.0


@dataclass
class ScopeTables:
    """The compact per-job tables a scope's figures are computed from.

    hosts: job_id, host, domain, tld, urls, bytes, lines, dup_urls, dup_bytes, budget,
    dns_fail, trap, robots, seeds; status: job_id, status, lines; mime: job_id, mime,
    mime_family, urls, bytes (captured URLs only).
    """

    hosts: pd.DataFrame
    status: pd.DataFrame
    mime: pd.DataFrame

    def for_jobs(self, job_ids: set[int]) -> ScopeTables:
        return ScopeTables(
            self.hosts[self.hosts["job_id"].isin(job_ids)],
            self.status[self.status["job_id"].isin(job_ids)],
            self.mime[self.mime["job_id"].isin(job_ids)],
        )


HOST_SUMS = ["urls", "bytes", "lines", "dup_urls", "dup_bytes", "budget", "dns_fail", "trap",
             "robots", "seeds"]  # fmt: skip


def domain_table(hosts: pd.DataFrame) -> pd.DataFrame:
    """One row per registrable domain: URLs, bytes, hosts, duplicates, budget/DNS/trap hits."""
    cols = ["domain", "tld", *HOST_SUMS, "hosts"]
    if hosts.empty:
        return pd.DataFrame({c: pd.Series(dtype="int64") for c in cols}).astype(
            {"domain": object, "tld": object}
        )
    g = hosts.groupby("domain", sort=False)
    table = g[HOST_SUMS].sum()
    table["tld"] = g["tld"].first()
    table["hosts"] = g["host"].nunique()
    table = table.reset_index()[cols]
    return table.sort_values(["urls", "domain"], ascending=[False, True], kind="mergesort")


def size_bucket(urls: int) -> str:
    for name, low, high in SIZE_BUCKETS:
        if urls >= low and (high is None or urls <= high):
            return name
    return SIZE_BUCKETS[-1][0]


def size_buckets(urls: pd.Series) -> pd.Series:
    """:func:`size_bucket` of every value at once (a Python call per domain cost ~0.1 s a day
    of 50,000 domains)."""
    values = urls.to_numpy()
    conditions = [
        (values >= low) & (values <= high) if high is not None else values >= low
        for _name, low, high in SIZE_BUCKETS
    ]
    names = [name for name, _low, _high in SIZE_BUCKETS]
    return pd.Series(np.select(conditions, names, default=names[-1]), index=urls.index)


def compute(
    t: ScopeTables,
    *,
    top_n: int = 20,
    origins: dict[str, str] | None = None,
    history: pd.DataFrame | None = None,
    duration_s: float = 0.0,
    jobs: int = 0,
    detail: bool = True,
) -> Families:
    """All families for one scope.

    ``origins`` maps domain → origin class; ``history`` has (domain, stopreason) rows of the
    scope's jobs. Every scope gets every family of fixed size (general, MIME, status, TLD, domain
    sizes, origins, stop reasons, hits), so per-job, per-kind (selective vs broad) and per-year
    comparisons can use them all; ``detail`` False leaves out only the per-domain lists (full
    domain table, top domains, problem domains), which would multiply the stored rows by the
    number of jobs.
    """
    fam = Families()
    hosts = t.hosts
    urls = int(hosts["urls"].sum())
    total_bytes = int(hosts["bytes"].sum())
    dup_urls = int(hosts["dup_urls"].sum())
    dup_bytes = int(hosts["dup_bytes"].sum())
    domains = domain_table(hosts)
    crawled = domains[domains["urls"] > 0]

    general = {
        "jobs": jobs,
        "lines": int(hosts["lines"].sum()),
        "urls": urls,
        "bytes": total_bytes,
        "new_urls": urls - dup_urls,
        "new_bytes": total_bytes - dup_bytes,
        "duplicate_urls": dup_urls,
        "duplicate_bytes": dup_bytes,
        "domains": len(crawled),
        "hosts": int(hosts.loc[hosts["urls"] > 0, "host"].nunique()),
        "seeds": int(hosts["seeds"].sum()),
        "failed_lines": int(t.status.loc[t.status["status"] <= 0, "lines"].sum()),
        "duration_s": round(duration_s, 3),
        "urls_per_s": round(urls / duration_s, 3) if duration_s > 0 else 0.0,
        "bytes_per_s": round(total_bytes / duration_s, 3) if duration_s > 0 else 0.0,
        "duplicate_share": _share(dup_urls, urls),
    }
    fam.tables["general"] = pd.DataFrame(
        {"measure": list(general), "value": list(general.values())}
    )
    for key, value in general.items():
        fam.add("general", key, value)

    # MIME types and families (captured URLs only)
    mime = (
        t.mime.groupby("mime", sort=False)[["urls", "bytes"]]
        .sum()
        .reset_index()
        .sort_values(["urls", "mime"], ascending=[False, True], kind="mergesort")
    )
    mime["share"] = [_share(u, urls) for u in mime["urls"]]
    fam.tables["mime"] = mime
    mf = t.mime.groupby("mime_family")[["urls", "bytes"]].sum()
    mf = mf.reindex([*codes.MIME_FAMILIES, "other"], fill_value=0).reset_index()
    mf.columns = ["family", "urls", "bytes"]
    mf["share"] = [_share(u, urls) for u in mf["urls"]]
    mf["byte_share"] = [_share(b, total_bytes) for b in mf["bytes"]]
    fam.tables["mime_family"] = mf
    for r in mf.itertuples(index=False):
        fam.add("mime_family", f"{r.family}|urls", r.urls)
        fam.add("mime_family", f"{r.family}|bytes", r.bytes)
        fam.add("mime_family", f"{r.family}|share", r.share)
    for r in mime.itertuples(index=False):
        fam.add("mime", f"{r.mime}|urls", r.urls)
        fam.add("mime", f"{r.mime}|bytes", r.bytes)

    # Status codes (every line)
    st = t.status.groupby("status")[["lines"]].sum().reset_index()
    st = st.sort_values(["lines", "status"], ascending=[False, True], kind="mergesort")
    st["label"] = st["status"].map(codes.status_label)
    total_lines = int(st["lines"].sum())
    st["share"] = [_share(n, total_lines) for n in st["lines"]]
    fam.tables["status"] = st
    for r in st.itertuples(index=False):
        fam.add("status", f"{r.status}|lines", r.lines)

    # Top-level domains
    tld = (
        crawled.groupby("tld")
        .agg(urls=("urls", "sum"), bytes=("bytes", "sum"), domains=("domain", "count"))
        .reset_index()
        .sort_values(["urls", "tld"], ascending=[False, True], kind="mergesort")
    )
    tld["share"] = [_share(u, urls) for u in tld["urls"]]
    tld["domain_share"] = [_share(d, len(crawled)) for d in tld["domains"]]
    fam.tables["tld"] = tld
    for r in tld.itertuples(index=False):
        fam.add("tld", f"{r.tld}|urls", r.urls)
        fam.add("tld", f"{r.tld}|bytes", r.bytes)
        fam.add("tld", f"{r.tld}|domains", r.domains)

    # Domain size distribution (+ how many stopped complete, from the harvest history)
    stop_by_domain: dict[str, int] = {}
    if history is not None and not history.empty:
        # a domain harvested by several jobs: its worst (highest) reason wins
        stop_by_domain = history.groupby("domain")["stopreason"].max().astype(int).to_dict()
    sizes = []
    buckets = size_buckets(crawled["urls"])
    for name, _low, _high in SIZE_BUCKETS:
        members = crawled[buckets == name]
        complete = sum(
            1
            for d in members["domain"].tolist()
            if stop_by_domain.get(d) == StopReason.DOWNLOAD_COMPLETE
        )
        sizes.append(
            {
                "bucket": name,
                "domains": len(members),
                "share": _share(len(members), len(crawled)),
                "urls": int(members["urls"].sum()),
                "complete": complete,
            }
        )
    size_df = pd.DataFrame(sizes)
    fam.tables["domain_sizes"] = size_df
    for r in size_df.itertuples(index=False):
        fam.add("domain_sizes", f"{r.bucket}|domains", r.domains)
        fam.add("domain_sizes", f"{r.bucket}|urls", r.urls)
        fam.add("domain_sizes", f"{r.bucket}|complete", r.complete)

    # Seed origin: curator-selected vs registry lists (...)
    origin_of = origins or {}
    with_origin = crawled.assign(
        origin=[origin_of.get(d, "unknown") for d in crawled["domain"].tolist()]
    )
    og = with_origin.groupby("origin").agg(
        domains=("domain", "count"), urls=("urls", "sum"), bytes=("bytes", "sum"),
        seeds=("seeds", "sum"),
    )  # fmt: skip
    og = og.reindex(list(ORIGIN_CLASSES), fill_value=0).reset_index()
    og = og.rename(columns={"index": "origin"})
    total_seeds = int(og["seeds"].sum())
    og["domain_share"] = [_share(d, len(crawled)) for d in og["domains"]]
    og["seed_share"] = [_share(s, total_seeds) for s in og["seeds"]]
    og["url_share"] = [_share(u, urls) for u in og["urls"]]
    fam.tables["origins"] = og
    for r in og.itertuples(index=False):
        for measure in ("domains", "seeds", "urls", "bytes"):
            fam.add("origins", f"{r.origin}|{measure}", getattr(r, measure))

    # Stop reasons (history), budget hits, traps, DNS failures, robots
    reasons = pd.Series(stop_by_domain, dtype="int64").value_counts()
    stop_rows = [
        {"stopreason": int(r), "name": r.text, "domains": int(reasons.get(int(r), 0))}
        for r in StopReason
    ]
    fam.tables["stop_reasons"] = pd.DataFrame(stop_rows)
    for r in StopReason:
        fam.add("stop_reasons", f"{int(r)}|{r.text}", int(reasons.get(int(r), 0)))
    hits = {
        "budget_hit_lines": int(domains["budget"].sum()),
        "budget_hit_domains": int((domains["budget"] > 0).sum()),
        "trap_lines": int(domains["trap"].sum()),
        "trap_domains": int((domains["trap"] > 0).sum()),
        "dns_failure_lines": int(domains["dns_fail"].sum()),
        "dns_failure_domains": int((domains["dns_fail"] > 0).sum()),
        "robots_lines": int(domains["robots"].sum()),
        "robots_domains": int((domains["robots"] > 0).sum()),
    }
    fam.tables["hits"] = pd.DataFrame({"measure": list(hits), "value": list(hits.values())})
    for key, value in hits.items():
        fam.add("hits", key, value)
    if not detail:
        return fam

    # Domains: top by URLs and by bytes; the full table goes to CSV
    # per domain, its size bucket and how its harvest stopped: *which* domains were collected
    # completely, not only how many (domains.csv)
    # one enum look-up per distinct reason, not per domain
    stop_text = {code: StopReason.text_of(code, "") for code in set(stop_by_domain.values())}
    fam.tables["domains"] = domains.assign(
        size_bucket=np.where(domains["urls"].to_numpy() == 0, "",
                             size_buckets(domains["urls"]).to_numpy()),
        stop=[stop_text.get(stop_by_domain.get(d, -1), "") for d in domains["domain"].tolist()],
    )  # fmt: skip
    top_urls = crawled.head(top_n)
    top_bytes = crawled.sort_values(
        ["bytes", "domain"], ascending=[False, True], kind="mergesort"
    ).head(top_n)
    fam.tables["top_domains_urls"] = top_urls
    fam.tables["top_domains_bytes"] = top_bytes
    for r in top_urls.itertuples(index=False):
        fam.add("top_domains_urls", r.domain, r.urls)
    for r in top_bytes.itertuples(index=False):
        fam.add("top_domains_bytes", r.domain, r.bytes)

    limited = domains[(domains["budget"] > 0) | (domains["trap"] > 0) | (domains["dns_fail"] > 0)]
    fam.tables["problem_domains"] = limited.sort_values(
        ["budget", "dns_fail", "trap", "domain"],
        ascending=[False, False, False, True],
        kind="mergesort",
    ).head(top_n)
    return fam
