"""The optional backup copy of each WARC: a directory or an S3 bucket, always verified.

Why verified: cleanarcrepository deletes the job's original once the backup is there, so "there"
must mean "read back and checked", not "the upload call returned". A directory copy is re-read
and hashed; an S3 object is streamed back and hashed.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path

from harvestflow.s3 import s3_client
from harvestflow.settings import Settings
from indexing.files import BLOCK, ChecksumMismatch, copy_verified, sha1_of

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BackupTarget:
    """Where backups go: ``directory`` or (``bucket``, ``prefix``) on the settings' S3."""

    directory: Path | None = None
    bucket: str | None = None
    prefix: str = ""

    @classmethod
    def from_settings(cls, settings: Settings) -> BackupTarget | None:
        raw = str(settings["indexing"].get("backup") or "").strip()
        if not raw:
            return None
        if raw.startswith("s3://"):
            bucket, _, prefix = raw[5:].partition("/")
            return cls(bucket=bucket, prefix=prefix.strip("/"))
        path = Path(raw)
        return cls(directory=path if path.is_absolute() else settings.data_dir / path)

    def location(self, harvest_id: int | None, name: str) -> str:
        sub = f"{harvest_id if harvest_id is not None else 'unknown'}/{name}"
        if self.directory is not None:
            return str(self.directory / sub)
        key = f"{self.prefix}/{sub}" if self.prefix else sub
        return f"s3://{self.bucket}/{key}"


def _split_s3(location: str) -> tuple[str, str]:
    bucket, _, key = location[5:].partition("/")
    return bucket, key


def copy_and_verify(src: Path, location: str, sha1: str, size: int, settings: Settings) -> None:
    """Copy ``src`` to the backup ``location`` unless a verified copy is already there."""
    if location.startswith("s3://"):
        client = s3_client(settings)
        bucket, key = _split_s3(location)
        if not verify(location, sha1, size, settings):
            client.upload_file(str(src), bucket, key, ExtraArgs={"Metadata": {"sha1": sha1}})
        if not verify(location, sha1, size, settings):
            raise ChecksumMismatch(f"{location}: backup copy does not verify after upload")
        return
    dest = Path(location)
    if not verify(location, sha1, size, settings):
        copy_verified(src, dest, sha1)
    if not verify(location, sha1, size, settings):
        raise ChecksumMismatch(f"{location}: backup copy does not verify after copy")


def verify(location: str, sha1: str, size: int, settings: Settings, deep: bool = True) -> bool:
    """True when the backup copy exists with the right size (and, if ``deep``, SHA-1)."""
    if location.startswith("s3://"):
        client = s3_client(settings)
        bucket, key = _split_s3(location)
        try:
            head = client.head_object(Bucket=bucket, Key=key)
        except client.exceptions.ClientError:
            return False
        if head["ContentLength"] != size:
            return False
        if not deep:
            return True
        h = hashlib.sha1()
        body = client.get_object(Bucket=bucket, Key=key)["Body"]
        for block in iter(lambda: body.read(BLOCK), b""):
            h.update(block)
        return h.hexdigest() == sha1
    path = Path(location)
    if not path.is_file() or path.stat().st_size != size:
        return False
    return not deep or sha1_of(path) == sha1
