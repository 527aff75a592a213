"""Daily preservation statistics from both sides (harvest DB and object store), in DB and files.

Why both sides: SPAR's statistics come from the producer and from the repository; comparing them
is how a curator sees that what the DB calls preserved is really in storage. The figures go to
``preservation_stats`` (UPSERT per day and key, so a re-run or a backfill rewrites the same rows)
and to ``<reports>/<day>/preservation-report.{txt,json}`` (written under a temporary name and
renamed).
"""

from __future__ import annotations

import json
import logging
import statistics
from datetime import date, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from harvestflow.atomic import atomic_write_text
from harvestflow.db import get_engine
from harvestflow.settings import Settings, get_settings
from preservation import records
from preservation.config import PreservationConfig
from preservation.s3store import make_client

log = logging.getLogger(__name__)
_DAY = "(({col}) AT TIME ZONE 'UTC')::date"


def _day(value: date | str) -> date:
    return value if isinstance(value, date) else date.fromisoformat(str(value)[:10])


def _db_side(conn: sa.Connection, day: date) -> dict[str, Any]:
    p = {"d": day}
    files = conn.execute(
        sa.text(
            "SELECT count(*), COALESCE(sum(size), 0), COALESCE(sum(upload_seconds), 0)"
            " FROM preservation_files WHERE role <> 'manifest'"
            f" AND {_DAY.format(col='verified_at')} = :d"
        ),
        p,
    ).one()
    arks: dict[str, int] = dict(
        conn.execute(
            sa.text(
                f"SELECT kind, count(*) FROM arks WHERE {_DAY.format(col='minted_at')} = :d"
                " GROUP BY kind"
            ),
            p,
        ).all()
    )
    durations = [
        float(r[0])
        for r in conn.execute(
            sa.text(
                "SELECT extract(epoch FROM finished_at - started_at) FROM preservation_packages"
                f" WHERE status = 'preserved' AND {_DAY.format(col='finished_at')} = :d"
                " AND started_at IS NOT NULL"
            ),
            p,
        )
    ]
    per_day = [
        {"day": str(r[0]), "files": int(r[1]), "bytes": int(r[2])}
        for r in conn.execute(
            sa.text(
                f"SELECT {_DAY.format(col='verified_at')} AS d, count(*), sum(size)"
                " FROM preservation_files WHERE role <> 'manifest' AND verified_at IS NOT NULL"
                f" AND {_DAY.format(col='verified_at')} BETWEEN :d - 29 AND :d"
                " GROUP BY 1 ORDER BY 1"
            ),
            p,
        )
    ]
    zone = records.with_definition_names(
        conn,
        [
            dict(r)
            for r in conn.execute(
                sa.text(
                    "SELECT p.job_id, p.harvest_id, p.status, p.staged_at,"
                    " (SELECT COALESCE(sum(size), 0) FROM preservation_files f"
                    "   WHERE f.job_id = p.job_id AND f.role <> 'manifest') AS bytes"
                    " FROM preservation_packages p"
                    " WHERE p.status IN ('staged', 'ingesting', 'manual') ORDER BY p.job_id"
                )
            ).mappings()
        ],
    )
    retries = conn.execute(
        sa.text(
            "SELECT count(*) FROM preservation_events WHERE kind = 'retry'"
            f" AND {_DAY.format(col='at')} = :d"
        ),
        p,
    ).scalar_one()
    preserved = conn.execute(
        sa.text(
            "SELECT job_id, s3_prefix FROM preservation_packages WHERE status = 'preserved'"
            f" AND {_DAY.format(col='finished_at')} = :d ORDER BY job_id"
        ),
        p,
    ).all()
    expected = {
        int(r[0]): int(r[1])
        for r in conn.execute(
            sa.text(
                "SELECT job_id, count(*) FROM preservation_files WHERE status = 'verified'"
                " AND job_id = ANY(:jobs) GROUP BY job_id"
            ),
            {"jobs": [r[0] for r in preserved]},
        )
    }
    return {
        "files_ingested": int(files[0]),
        "bytes_ingested": int(files[1]),
        "file_ingest_seconds": round(float(files[2]), 3),
        "arks_issued": {"file": int(arks.get("file", 0)), "package": int(arks.get("package", 0))},
        "packages_preserved": len(durations),
        "ingest_seconds": {
            "total": round(sum(durations), 3),
            "median": round(statistics.median(durations), 3) if durations else 0.0,
            "max": round(max(durations), 3) if durations else 0.0,
        },
        "retries": int(retries),
        "per_day": per_day,
        "temporary_zone": zone,
        "manual_queue": records.manual_queue(conn),
        "_preserved_prefixes": [
            (int(j), str(pfx), expected.get(int(j), 0)) for j, pfx in preserved
        ],
    }


def _store_side(settings: Settings, cfg: PreservationConfig, db: dict[str, Any]) -> dict[str, Any]:
    """Objects and bytes under the package prefix; per package preserved today, DB vs store."""
    client = make_client(settings, cfg)
    bucket = settings.s3.bucket
    total_objects = total_bytes = 0
    by_prefix: dict[str, int] = {}
    wanted = {pfx for _, pfx, _ in db["_preserved_prefixes"]}
    paginator = client.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=bucket, Prefix=cfg.key_prefix.strip("/") + "/"):
        for obj in page.get("Contents", []) or []:
            total_objects += 1
            total_bytes += int(obj["Size"])
            pfx = "/".join(obj["Key"].split("/")[:3]) + "/"
            if pfx in wanted:
                by_prefix[pfx] = by_prefix.get(pfx, 0) + 1
    mismatches = [
        {"job_id": job, "db_files": n, "stored_objects": by_prefix.get(pfx, 0)}
        for job, pfx, n in db["_preserved_prefixes"]
        if by_prefix.get(pfx, 0) != n
    ]
    return {
        "bucket": bucket,
        "objects": total_objects,
        "bytes": total_bytes,
        "packages_checked": len(wanted),
        "mismatches": mismatches,
    }


def _write(path: Path, text: str) -> None:
    atomic_write_text(path, text)


def _text(report: dict[str, Any]) -> str:
    db, st = report["db"], report["store"]
    lines = [
        f"Preservation report for {report['day']} (generated {report['generated_at']})",
        "",
        f"Files ingested and verified: {db['files_ingested']} ({db['bytes_ingested']} bytes)",
        f"Packages preserved: {db['packages_preserved']}; ingest durations (s): total"
        f" {db['ingest_seconds']['total']}, median {db['ingest_seconds']['median']},"
        f" max {db['ingest_seconds']['max']}",
        f"ARKs issued: {db['arks_issued']['file']} files, {db['arks_issued']['package']} packages",
        f"Automatic retries (transient errors): {db['retries']}",
        "",
        "Files and bytes ingested per day (last 30 days):",
        *[f"  {d['day']}  {d['files']:>6} files  {d['bytes']:>15} bytes" for d in db["per_day"]],
        "",
        f"Jobs in the temporary zone: {len(db['temporary_zone'])}",
        *[
            f"  job {z['job_id']}  harvest definition {z['harvest_id']} ({z['harvest_name']})"
            f"  {z['status']}  {z['bytes']} bytes  staged {z['staged_at']}"
            for z in db["temporary_zone"]
        ],
        "",
        f"Manual queue: {len(db['manual_queue'])}",
        *[f"  job {m['job_id']} ({m['harvest_name']}): {m['error']}" for m in db["manual_queue"]],
        "",
    ]
    if "error" in st:
        lines.append(f"Object store: unavailable ({st['error']})")
    else:
        lines += [
            f"Object store {st['bucket']}: {st['objects']} objects, {st['bytes']} bytes",
            f"Packages preserved that day checked against the store: {st['packages_checked']},"
            f" mismatches: {len(st['mismatches'])}",
            *[
                f"  job {m['job_id']}: {m['db_files']} files in the DB,"
                f" {m['stored_objects']} objects in the store"
                for m in st["mismatches"]
            ],
        ]
    return "\n".join(lines) + "\n"


def preservation_report(day: date | str, settings: Settings | None = None) -> dict[str, Any]:
    """Compute the day's statistics, UPSERT them into ``preservation_stats``, write the report.

    Returns ``{"day", "text_path", "json_path", "stats"}`` (stats: the flat figures stored).
    """
    settings = settings or get_settings()
    cfg = PreservationConfig.from_settings(settings)
    the_day = _day(day)
    engine = get_engine(settings.harvest_db_url)
    with engine.connect() as conn:
        db = _db_side(conn, the_day)
    try:
        store = _store_side(settings, cfg, db)
    except Exception as exc:  # the DB side is still worth reporting
        log.warning("preservation report: object store unavailable: %s", exc)
        store = {"error": str(exc)}
    db.pop("_preserved_prefixes")
    stats = {
        "files_ingested": db["files_ingested"],
        "bytes_ingested": db["bytes_ingested"],
        "arks_issued_file": db["arks_issued"]["file"],
        "arks_issued_package": db["arks_issued"]["package"],
        "packages_preserved": db["packages_preserved"],
        "ingest_seconds_total": db["ingest_seconds"]["total"],
        "ingest_seconds_median": db["ingest_seconds"]["median"],
        "packages_in_temporary_zone": len(db["temporary_zone"]),
        "packages_manual": len(db["manual_queue"]),
        "retries": db["retries"],
    }
    if "error" not in store:
        stats |= {
            "store_objects": store["objects"],
            "store_bytes": store["bytes"],
            "store_mismatches": len(store["mismatches"]),
        }
    with engine.begin() as conn:
        for key, value in stats.items():
            conn.execute(
                sa.text(
                    "INSERT INTO preservation_stats (day, key, value) VALUES (:d, :k, :v)"
                    " ON CONFLICT (day, key) DO UPDATE SET value = EXCLUDED.value"
                ),
                {"d": the_day, "k": key, "v": float(value)},
            )
    report = {
        "day": str(the_day),
        "generated_at": datetime.now().astimezone().isoformat(timespec="seconds"),
        "db": db,
        "store": store,
        "stats": stats,
    }
    out = cfg.reports_root(settings) / str(the_day)
    text_path, json_path = out / "preservation-report.txt", out / "preservation-report.json"
    _write(text_path, _text(report))
    _write(json_path, json.dumps(report, indent=2, default=str, sort_keys=True))
    log.info("preservation report for %s: %s", the_day, stats)
    return {
        "day": str(the_day),
        "text_path": str(text_path),
        "json_path": str(json_path),
        "stats": stats,
    }
