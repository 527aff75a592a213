"""The sample website as a platform service (demo, `up`): on its configured port, or a clear error."""

from __future__ import annotations

from typing import Any

from harvestflow.services import ServiceError
from harvestflow.settings import Settings


def start_sample_site(settings: Settings) -> Any:
    from app.demo import samplesite

    host, port = settings["samplesite"]["host"], int(settings["samplesite"]["port"])
    try:
        return samplesite.start(host, port)
    except OSError as exc:
        raise ServiceError(
            f"the sample site cannot listen on {host}:{port} ({exc.strerror}); "
            "set HARVESTFLOW_SAMPLESITE__PORT to a free port"
        ) from exc


def start_demo_site(settings: Settings) -> Any:
    """The sample site for ``up``, with the harvest database's reference data and the demo
    definition pointing at it (so a first ``up`` has something to harvest)."""
    from app.demo.definition import create_demo_definition
    from harvest.bootstrap import ensure_reference_data

    site = start_sample_site(settings)
    ensure_reference_data()
    harvest_id = create_demo_definition(site.port)
    print(f"sample site: {site.url()} — demo definition id {harvest_id}", flush=True)
    return site
