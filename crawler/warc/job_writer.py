"""A job's rolling WARC writer, with the warcinfo every file of the job starts with.

Why here and not in the crawl's context: what the warcinfo says (software, operator,
publisher, what the job is part of, template, robots policy, user agent) is WARC output,
decided once per job from its spec.
"""

from __future__ import annotations

import socket
from pathlib import Path

from crawler.jobspec import JobSpec
from crawler.warc.files import RotatingWarcWriter

SOFTWARE = "harvestflow-crawler/0.1 (Scrapy, warcio)"


def job_warc_writer(spec: JobSpec, warc_dir: Path, partition: int | None) -> RotatingWarcWriter:
    """The job's writer; ``partition`` (a partitioned job's process index) keeps the names of
    its WARCs unique across the job's processes."""
    t = spec.template
    return RotatingWarcWriter(
        warc_dir,
        spec.warc_prefix,
        t.warc_max_size,
        {
            "software": SOFTWARE,
            "format": "WARC File Format 1.1",
            "conformsTo": "http://iipc.github.io/warc-specifications/specifications/"
            "warc-format/warc-1.1/",
            "operator": spec.operator,
            "publisher": spec.organisation,
            "isPartOf": f"job {spec.job_id} of harvest {spec.harvest_id} {spec.harvest_name}",
            "description": f"template {t.name}, scope {t.scope}, max hops {t.max_hops}",
            "robots": "obey" if t.obey_robots else "ignore",
            "http-header-user-agent": spec.user_agent,
            "http-header-from": spec.from_email,
        },
        # the process part keeps the names of a partitioned job's WARCs unique
        hostname=None if partition is None else f"{socket.gethostname()}-p{partition}",
    )
