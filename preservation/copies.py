"""The copies of a preserved package: one per S3 target, each uploaded and verified alike.

Why a list rather than a second code path: OAIS practice keeps at least two copies on separate
sites, and what is done to one (upload with SHA-256, HEAD, re-read; audit; repair) is done to
each. The first copy is ``[s3]``; the second, ``[s3_replica]`` when it is enabled (another
endpoint and credentials: another site in production, a second embedded SeaweedFS on one
machine). Copies are named in the ``preservation_copies`` rows and in every message.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from harvestflow.s3 import replica_target
from harvestflow.settings import Settings
from preservation.config import PreservationConfig
from preservation.s3store import ObjectStore, make_client

PRIMARY = "primary"
REPLICA = "replica"


@dataclass(frozen=True)
class Copy:
    """One copy's name and the store that holds it."""

    name: str
    store: ObjectStore

    @property
    def where(self) -> str:
        """The copy as people read it: name, endpoint and bucket."""
        return f"{self.name} ({self.store.client.meta.endpoint_url}, bucket {self.store.bucket})"


def copy_names(settings: Settings) -> list[str]:
    """The configured copies' names, primary first."""
    return [PRIMARY] + ([REPLICA] if replica_target(settings) is not None else [])


def open_copies(
    settings: Settings,
    cfg: PreservationConfig,
    on_retry: Callable[[str, int, BaseException], None] | None = None,
) -> list[Copy]:
    """A store per configured copy, primary first."""
    copies = [
        Copy(PRIMARY, ObjectStore(make_client(settings, cfg), settings.s3.bucket, cfg, on_retry))
    ]
    target = replica_target(settings)
    if target is not None:
        client = make_client(settings, cfg, target)
        copies.append(Copy(REPLICA, ObjectStore(client, target.bucket, cfg, on_retry)))
    return copies
