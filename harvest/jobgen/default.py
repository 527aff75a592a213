"""NetarchiveSuite's default job generator (REFERENCE.md §5, steps 1-3).

Why chunks: configurations arrive as a stream; each chunk of ``domain_config_subset_size`` is
sorted and split on its own, and the last job of a chunk is closed with it (as NetarchiveSuite's
``AbstractJobGenerator`` does), so memory is bounded by one chunk whatever the harvest's size.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator

from harvest.jobgen.expectation import expected_objects
from harvest.jobgen.model import (
    UNLIMITED,
    ConfigInfo,
    HarvestLimits,
    JobGenSettings,
    JobPlan,
    compare_inf,
)

log = logging.getLogger(__name__)

_INF_SORT = 1 << 62  # an unlimited byte limit sorts above every real one


def chunked(items: Iterable[ConfigInfo], size: int) -> Iterator[list[ConfigInfo]]:
    chunk: list[ConfigInfo] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def sort_key_for(limits: HarvestLimits) -> Callable[[ConfigInfo], tuple[str, str, int, int]]:
    """The chunk order: template, attributes, byte limit descending, expected size descending.

    The byte limit is the configuration's narrowed by the harvest's (-1 = unlimited sorts
    first). A closure over the harvest's limit, as it is called once per configuration.
    """
    harvest_bytes = limits.max_bytes

    def key(config: ConfigInfo) -> tuple[str, str, int, int]:
        limit = config.max_bytes
        if harvest_bytes != UNLIMITED and (limit == UNLIMITED or limit > harvest_bytes):
            limit = harvest_bytes
        return (
            config.template,
            config.attributes,
            -_INF_SORT if limit == UNLIMITED else -limit,
            -config.expected,
        )

    return key


def new_job(config: ConfigInfo, limits: HarvestLimits) -> JobPlan:
    """A job started by ``config``: its limits are the harvest's, narrowed by the config's."""
    job = JobPlan(
        template=config.template,
        attributes=config.attributes,
        max_objects_per_domain=limits.max_objects,
        max_bytes_per_domain=limits.max_bytes,
    )
    if compare_inf(config.max_bytes, job.max_bytes_per_domain) < 0:
        job.max_bytes_per_domain = config.max_bytes
        job.config_sets_byte_limit = True
    if compare_inf(config.max_objects, job.max_objects_per_domain) < 0:
        job.max_objects_per_domain = config.max_objects
        job.config_sets_object_limit = True
    add_to_job(job, config)
    return job


def add_to_job(job: JobPlan, config: ConfigInfo) -> None:
    if not job.configs:
        job.min_expected = job.max_expected = config.expected
    else:
        job.min_expected = min(job.min_expected, config.expected)
        job.max_expected = max(job.max_expected, config.expected)
    job.configs.append(config)
    job.domains.add(config.domain)
    job.total_expected += config.expected


def can_accept(
    job: JobPlan, config: ConfigInfo, limits: HarvestLimits, settings: JobGenSettings
) -> bool:
    """Whether ``config`` may join ``job`` (each clause is one NetarchiveSuite rule)."""
    # same template and attributes
    if config.template != job.template or config.attributes != job.attributes:
        return False
    # a domain appears once per job
    if config.domain in job.domains:
        return False
    # snapshot jobs hold at most fixedDomainCountSnapshot domains (0: no such limit)
    if (
        limits.snapshot
        and settings.fixed_domain_count_snapshot > 0
        and len(job.configs) >= settings.fixed_domain_count_snapshot
    ):
        return False
    # byte limit: not below the job's; equal to it when the job's limit came from a config
    cmp = compare_inf(config.max_bytes, job.max_bytes_per_domain)
    if cmp < 0 or (job.config_sets_byte_limit and cmp != 0):
        return False
    # total expected objects of the job
    if job.configs and job.total_expected + config.expected > settings.max_total_size:
        return False
    # similar sizes: a spread up to minAbsoluteSizeDifference is accepted whatever the ratio;
    # beyond it the ratio high / low must not exceed maxRelativeSizeDifference. As
    # NetarchiveSuite's DefaultJobGenerator: a real (not integer) ratio, and an expectation of 0
    # counts as 1, so 0 beside 2500 is refused rather than waved through.
    low = min(job.min_expected, config.expected)
    high = max(job.max_expected, config.expected)
    if high - low <= settings.min_absolute_size_difference:
        return True
    return high <= settings.max_relative_size_difference * max(low, 1)


def split_chunk(
    chunk: list[ConfigInfo], limits: HarvestLimits, settings: JobGenSettings
) -> list[JobPlan]:
    """Sort one chunk and split it into jobs."""
    max_objects, max_bytes = limits.max_objects, limits.max_bytes
    for config in chunk:
        config.expected = expected_objects(config, settings, max_objects, max_bytes)
    chunk.sort(key=sort_key_for(limits))
    jobs: list[JobPlan] = []
    current: JobPlan | None = None
    for config in chunk:
        if current is not None and can_accept(current, config, limits, settings):
            add_to_job(current, config)
            continue
        current = new_job(config, limits)
        jobs.append(current)
    return jobs


def generate(
    configs: Iterable[ConfigInfo], limits: HarvestLimits, settings: JobGenSettings
) -> Iterator[JobPlan]:
    """Job plans for a stream of configurations, chunk by chunk."""
    for chunk in chunked(configs, settings.domain_config_subset_size):
        yield from split_chunk(chunk, limits, settings)
