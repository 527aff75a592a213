"""A crawler's summary.json written by hand, for tests of what reads it."""

from __future__ import annotations


def write_summary(job_json: str, domains: dict[str, tuple[int, int, int]], status="complete"):
    """A crawler summary.json beside ``job_json`` (domain -> (objects, bytes, stop reason))."""
    import json
    from pathlib import Path

    path = Path(job_json)
    spec = json.loads(path.read_text())
    by_domain = {d["domain"]: d["config_id"] for d in spec["domains"]}
    summary = {
        "job_id": spec["job_id"],
        "status": status,
        "started": "2026-11-22T03:00:00Z",
        "ended": "2026-11-22T03:10:00Z",
        "urls": sum(v[0] for v in domains.values()),
        "bytes": sum(v[1] for v in domains.values()),
        "warcs": [],
        "domains": {
            d: {"config_id": by_domain[d], "objects": o, "bytes": b, "stop_reason": r}
            for d, (o, b, r) in domains.items()
        },
    }
    (path.parent / "summary.json").write_text(json.dumps(summary))
    return summary
