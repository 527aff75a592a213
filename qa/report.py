"""The day's report files: text per metric family (NAS_qual's style), CSV, HTML with charts.

Why: curators read the text files and the HTML page, managers paste the CSV into spreadsheets,
the ISO/TR 14873 indicators are computed from the CSV. Everything is written into a temporary
folder first and swapped in whole, so a reader never sees half a report; nothing inside the
files depends on the clock, and every table has a total sort order, so re-running a day gives
byte-identical files (the SVG charts hold no date or software name either).
"""

from __future__ import annotations

import csv
import html
import io
import json
import logging
import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from harvestflow.formats.csvcells import safe_row
from harvestflow.formats.svgchart import bar_chart
from qa import daily_compare, page_scores
from qa.texttable import table_text

if TYPE_CHECKING:
    from qa.day import DayComputation

log = logging.getLogger(__name__)


def _title(name: str, day: str) -> str:
    head = f"{name} — {day}"
    return f"{head}\n{'=' * len(head)}\n\n"


def _texts(comp: DayComputation) -> dict[str, str]:
    day = comp.day.isoformat()
    t = comp.scopes["day"].tables
    out: dict[str, str] = {}
    out["general.txt"] = _title("General figures", day) + table_text(
        t["general"], ["measure", "value"]
    )
    out["mime.txt"] = (
        _title("MIME types", day)
        + "Families (captured URLs)\n"
        + table_text(t["mime_family"], ["family", "urls", "bytes", "share", "byte_share"],
                     pct=["share", "byte_share"])
        + "\nTypes\n"
        + table_text(t["mime"], ["mime", "urls", "bytes", "share"], pct=["share"])
    )  # fmt: skip
    out["status.txt"] = _title("Response codes (all crawl.log lines)", day) + table_text(
        t["status"], ["status", "lines", "share", "label"], pct=["share"]
    )
    out["tld.txt"] = _title("Top-level domains (captured URLs)", day) + table_text(
        t["tld"], ["tld", "urls", "share", "bytes", "domains", "domain_share"],
        pct=["share", "domain_share"],
    )  # fmt: skip
    dom_cols = ["domain", "urls", "bytes", "hosts", "dup_urls", "budget", "dns_fail", "trap"]
    out["domains.txt"] = (
        _title("Domains", day)
        + "Top domains by URLs\n"
        + table_text(t["top_domains_urls"], dom_cols)
        + "\nTop domains by bytes\n"
        + table_text(t["top_domains_bytes"], dom_cols)
        + "\nDomains with budget hits, DNS failures or trap hits\n"
        + table_text(t["problem_domains"], dom_cols)
    )
    out["domain_sizes.txt"] = (
        _title("Domain size distribution (captured URLs per domain)", day)
        + table_text(t["domain_sizes"], ["bucket", "domains", "share", "urls", "complete"],
                     pct=["share"])
        + "\n'complete' = domains whose harvest stopped with reason 0 (download complete).\n"
    )  # fmt: skip
    out["origins.txt"] = (
        _title("Seed origin (curator-selected vs registry lists)", day)
        + table_text(
            t["origins"],
            ["origin", "domains", "domain_share", "seeds", "seed_share", "urls", "url_share",
             "bytes"],
            pct=["domain_share", "seed_share", "url_share"],
        )
    )  # fmt: skip
    dns = pd.DataFrame(sorted(comp.dns_counts.items()), columns=["class", "domains"])
    out["stops.txt"] = (
        _title("Stop reasons, budget and trap hits, DNS failures", day)
        + "Stop reasons (domains, harvest history)\n"
        + table_text(t["stop_reasons"], ["stopreason", "name", "domains"])
        + "\nHits in the crawl logs\n"
        + table_text(t["hits"], ["measure", "value"])
        + "\nDNS checks made that day\n"
        + (table_text(dns, ["class", "domains"]) if len(dns) else "(none)\n")
    )
    jobs = comp.jobs_table if comp.jobs_table is not None else pd.DataFrame()
    harvests = []
    for scope, fam in comp.scopes.items():
        if scope.startswith("harvest:"):
            g = dict(fam.tables["general"].itertuples(index=False, name=None))
            harvests.append({"harvest_id": int(scope.split(":", 1)[1]), **g})
    hv = pd.DataFrame(harvests)
    out["jobs.txt"] = _title("Jobs and harvest definitions", day) + (
        table_text(jobs, ["job_id", "harvest", "kind", "run", "status", "log", "lines",
                          "urls", "bytes", "duplicate_urls", "duplicate_bytes", "domains",
                          "duration_s", "urls_per_s"])
        if len(jobs) else "(no job ended that day)\n"
    ) + (
        "\nPer harvest definition (a snapshot's steps are definitions of their own);"
        " duplicate_bytes: storage saved by deduplication\n"
        + table_text(hv, ["harvest_id", "jobs", "urls", "bytes", "duplicate_urls",
                          "duplicate_bytes", "domains", "duration_s", "urls_per_s"])
        if len(hv) else ""
    )  # fmt: skip
    out["problems.txt"] = _title("Missing or corrupt crawl logs", day) + (
        "\n".join(comp.problems) + "\n" if comp.problems else "none\n"
    )
    for o in comp.outcomes:
        if o.aggregate and o.aggregate.bad_examples:
            out["problems.txt"] += f"\njob {o.job.job_id}: {o.aggregate.path}\n"
            for bad in o.aggregate.bad_examples:
                out["problems.txt"] += f"  line {bad.line}: {bad.reason}: {bad.excerpt!r}\n"
    return out


def _csv(rows: Iterable[Iterable[Any]], header: list[str]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(safe_row(header))
    for row in rows:  # a host or URL a spreadsheet would run as a formula is escaped
        writer.writerow(safe_row(row))
    return buf.getvalue()


def _rows(df: pd.DataFrame, columns: list[str]) -> Iterable[tuple[Any, ...]]:
    """The rows of ``df``'s ``columns`` as tuples of Python values, column by column:
    itertuples() reads a string column one element at a time (~0.4 s on 50,000 domains)."""
    return zip(*(df[c].tolist() for c in columns), strict=True)


def _charts(comp: DayComputation) -> dict[str, bytes]:
    """The six charts as SVG files (harvestflow.formats.svgchart): written as text, they cost
    well under a millisecond each where matplotlib cost ~1 CPU-second with its import."""
    t = comp.scopes["day"].tables
    charts: dict[str, bytes] = {}

    def bar(name: str, labels: list[str], values: list[float], title: str, unit: str) -> None:
        charts[name] = bar_chart(title, labels, [float(v) for v in values], unit).encode()

    mf = t["mime_family"]
    bar("mime_families.svg", list(mf["family"]), [100 * v for v in mf["share"]],
        "MIME families (share of URLs)", "%")  # fmt: skip
    st = t["status"].head(15)
    bar("status.svg", [f"{s} {lab}" for s, lab in zip(st["status"], st["label"], strict=True)],
        list(st["lines"]), "Response codes", "lines")  # fmt: skip
    tld = t["tld"].head(15)
    bar("tld.svg", [f".{x}" for x in tld["tld"]], [100 * v for v in tld["share"]],
        "Top-level domains (share of URLs)", "%")  # fmt: skip
    ds = t["domain_sizes"]
    bar("domain_sizes.svg", list(ds["bucket"]), list(ds["domains"]),
        "Domain sizes (URLs per domain)", "domains")  # fmt: skip
    top = t["top_domains_urls"].head(15)
    bar("top_domains.svg", list(top["domain"]), list(top["urls"]), "Top domains by URLs", "URLs")
    og = t["origins"]
    bar("origins.svg", list(og["origin"]), [100 * v for v in og["url_share"]],
        "Seed origin (share of URLs)", "%")  # fmt: skip
    return charts


def _html(comp: DayComputation, texts: dict[str, str], charts: dict[str, bytes]) -> str:
    day = comp.day.isoformat()
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Daily QA statistics {day}</title>",
        "<style>body{font-family:sans-serif;margin:2em;max-width:70em}"
        "pre{background:#f6f6f6;padding:1em;overflow-x:auto}img{max-width:100%}"
        ".problems{color:#a00}</style></head><body>",
        f"<h1>Daily QA statistics — {day}</h1>",
    ]
    if comp.problems:
        parts.append('<div class="problems"><h2>Missing or corrupt crawl logs</h2><ul>')
        parts.extend(f"<li>{html.escape(p)}</li>" for p in comp.problems)
        parts.append("</ul></div>")
    parts.append("<p>Files: " + " · ".join(
        f'<a href="{html.escape(n)}">{html.escape(n)}</a>'
        for n in sorted([*texts, "stats.csv", "domains.csv", "jobs.csv", "comparisons.csv",
                         "runs.csv"])
    ) + "</p>")  # fmt: skip
    order = [("general.txt", None), ("mime.txt", "mime_families.svg"), ("status.txt", "status.svg"),
             ("tld.txt", "tld.svg"), ("domains.txt", "top_domains.svg"),
             ("domain_sizes.txt", "domain_sizes.svg"), ("origins.txt", "origins.svg"),
             ("stops.txt", None), ("jobs.txt", None), ("comparisons.txt", None)]  # fmt: skip
    for name, chart in order:
        parts.append(f"<h2>{html.escape(name[:-4].replace('_', ' ').title())}</h2>")
        if chart and chart in charts:
            parts.append(f'<img src="charts/{chart}" alt="{html.escape(chart)}">')
        parts.append(f"<pre>{html.escape(texts[name])}</pre>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def stats_rows(comp: DayComputation) -> list[tuple[str, str, str, float]]:
    """(scope, family, key, value) rows, sorted, unique per key (last value wins)."""
    found: dict[tuple[str, str, str], float] = {}
    for scope, fam in comp.scopes.items():
        for family, key, value in fam.stats:
            found[(scope, family, key)] = value
    for out in comp.outcomes:
        state = out.state
        found[("day", "logs", f"job:{out.job.job_id}|{state}")] = 1.0
        if out.aggregate:
            found[("day", "logs", f"job:{out.job.job_id}|bad_lines")] = out.aggregate.bad_lines
    for cls, n in comp.dns_counts.items():
        found[("day", "dns_checks", cls)] = float(n)
    for scope, family, key, value in page_scores.stats(comp.page_qa or []):
        found[(scope, family, key)] = value
    return sorted((s, f, k, v) for (s, f, k), v in found.items())


def summary_of(comp: DayComputation, report_dir: Path) -> dict[str, Any]:
    """The small result returned to the DAG/CLI and stored in qa_reports.summary."""
    general = dict(comp.scopes["day"].tables["general"].itertuples(index=False, name=None))
    fam = comp.scopes["day"].tables
    mf = {r.family: r.share for r in fam["mime_family"].itertuples(index=False)}
    tld = [(r.tld, r.share) for r in fam["tld"].head(3).itertuples(index=False)]
    states: dict[str, int] = {}
    for out in comp.outcomes:
        states[out.state] = states.get(out.state, 0) + 1
    run_changes = [
        {"harvest": e.harvest_name, "harvest_id": e.harvest_id, "run": e.run,
         "run_a": e.result.run_a, **e.result.counts()}
        for e in (comp.comparisons.runs if comp.comparisons is not None else [])
        if e.result is not None
    ]  # fmt: skip
    return {
        "day": comp.day.isoformat(),
        "report_dir": str(report_dir),
        "jobs": len(comp.outcomes),
        "logs": dict(sorted(states.items())),
        "general": {k: general[k] for k in sorted(general)},
        "mime_family_share": mf,
        "top_tlds": tld,
        "hits": dict(fam["hits"].itertuples(index=False, name=None)) if "hits" in fam else {},
        "problems": comp.problems,
        "run_changes": run_changes,
        **({"fulltext": comp.fulltext} if comp.fulltext is not None else {}),
        **({"documents": comp.documents} if comp.documents is not None else {}),
        **({"page_qa": page_scores.summary(comp.page_qa)} if comp.page_qa else {}),
    }


def render(comp: DayComputation) -> dict[str, bytes]:
    """Every file of the report, by relative path."""
    texts = _texts(comp)
    cmp = comp.comparisons if comp.comparisons is not None else daily_compare.build(comp)
    texts["comparisons.txt"] = daily_compare.render_text(cmp)
    if comp.page_qa:
        texts["page-qa.txt"] = page_scores.text(comp.page_qa, comp.day.isoformat())
    files: dict[str, bytes] = {name: text.encode("utf-8") for name, text in texts.items()}
    files["stats.csv"] = _csv(stats_rows(comp), ["scope", "family", "key", "value"]).encode()
    t = comp.scopes["day"].tables
    dom_cols = ["domain", "tld", "urls", "bytes", "size_bucket", "stop", "lines", "hosts",
                "dup_urls", "budget", "dns_fail", "trap", "robots", "seeds"]  # fmt: skip
    doms = t["domains"].sort_values(["urls", "domain"], ascending=[False, True], kind="mergesort")
    files["domains.csv"] = _csv(_rows(doms, dom_cols), dom_cols).encode()
    jobs = comp.jobs_table if comp.jobs_table is not None else pd.DataFrame()
    files["jobs.csv"] = _csv(_rows(jobs, list(jobs.columns)), list(jobs.columns)).encode()
    header = ["comparison", "family", "key", "a", "b", "change", "change_pct"]
    files["comparisons.csv"] = _csv(daily_compare.csv_rows(cmp), header).encode()
    files["runs.csv"] = _csv(daily_compare.run_rows(cmp), daily_compare.RUN_COLUMNS).encode()
    charts = _charts(comp)
    for name, data in charts.items():
        files[f"charts/{name}"] = data
    files["index.html"] = _html(comp, texts, charts).encode("utf-8")
    return files


def write_report(comp: DayComputation, report_dir: Path) -> list[Path]:
    """Write all files to a temporary folder, then swap it in place of ``report_dir``."""
    files = render(comp)
    summary = summary_of(comp, report_dir)
    files["summary.json"] = (
        json.dumps(summary, indent=1, sort_keys=True, default=str) + "\n"
    ).encode()
    report_dir = Path(report_dir)
    report_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = report_dir.parent / f".{report_dir.name}.tmp-{os.getpid()}"
    old = report_dir.parent / f".{report_dir.name}.old-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    for rel, data in sorted(files.items()):
        path = tmp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    # a whole report directory swapped (not one file, so not harvestflow.atomic)
    if report_dir.exists():
        report_dir.rename(old)
    tmp.rename(report_dir)
    shutil.rmtree(old, ignore_errors=True)
    log.info("QA report for %s written to %s (%d files)", comp.day, report_dir, len(files))
    return [report_dir / rel for rel in sorted(files)]


def db_payload(report_dir: Path) -> dict[str, dict[str, str]]:
    """Text files and SVG charts of a written report, for qa_reports.summary.

    Why: the curators' views in the Airflow UI read the database, not the report folder (which
    may live on another machine); the text tables and charts are small enough to travel there.
    """
    texts = {p.name: p.read_text(encoding="utf-8") for p in sorted(report_dir.glob("*.txt"))}
    charts = {
        p.name: p.read_text(encoding="utf-8") for p in sorted((report_dir / "charts").glob("*.svg"))
    }
    return {"texts": texts, "charts_svg": charts}
