"""The job summary (summary.json): what a crawl did, written by the crawler last.

Why one model: the crawler writes it (a crawl, a partition child, the merge of the children, a
salvaged crawl) and harvest (history rows, the job's status), the DAG's crawl task, QA, the
curator pages and the demo read it. Each reader used to coerce what it needed (``int(x or
0)``); now :meth:`JobSummary.from_dict` checks each field once and a wrong type is a
:class:`ContractError` naming the file and the field.

A domain entry with a bad field does not make the whole summary unreadable: the harvest DB
records that domain as unfinished and QA leaves it out (as before), so its error is kept in
:attr:`JobSummary.bad_domains` for the readers to report. Keys this reader does not know are
kept and written back. Version 0 (no ``version`` key, files written before the model) reads the
same as version 1.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harvestflow.atomic import atomic_write_text
from harvestflow.contracts import ContractError
from harvestflow.contracts.fields import (
    as_bool,
    as_int,
    as_object,
    as_opt_int,
    as_opt_str,
    as_str,
    as_str_list,
    as_version,
    bad,
)
from harvestflow.formats.stop_reasons import StopReason

log = logging.getLogger(__name__)

SUMMARY_VERSION = 1

# the crawl ends that finish a job: the site's end, its time limit, an operator's stop. Any other
# ("unfinished": SIGTERM, a crash, a salvaged dead crawl) left its frontier to a rerun, which
# resumes it; the crawl task fails on it and the job is not DONE (docs/explanation/workflows.md)
FINISHED_STATUSES = frozenset({"complete", "time_limit", "stopped"})


@dataclass
class DomainSummary:
    """One domain of the job: what was captured and why its harvest stopped."""

    config_id: int | None = None
    objects: int = 0
    bytes: int = 0
    stop_reason: int = StopReason.DOWNLOAD_UNFINISHED
    in_job: bool = True

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str) -> DomainSummary:
        return cls(
            config_id=as_opt_int(where, "config_id", data.get("config_id")),
            objects=as_int(where, "objects", data.get("objects", 0)),
            bytes=as_int(where, "bytes", data.get("bytes", 0)),
            stop_reason=as_int(
                where, "stop_reason", data.get("stop_reason", StopReason.DOWNLOAD_UNFINISHED)
            ),
            in_job=as_bool(where, "in_job", data.get("in_job", True)),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "config_id": self.config_id,
            "objects": self.objects,
            "bytes": self.bytes,
            "stop_reason": self.stop_reason,
            "in_job": self.in_job,
        }


_KNOWN = {
    "version", "job_id", "status", "started", "ended", "urls", "bytes", "warcs",
    "metadata_warc", "domains", "repaired_warcs", "processes", "peak_rss_kb", "salvaged",
    "resumed",
}  # fmt: skip


@dataclass
class JobSummary:
    """summary.json. ``status`` is the crawl's end (complete, time_limit, stopped, unfinished,
    salvaged...); ``started``/``ended`` are ISO 8601 strings as written: ``started`` is the
    job's first run's start, ``resumed`` the start of each later run that resumed it."""

    job_id: int = 0
    status: str = ""
    started: str = ""
    ended: str = ""
    urls: int = 0
    bytes: int = 0
    warcs: list[str] = field(default_factory=list)
    metadata_warc: str | None = None
    domains: dict[str, DomainSummary] = field(default_factory=dict)
    repaired_warcs: list[str] = field(default_factory=list)
    # a partitioned crawl's merged summary: how many children; their peak RSS added up
    processes: int | None = None
    peak_rss_kb: int | None = None
    # a dead crawl finished by crawler/salvage.py: reason, at, repaired_warcs
    salvaged: dict[str, Any] | None = None
    # a job resumed (after a stop, a lost worker): when each later run started; written if any
    resumed: list[str] = field(default_factory=list)
    # the version of the file read (0: written before versions); written: the current one
    version: int = field(default=SUMMARY_VERSION, compare=False)
    # domain -> the error of its entry (the entry is left out of ``domains``); not written
    bad_domains: dict[str, str] = field(default_factory=dict, compare=False)
    # keys of a newer writer, kept as they were
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Any, where: str = "summary.json") -> JobSummary:
        if not isinstance(data, dict):
            raise ContractError(f"{where}: expected a JSON object, got {type(data).__name__}")
        version = as_version(where, data, SUMMARY_VERSION)

        def get(key: str, default: Any) -> Any:  # an absent key or null: the default
            value = data.get(key)
            return default if value is None else value

        domains: dict[str, DomainSummary] = {}
        problems: dict[str, str] = {}
        for name, entry in as_object(where, "domains", get("domains", {})).items():
            try:
                if not isinstance(entry, dict):
                    raise bad(where, f"domains.{name}", "an object", entry)
                domains[name] = DomainSummary.from_dict(entry, f"{where}: domains.{name}")
            except ContractError as exc:
                problems[name] = str(exc)
        salvaged = data.get("salvaged")
        return cls(
            job_id=as_int(where, "job_id", get("job_id", 0)),
            status=as_str(where, "status", get("status", "")),
            started=as_str(where, "started", get("started", "")),
            ended=as_str(where, "ended", get("ended", "")),
            urls=as_int(where, "urls", get("urls", 0)),
            bytes=as_int(where, "bytes", get("bytes", 0)),
            warcs=as_str_list(where, "warcs", get("warcs", [])),
            metadata_warc=as_opt_str(where, "metadata_warc", data.get("metadata_warc")),
            domains=domains,
            repaired_warcs=as_str_list(where, "repaired_warcs", get("repaired_warcs", [])),
            processes=as_opt_int(where, "processes", data.get("processes")),
            peak_rss_kb=as_opt_int(where, "peak_rss_kb", data.get("peak_rss_kb")),
            salvaged=None if salvaged is None else as_object(where, "salvaged", salvaged),
            resumed=as_str_list(where, "resumed", get("resumed", [])),
            version=version,
            bad_domains=problems,
            extra={k: v for k, v in data.items() if k not in _KNOWN},
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON object (the keys summary.json always had, plus ``version``)."""
        data: dict[str, Any] = {
            "version": SUMMARY_VERSION,
            "job_id": self.job_id,
            "status": self.status,
            "started": self.started,
            "ended": self.ended,
            "urls": self.urls,
            "bytes": self.bytes,
            "warcs": list(self.warcs),
            "metadata_warc": self.metadata_warc,
            "domains": {name: d.to_dict() for name, d in self.domains.items()},
            "repaired_warcs": list(self.repaired_warcs),
        }
        for key in ("processes", "peak_rss_kb", "salvaged"):
            if getattr(self, key) is not None:
                data[key] = getattr(self, key)
        if self.resumed:
            data["resumed"] = list(self.resumed)
        return {**self.extra, **data}

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> JobSummary:
        """Read summary.json; FileNotFoundError when there is none (the crawl did not finish),
        ContractError naming the file when it is not JSON or a field is wrong."""
        path = Path(path)
        raw = path.read_bytes()
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ContractError(f"{path}: unreadable summary ({exc})") from exc
        return cls.from_dict(data, str(path))

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write under a temporary name, then rename (readers never see half a file)."""
        text = json.dumps(self.to_dict(), indent=1, sort_keys=True) + "\n"
        atomic_write_text(Path(path), text)

    def brief(self) -> dict[str, Any]:
        """job_id, status, urls and bytes: what a DAG's crawl task returns (its XCom)."""
        return {
            "job_id": self.job_id,
            "status": self.status,
            "urls": self.urls,
            "bytes": self.bytes,
        }

    @property
    def finished(self) -> bool:
        """Whether the crawl reached an end that finishes the job (:data:`FINISHED_STATUSES`)."""
        return self.status in FINISHED_STATUSES

    @property
    def ended_at(self) -> datetime | None:
        """``ended`` as a UTC datetime; None when absent or not ISO 8601."""
        return _parse_time(self.ended)

    @property
    def started_at(self) -> datetime | None:
        return _parse_time(self.started)


def _parse_time(raw: str) -> datetime | None:
    if not raw:
        return None
    try:
        value = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)
