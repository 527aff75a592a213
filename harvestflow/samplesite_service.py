"""The sample website as a platform service (demo, `up`): on its configured port, or a clear error."""

from __future__ import annotations

from typing import Any

from harvestflow.services import ServiceError
from harvestflow.settings import Settings


def start_sample_site(settings: Settings) -> Any:
    from harvestflow import samplesite

    host, port = settings["samplesite"]["host"], int(settings["samplesite"]["port"])
    try:
        return samplesite.start(host, port)
    except OSError as exc:
        raise ServiceError(
            f"the sample site cannot listen on {host}:{port} ({exc.strerror}); "
            "set HARVESTFLOW_SAMPLESITE__PORT to a free port"
        ) from exc
