"""Object storage for preservation: verified uploads with S3 additional checksums (SHA-256).

Why by hand rather than ``upload_file``: we must prove that the bytes stored are the bytes whose
checksums went into the bag. Every request carries a SHA-256 (``x-amz-checksum-sha256``) that
the server checks on arrival. When the server is known to check them (probed once per process:
a deliberately wrong checksum must be refused), the checksums sent are the ones computed at
staging (whole file, or each part), so a file altered after staging is refused by the store and
nothing is committed, with no second hashing pass. Otherwise (a store that ignores the header)
we hash while reading and compare with the staged SHA-256 before committing. Checked on SeaweedFS 4.48: PutObject and UploadPart reject a wrong
``x-amz-checksum-sha256`` with ``BadDigest``, CompleteMultipartUpload returns the COMPOSITE
checksum (SHA-256 of the part digests, ``-N``), and HeadObject returns it with
``ChecksumMode=ENABLED``. After upload, :meth:`ObjectStore.verify` compares size, that checksum
and our ``sha256`` metadata (HEAD), then optionally re-reads the whole object.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import os
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from harvestflow.s3 import s3_client
from harvestflow.settings import S3Settings, Settings
from preservation.config import PreservationConfig
from preservation.errors import ChecksumMismatch, MissingFile, TransientError
from preservation.filepart import FilePart
from preservation.store_retry import with_backoff

log = logging.getLogger(__name__)
_SERVER_CHECKS: dict[tuple[str, str], bool] = {}
# re-reads and downloads are read in 1 MiB blocks: each block is a new bytes object, and one of
# 8 MiB came as fresh pages from the kernel every time (~4,000 page faults per 64 MiB object,
# 0.1 CPU-s more per 512 MiB re-read); 1 MiB blocks reuse the allocator's memory
READ_CHUNK = 1024 * 1024


def b64(digest: bytes) -> str:
    return base64.b64encode(digest).decode("ascii")


def make_client(
    settings: Settings, cfg: PreservationConfig, target: S3Settings | None = None
) -> Any:
    """A boto3 S3 client for settings.s3 (or ``target``, the replica), with timeouts and few
    inner retries (we retry longer)."""
    return s3_client(
        settings,
        target=target,
        connect_timeout=cfg.connect_timeout_s,
        read_timeout=cfg.read_timeout_s,
        retries={"max_attempts": 2, "mode": "standard"},
        max_pool_connections=max(10, cfg.upload_threads + 4),
        # we send our own SHA-256 per request; botocore's default CRC32 would be extra work
        request_checksum_calculation="when_required",
        response_checksum_validation="when_required",
        # over plain HTTP botocore would hash every body again to sign it (x-amz-content-sha256:
        # a fifth of an ingest's CPU with the store's check of that hash). Each upload's body is
        # covered by its x-amz-checksum-sha256 instead, a signed header the store checks (see
        # ObjectStore.server_checks_sha256; on a store that ignores it, the file is hashed
        # locally and the re-read verification compares what was stored)
        s3={"payload_signing_enabled": False},
    )


def _status(exc: ClientError) -> int:
    return int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


@dataclass(frozen=True)
class Stored:
    """What the object store says about an object."""

    size: int
    s3_checksum: str | None
    metadata: dict[str, str]


class ObjectStore:
    """Uploads and verifies objects in one bucket, retrying transient failures."""

    def __init__(
        self,
        client: Any,
        bucket: str,
        cfg: PreservationConfig,
        on_retry: Callable[[str, int, BaseException], None] | None = None,
    ) -> None:
        self.client = client
        self.bucket = bucket
        self.cfg = cfg
        self.on_retry = on_retry

    def _retry(self, func: Callable[[], Any], what: str) -> Any:
        hook = self.on_retry
        return with_backoff(
            func,
            what=what,
            attempts=self.cfg.retry_attempts,
            base_delay_s=self.cfg.retry_base_delay_s,
            max_delay_s=self.cfg.retry_max_delay_s,
            on_retry=(lambda n, exc: hook(what, n, exc)) if hook else None,
        )

    def ensure_bucket(self) -> None:
        def run() -> None:
            try:
                self.client.head_bucket(Bucket=self.bucket)
            except ClientError as exc:
                if _status(exc) in (404, 400) or _code(exc) in ("404", "NoSuchBucket"):
                    log.info("creating bucket %s", self.bucket)
                    self.client.create_bucket(Bucket=self.bucket)
                else:
                    raise

        self._retry(run, f"bucket {self.bucket}")

    def server_checks_sha256(self) -> bool:
        """Does the store refuse a wrong ``x-amz-checksum-sha256``? Probed once, then cached."""
        cache_key = (self.client.meta.endpoint_url, self.bucket)
        if cache_key in _SERVER_CHECKS:
            return _SERVER_CHECKS[cache_key]
        key = f"harvestflow-checksum-probe/{uuid.uuid4().hex}"
        wrong = b64(hashlib.sha256(b"something else").digest())

        def run() -> bool:
            try:
                self.client.put_object(
                    Bucket=self.bucket, Key=key, Body=b"probe", ChecksumSHA256=wrong
                )
            except ClientError as exc:
                if _status(exc) == 400:
                    return True
                raise
            self.client.delete_object(Bucket=self.bucket, Key=key)
            return False

        checks: bool = self._retry(run, "checksum probe")
        if not checks:
            log.warning(
                "the object store ignores x-amz-checksum-sha256: hashing every upload locally"
            )
        _SERVER_CHECKS[cache_key] = checks
        return checks

    def head(self, key: str) -> Stored | None:
        """The object's size, S3 checksum and metadata, or None if there is no such object."""

        def run() -> Stored | None:
            try:
                resp = self.client.head_object(Bucket=self.bucket, Key=key, ChecksumMode="ENABLED")
            except ClientError as exc:
                if _status(exc) == 404 or _code(exc) in ("404", "NoSuchKey", "NotFound"):
                    return None
                raise
            return Stored(
                size=int(resp["ContentLength"]),
                s3_checksum=resp.get("ChecksumSHA256"),
                metadata={k.lower(): v for k, v in (resp.get("Metadata") or {}).items()},
            )

        stored: Stored | None = self._retry(run, f"HEAD {key}")
        return stored

    # --- upload ---------------------------------------------------------------------------------
    def upload(
        self,
        path: Path,
        key: str,
        *,
        size: int,
        sha256_hex: str,
        metadata: dict[str, str],
        on_bytes: Callable[[int], None] | None = None,
        part_digests: list[str] | None = None,
    ) -> str:
        """Store ``path`` under ``key``; returns the S3 checksum. The file must still match.

        Raises :class:`MissingFile` if the file is gone, :class:`ChecksumMismatch` if its size or
        SHA-256 differ from the staged ones (nothing is committed then), :class:`TransientError`
        when the store stays unreachable.
        """
        try:
            actual_size = path.stat().st_size
        except FileNotFoundError as exc:
            raise MissingFile(f"{path}: file to preserve is missing", file_name=path.name) from exc
        if actual_size != size:
            raise ChecksumMismatch(
                f"{path}: size is {actual_size} bytes, {size} when staged", file_name=path.name
            )
        meta = {**metadata, "sha256": sha256_hex}
        trusted = self.server_checks_sha256()
        if size <= self.cfg.multipart_threshold:
            return self._upload_single(path, key, size, sha256_hex, meta, on_bytes, trusted)
        expected_parts = -(-size // self.cfg.part_size)
        staged = part_digests if trusted and len(part_digests or []) == expected_parts else None
        return self._upload_multipart(path, key, sha256_hex, meta, on_bytes, staged)

    def _mismatch(self, path: Path, actual_hex: str, staged_hex: str) -> ChecksumMismatch:
        return ChecksumMismatch(
            f"{path}: sha256 {actual_hex} differs from the staged {staged_hex}"
            " (file changed after staging)",
            file_name=path.name,
        )

    def _upload_single(
        self,
        path: Path,
        key: str,
        size: int,
        sha256_hex: str,
        meta: dict[str, str],
        on_bytes: Callable[[int], None] | None,
        trusted: bool,
    ) -> str:
        data: bytes | None = None
        if trusted:  # the store checks the staged SHA-256 against what it receives
            digest = bytes.fromhex(sha256_hex)
        else:
            data = path.read_bytes()
            digest = hashlib.sha256(data).digest()
            if digest.hex() != sha256_hex or len(data) != size:
                raise self._mismatch(path, digest.hex(), sha256_hex)

        def put(body: Any) -> str:
            try:
                resp = self.client.put_object(
                    Bucket=self.bucket,
                    Key=key,
                    Body=body,
                    ChecksumSHA256=b64(digest),
                    Metadata=meta,
                )
            except ClientError as exc:
                if _code(exc) in ("BadDigest", "XAmzContentChecksumMismatch"):
                    raise ChecksumMismatch(
                        f"{path}: content does not match its staged sha256 {sha256_hex}"
                        f" (file changed after staging; the store answered {_code(exc)})",
                        file_name=path.name,
                    ) from exc
                raise
            return str(resp.get("ChecksumSHA256") or b64(digest))

        if data is not None:
            checksum: str = self._retry(lambda: put(data), f"PUT {key}")
        else:
            # streamed from the file in botocore's send blocks, no copy of the whole file in
            # memory (a 64 MiB read_bytes cost about as much CPU as sending it); the store
            # hashes what arrives and refuses it unless it is the staged SHA-256
            try:
                fh = path.open("rb")
            except FileNotFoundError as exc:
                raise MissingFile(
                    f"{path}: file to preserve is missing", file_name=path.name
                ) from exc
            with fh:

                def run() -> str:
                    fh.seek(0)  # each attempt sends the file from its start
                    return put(fh)

                checksum = self._retry(run, f"PUT {key}")
        if on_bytes:
            on_bytes(size)
        return checksum

    def _upload_multipart(
        self,
        path: Path,
        key: str,
        sha256_hex: str,
        meta: dict[str, str],
        on_bytes: Callable[[int], None] | None,
        staged: list[str] | None,
    ) -> str:
        upload_id: str = self._retry(
            lambda: self.client.create_multipart_upload(
                Bucket=self.bucket, Key=key, ChecksumAlgorithm="SHA256", Metadata=meta
            )["UploadId"],
            f"create multipart {key}",
        )
        try:
            parts = self._send_parts(path, key, upload_id, sha256_hex, on_bytes, staged)
        except BaseException:
            self._abort(key, upload_id)
            raise
        joined = b"".join(d for _, _, d in parts)
        composite = b64(hashlib.sha256(joined).digest()) + f"-{len(parts)}"
        doc = {
            "Parts": [
                {"PartNumber": n, "ETag": etag, "ChecksumSHA256": b64(d)} for n, etag, d in parts
            ]
        }

        def complete() -> str:
            try:
                resp = self.client.complete_multipart_upload(
                    Bucket=self.bucket, Key=key, UploadId=upload_id, MultipartUpload=doc
                )
            except ClientError as exc:
                if _code(exc) != "NoSuchUpload":
                    raise
                # a retry after a completion whose answer was lost: the object is there
                stored = self.head(key)
                if stored is not None and stored.s3_checksum == composite:
                    return composite
                raise TransientError(f"{key}: multipart upload vanished before completion") from exc
            return str(resp.get("ChecksumSHA256") or composite)

        checksum: str = self._retry(complete, f"complete multipart {key}")
        if checksum != composite:
            raise ChecksumMismatch(
                f"{key}: store reports checksum {checksum}, we sent parts giving {composite}",
                file_name=path.name,
            )
        return checksum

    def _send_parts(
        self,
        path: Path,
        key: str,
        upload_id: str,
        sha256_hex: str,
        on_bytes: Callable[[int], None] | None,
        staged: list[str] | None,
    ) -> list[tuple[int, str, bytes]]:
        """Upload the parts in parallel (bounded in flight).

        With ``staged`` part checksums the store checks each part against staging, and each
        part is streamed from the file (:class:`FilePart`: no copy of the part in memory);
        without, we read each part, hash it and the whole file, and compare with the staged
        SHA-256 at the end.
        """
        whole = hashlib.sha256()
        done: list[tuple[int, str, bytes]] = []
        pending: deque[Future[tuple[int, str, bytes]]] = deque()
        threads = max(1, self.cfg.upload_threads)
        part_size = self.cfg.part_size

        def send(number: int, body: bytes | FilePart) -> tuple[int, str, bytes]:
            if staged is not None:
                digest = base64.b64decode(staged[number - 1])
            else:
                assert isinstance(body, bytes)
                digest = hashlib.sha256(body).digest()

            def run() -> str:
                if isinstance(body, FilePart):
                    body.seek(0)  # each attempt sends the part from its start
                try:
                    resp = self.client.upload_part(
                        Bucket=self.bucket,
                        Key=key,
                        UploadId=upload_id,
                        PartNumber=number,
                        Body=body,
                        ChecksumSHA256=b64(digest),
                    )
                except ClientError as exc:
                    if _code(exc) == "NoSuchUpload":
                        raise TransientError(f"{key}: multipart upload lost by the store") from exc
                    if _code(exc) in ("BadDigest", "XAmzContentChecksumMismatch"):
                        raise ChecksumMismatch(
                            f"{path}: part {number} does not match its staged sha256"
                            f" (file changed after staging; the store answered {_code(exc)})",
                            file_name=path.name,
                        ) from exc
                    raise
                return str(resp["ETag"])

            etag: str = self._retry(run, f"part {number} of {key}")
            if on_bytes:
                on_bytes(len(body))
            return number, etag, digest

        def bodies(fh: Any) -> Iterator[bytes | FilePart]:
            if staged is not None:
                size = os.fstat(fh.fileno()).st_size
                for start in range(0, size, part_size):
                    yield FilePart(path, fh.fileno(), start, min(part_size, size - start))
                return
            while data := fh.read(part_size):
                whole.update(data)
                yield data

        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="s3part") as pool:
            try:
                with path.open("rb") as fh:
                    for number, body in enumerate(bodies(fh), start=1):
                        while len(pending) > threads:
                            done.append(pending.popleft().result())
                        pending.append(pool.submit(send, number, body))
                    while pending:
                        done.append(pending.popleft().result())
            except BaseException:
                for fut in pending:
                    fut.cancel()
                raise
        if staged is None and whole.hexdigest() != sha256_hex:
            raise self._mismatch(path, whole.hexdigest(), sha256_hex)
        return sorted(done)

    def _abort(self, key: str, upload_id: str) -> None:
        try:
            self.client.abort_multipart_upload(Bucket=self.bucket, Key=key, UploadId=upload_id)
        except Exception as exc:  # best effort: a stale upload holds no final object
            log.warning("could not abort multipart upload of %s: %s", key, exc)

    def abort_stale_uploads(self, prefix: str) -> int:
        """Abort unfinished multipart uploads under ``prefix`` (left by a crashed attempt)."""
        resp = self._retry(
            lambda: self.client.list_multipart_uploads(Bucket=self.bucket, Prefix=prefix),
            f"list uploads {prefix}",
        )
        count = 0
        for upload in resp.get("Uploads", []) or []:
            self._abort(upload["Key"], upload["UploadId"])
            count += 1
        return count

    # --- verification ---------------------------------------------------------------------------
    def verify(
        self, key: str, *, size: int, sha256_hex: str, s3_checksum: str | None, reread: bool
    ) -> None:
        """HEAD (size, S3 checksum, our sha256 metadata), then optionally a full re-read."""
        stored = self.head(key)
        if stored is None:
            raise MissingFile(f"{key}: object not found in the store after upload")
        problems = []
        if stored.size != size:
            problems.append(f"size {stored.size} != {size}")
        if s3_checksum and stored.s3_checksum and stored.s3_checksum != s3_checksum:
            problems.append(f"S3 checksum {stored.s3_checksum} != {s3_checksum}")
        if stored.metadata.get("sha256") != sha256_hex:
            problems.append(f"sha256 metadata {stored.metadata.get('sha256')} != {sha256_hex}")
        if problems:
            raise ChecksumMismatch(f"{key}: " + "; ".join(problems))
        if reread:
            actual = self._retry(lambda: self._read_sha256(key), f"re-read {key}")
            if actual != (sha256_hex, size):
                raise ChecksumMismatch(
                    f"{key}: re-read gives sha256 {actual[0]} ({actual[1]} bytes),"
                    f" expected {sha256_hex} ({size} bytes)"
                )

    def read_sha256(self, key: str) -> tuple[str, int]:
        """(SHA-256 hex, size) of the stored object, read in full (with retries)."""
        result: tuple[str, int] = self._retry(lambda: self._read_sha256(key), f"read {key}")
        return result

    def download(self, key: str, path: Path) -> tuple[str, int]:
        """Copy the object to ``path`` (with retries); returns its (SHA-256 hex, size)."""

        def run() -> tuple[str, int]:
            body = self.client.get_object(Bucket=self.bucket, Key=key)["Body"]
            digest = hashlib.sha256()
            total = 0
            try:
                with path.open("wb") as out:
                    for chunk in body.iter_chunks(READ_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
                        total += len(chunk)
            finally:
                body.close()
            return digest.hexdigest(), total

        result: tuple[str, int] = self._retry(run, f"download {key}")
        return result

    def _read_sha256(self, key: str) -> tuple[str, int]:
        body = self.client.get_object(Bucket=self.bucket, Key=key)["Body"]
        digest = hashlib.sha256()
        total = 0
        try:
            for chunk in body.iter_chunks(READ_CHUNK):
                digest.update(chunk)
                total += len(chunk)
        finally:
            body.close()
        return digest.hexdigest(), total
