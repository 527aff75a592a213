"""The one way to get an S3 client for the archive's object store (settings ``[s3]``).

Why one factory: preservation, the backup copies, the replay resolver and the service start-up
all talk to the same store; built four times, they disagreed on addressing style and
credentials handling. Each caller still chooses its timeouts and inner retries (preservation
retries longer itself; the resolver answers a reader waiting), passed as botocore ``Config``
options. Preservation's second copy lives on another S3 target (``[s3_replica]``: another
endpoint and credentials, another site in production); :func:`replica_target` reads it and
``s3_client(settings, target=...)`` talks to it.
"""

from __future__ import annotations

import logging
from typing import Any

from harvestflow.settings import S3Settings, Settings, SettingsError, get_settings

log = logging.getLogger(__name__)

# path-style URLs (http://host:port/bucket/key): what the embedded SeaweedFS and most
# on-premises stores answer; virtual-host style would need a DNS name per bucket
ADDRESSING = {"addressing_style": "path"}


REPLICA_SECTION = "s3_replica"


def replica_section(settings: Settings) -> dict[str, Any] | None:
    """The ``[s3_replica]`` section when the second copy is on (``enabled``), else None."""
    section = settings.data.get(REPLICA_SECTION)
    if not section or not section.get("enabled", False):
        return None
    return dict(section)


def replica_embedded(settings: Settings) -> bool:
    """True when the replica is on and no ``endpoint_url`` is set: a second embedded store."""
    section = replica_section(settings)
    return section is not None and not section.get("endpoint_url")


def replica_target(settings: Settings) -> S3Settings | None:
    """Where preservation's second copy goes, or None when there is no second copy.

    An empty ``bucket`` or ``region`` is the ``[s3]`` one. The same endpoint and bucket as the
    first copy is refused: that would be one copy counted twice.
    """
    section = replica_section(settings)
    if section is None:
        return None
    primary = settings.s3
    endpoint = section.get("endpoint_url") or f"http://{section['host']}:{section['s3_port']}"
    target = S3Settings(
        endpoint_url=str(endpoint),
        access_key=str(section["access_key"]),
        secret_key=str(section["secret_key"]),
        region=str(section.get("region") or primary.region),
        bucket=str(section.get("bucket") or primary.bucket),
    )
    if (target.endpoint_url.rstrip("/"), target.bucket) == (
        primary.endpoint_url.rstrip("/"),
        primary.bucket,
    ):
        raise SettingsError(
            f"{settings.source}: [{REPLICA_SECTION}] names the same store and bucket as [s3]"
            f" ({target.endpoint_url}, {target.bucket}): the second copy must be elsewhere"
            f" (another endpoint_url or bucket), or set [{REPLICA_SECTION}] enabled = false"
        )
    return target


def s3_client(
    settings: Settings | None = None, *, target: S3Settings | None = None, **config: Any
) -> Any:
    """A boto3 S3 client for ``settings.s3`` (or ``target``); ``config``: botocore ``Config``
    options.

    Example: ``s3_client(settings, connect_timeout=5, retries={"max_attempts": 4})``.
    """
    import boto3  # imported here: the CLI's start-up does not pay for boto3
    from botocore.config import Config

    s3 = target or (settings or get_settings()).s3
    options = {**config, "s3": {**ADDRESSING, **config.get("s3", {})}}
    return boto3.client(
        "s3",
        endpoint_url=s3.endpoint_url,
        aws_access_key_id=s3.access_key,
        aws_secret_access_key=s3.secret_key,
        region_name=s3.region,
        config=Config(**options),
    )
