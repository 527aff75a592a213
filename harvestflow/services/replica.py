"""The second embedded S3 server: preservation's replica copy on the one-machine default.

Why a second SeaweedFS rather than a second bucket: a copy on the same server shares its disk,
process and credentials, so one failure loses both. With ``[s3_replica]`` enabled and no
``endpoint_url``, a server of its own (data under ``<data_dir>/s3-replica``, its own ports and
credentials) stands in for another site; with an ``endpoint_url`` the other site is external and
only checked, like ``[s3]``. Started and stopped with the other services by
:func:`harvestflow.services.start_all` / ``stop_all``.
"""

from __future__ import annotations

import logging

from harvestflow.s3 import REPLICA_SECTION, replica_embedded, replica_section, replica_target
from harvestflow.services.seaweedfs import EmbeddedSeaweedFS
from harvestflow.settings import Settings

log = logging.getLogger(__name__)

NAME = "seaweedfs-replica"


def replica_seaweedfs_for(settings: Settings) -> EmbeddedSeaweedFS | None:
    """The embedded replica server, or None (no replica, or an external one)."""
    if not replica_embedded(settings):
        return None
    section = replica_section(settings)
    assert section is not None
    return EmbeddedSeaweedFS(
        settings.path(str(section["data_subdir"])),
        host=str(section["host"]),
        s3_port=int(section["s3_port"]),
        master_port=int(section["master_port"]),
        volume_port=int(section["volume_port"]),
        filer_port=int(section["filer_port"]),
        access_key=str(section["access_key"]),
        secret_key=str(section["secret_key"]),
        section=REPLICA_SECTION,
    )


def ensure_replica_bucket(settings: Settings) -> None:
    """Create the replica's bucket if missing (embedded or external replica; idempotent):
    :func:`harvestflow.services.start_all` calls it once the replica's server answers."""
    target = replica_target(settings)
    if target is not None:
        from botocore.exceptions import ClientError

        from harvestflow.s3 import s3_client

        client = s3_client(settings, target=target)
        try:
            client.head_bucket(Bucket=target.bucket)
        except ClientError:
            client.create_bucket(Bucket=target.bucket)
            log.info("created bucket %s on the replica %s", target.bucket, target.endpoint_url)


def stop_replica(settings: Settings) -> bool:
    server = replica_seaweedfs_for(settings)
    return server.stop() if server is not None else False


def replica_running(settings: Settings) -> bool | None:
    """Whether the replica answers (None when there is no replica)."""
    target = replica_target(settings)
    if target is None:
        return None
    server = replica_seaweedfs_for(settings)
    if server is not None:
        return server.running()
    from urllib.parse import urlparse

    from harvestflow.services.postgres import port_open

    parsed = urlparse(target.endpoint_url)
    return port_open(parsed.hostname or "127.0.0.1", parsed.port or 443)
