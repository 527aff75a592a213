"""Retrospective deliveries (ARC or WARC files from elsewhere) registered as jobs.

Why a job: everything downstream (indexing chain, preservation's one bag per job, the
definition → job → file levels) is organised by job. A delivery directory becomes one DONE job
of a harvest definition ``delivery:<name>``, its files hard-linked (or copied) into ``warcs/``
beside a metadata WARC we write listing them. Files neither WARC nor ARC, or already indexed,
are refused with a message; registering the same name again does nothing.
"""

from __future__ import annotations

import io
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from warcio.warcwriter import WARCWriter

from harvest import jobs
from harvestflow.atomic import atomic_open, place
from harvestflow.contracts.jobdir import JobDir
from harvestflow.db import get_engine
from harvestflow.formats.harvest_channels import Channel
from harvestflow.settings import Settings, get_settings
from indexing import manifest
from indexing.files import sha1_of
from indexing.layout import is_warc_name
from indexing.record_model import NotAWarcError, sniff_format

log = logging.getLogger(__name__)

TEMPLATE = "delivery"


@dataclass
class DeliveryResult:
    """What registering a delivery did."""

    name: str
    job_id: int | None = None
    harvest_id: int | None = None
    job_dir: str | None = None
    registered: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)
    already: bool = False

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def _definition_name(name: str) -> str:
    return f"delivery:{name}"


def _candidates(source: Path, result: DeliveryResult) -> list[tuple[Path, str]]:
    """(path, format) of the delivered archive files; the others are refused with a reason."""
    found: list[tuple[Path, str]] = []
    for path in sorted(source.iterdir()):
        if not path.is_file() or path.name.startswith("."):
            continue
        if not is_warc_name(path.name):
            result.refused[path.name] = "not named .arc, .arc.gz, .warc or .warc.gz"
            continue
        try:
            found.append((path, sniff_format(path)))
        except NotAWarcError as exc:
            result.refused[path.name] = str(exc)
        except OSError as exc:
            result.refused[path.name] = f"cannot read: {exc}"
    return found


def _metadata_warc(
    dest: Path, name: str, source: Path, files: list[tuple[Path, str, int, str]]
) -> None:
    """The delivery's metadata WARC: what was delivered, from where, with fixity values."""
    with atomic_open(dest, "wb") as out:
        writer = WARCWriter(out, gzip=True)
        writer.write_record(
            writer.create_warcinfo_record(
                dest.name,
                {
                    "software": "harvestflow indexing.delivery",
                    "format": "WARC File Format 1.0",
                    "description": f"retrospective delivery {name!r} from {source}",
                    "isPartOf": _definition_name(name),
                },
            )
        )
        listing = "".join(
            json.dumps({"file": p.name, "size": size, "sha1": sha1, "format": fmt}) + "\n"
            for p, fmt, size, sha1 in files
        ).encode("utf-8")
        writer.write_record(
            writer.create_warc_record(
                f"metadata://harvestflow/delivery/{name}/files",
                "metadata",
                payload=io.BytesIO(listing),
                warc_content_type="application/x-ndjson",
            )
        )


def register_delivery(
    source: Path | str, name: str, settings: Settings | None = None
) -> DeliveryResult:
    """Register the archive files of directory ``source`` as the job of delivery ``name``."""
    settings = settings or get_settings()
    source = Path(source).resolve()
    result = DeliveryResult(name)
    if not source.is_dir():
        raise NotADirectoryError(f"delivery {name!r}: {source} is not a directory")
    engine = get_engine(settings.harvest_db_url)
    with engine.connect() as conn:
        existing = jobs.job_of_definition_named(conn, _definition_name(name))
    if existing is not None:
        result.job_id, result.harvest_id, result.job_dir = existing
        result.already = True
        log.warning("delivery %r: already registered as job %s, nothing done", name, existing[0])
        return result
    candidates = _candidates(source, result)
    known = manifest.known_names(engine, [p.name for p, _ in candidates])
    for path, _ in candidates:
        if path.name in known:
            result.refused[path.name] = "a file of this name is already in the index manifest"
    files = [(p, fmt, p.stat().st_size, sha1_of(p)) for p, fmt in candidates if p.name not in known]
    if not files:
        log.error("delivery %r: no archive file to register in %s", name, source)
        return result
    with engine.begin() as conn:
        harvest_id, job_id = jobs.register_done_job(
            conn,
            name=_definition_name(name),
            comments=f"retrospective delivery from {source}",
            reason="a delivery, never harvested",
            channel=Channel.DELIVERY.value,
            template=TEMPLATE,
            spec={"delivery": name, "source": str(source)},
        )
        job_dir = settings.data_dir / "deliveries" / f"{job_id}-{_safe(name)}"
        warcs = JobDir(job_dir).warcs  # the layout of a crawled job's directory
        warcs.mkdir(parents=True, exist_ok=True)
        for path, *_ in files:
            place(path, warcs / path.name)
        _metadata_warc(warcs / f"{job_id}-metadata-1.warc.gz", name, source, files)
        # the job becomes visible to the chain (job_dir set) only with its files in place
        jobs.set_job_dir(conn, job_id, str(job_dir))
    result.job_id, result.harvest_id, result.job_dir = job_id, harvest_id, str(job_dir)
    result.registered = [p.name for p, *_ in files]
    log.info(
        "delivery %r: %d files registered as job %s (%s); %d refused",
        name,
        len(files),
        job_id,
        job_dir,
        len(result.refused),
    )
    for file_name, why in result.refused.items():
        log.error("delivery %r: %s refused: %s", name, file_name, why)
    return result


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:80] or "delivery"


__all__ = ["DeliveryResult", "register_delivery"]
