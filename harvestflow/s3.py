"""The one way to get an S3 client for the archive's object store (settings ``[s3]``).

Why one factory: preservation, the backup copies, the replay resolver and the service start-up
all talk to the same store; built four times, they disagreed on addressing style and
credentials handling. Each caller still chooses its timeouts and inner retries (preservation
retries longer itself; the resolver answers a reader waiting), passed as botocore ``Config``
options.
"""

from __future__ import annotations

import logging
from typing import Any

from harvestflow.settings import Settings, get_settings

log = logging.getLogger(__name__)

# path-style URLs (http://host:port/bucket/key): what the embedded SeaweedFS and most
# on-premises stores answer; virtual-host style would need a DNS name per bucket
ADDRESSING = {"addressing_style": "path"}


def s3_client(settings: Settings | None = None, **config: Any) -> Any:
    """A boto3 S3 client for ``settings.s3``; ``config``: botocore ``Config`` options.

    Example: ``s3_client(settings, connect_timeout=5, retries={"max_attempts": 4})``.
    """
    import boto3  # imported here: the CLI's start-up does not pay for boto3
    from botocore.config import Config

    s3 = (settings or get_settings()).s3
    options = {**config, "s3": {**ADDRESSING, **config.get("s3", {})}}
    return boto3.client(
        "s3",
        endpoint_url=s3.endpoint_url,
        aws_access_key_id=s3.access_key,
        aws_secret_access_key=s3.secret_key,
        region_name=s3.region,
        config=Config(**options),
    )
