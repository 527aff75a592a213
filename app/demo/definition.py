"""The demo selective definition: two domains of the bundled sample site on loopback.

Why: the walking skeleton (``selective_harvest_daily`` against the sample site) and the DAG
tests need a real definition without a curator's import; this makes one, idempotently (a second
call updates the same rows and returns the same id).
"""

from __future__ import annotations

import logging

from sqlalchemy.engine import Engine

from app.demo.samplesite import HOSTS as SAMPLE_HOSTS
from harvest.bootstrap import ensure_reference_data
from harvest.common import engine_or_default
from harvest.definitions import ensure_selective_definition
from harvest.domains import ensure_config

log = logging.getLogger(__name__)

DEMO_NAME = "demo-daily"
DEMO_TEMPLATE = "demo_loopback"
DEMO_HOSTS = {"example-a.test": "www.example-a.test", "example-b.test": "example-b.test"}


def create_demo_definition(
    sample_site_port: int, resolve_ip: str = "127.0.0.1", engine: Engine | None = None
) -> int:
    """The id of the daily demo definition (domains example-a.test and example-b.test)."""
    engine = engine_or_default(engine)
    ensure_reference_data(engine)
    config_ids = []
    with engine.begin() as conn:
        for domain, host in DEMO_HOSTS.items():
            ref = ensure_config(
                conn,
                domain,
                config_name="demo",
                template=DEMO_TEMPLATE,
                seeds=[f"http://{host}:{sample_site_port}/"],
                max_bytes=100_000_000,
                max_objects=-1,
                comments="demo configuration (sample site on loopback)",
            )
            config_ids.append(ref.config_id)
        # every virtual host of the sample site (static.example-a.test serves embeds...)
        resolve = {name: resolve_ip for name in sorted({*SAMPLE_HOSTS, *DEMO_HOSTS.values()})}
        harvest_id = ensure_selective_definition(
            conn,
            DEMO_NAME,
            frequency="daily",
            config_ids=config_ids,
            resolve=resolve,
            comments="demo: the bundled sample site on loopback",
            replace_configs=True,
        )
    log.info("demo definition %s (id %s) on port %s", DEMO_NAME, harvest_id, sample_site_port)
    return harvest_id
