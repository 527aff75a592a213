"""NetarchiveSuite's default job generator (``DefaultJobGenerator``: chunk, sort, fill jobs).

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


def job_expectation(
    job: JobPlan, config: ConfigInfo, limits: HarvestLimits, settings: JobGenSettings
) -> int:
    """Expected objects of ``config`` in ``job``: under the job's per-domain limits.

    Why not ``config.expected``: NetarchiveSuite sorts a chunk by the expectation under the
    harvest's limits, but a job's limits are the harvest's narrowed by its first configuration,
    and ``Job.addConfiguration`` / ``canAccept`` count each configuration under those. The two
    differ only when a configuration narrowed the job's limits, so only then is it recomputed.
    """
    if (job.max_objects_per_domain, job.max_bytes_per_domain) == (
        limits.max_objects,
        limits.max_bytes,
    ):
        return config.expected
    return expected_objects(config, settings, job.max_objects_per_domain, job.max_bytes_per_domain)


def new_job(
    config: ConfigInfo, limits: HarvestLimits, settings: JobGenSettings | None = None
) -> JobPlan:
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
    expected = job_expectation(job, config, limits, settings) if settings else config.expected
    add_to_job(job, config, expected)
    return job


def add_to_job(job: JobPlan, config: ConfigInfo, expected: int | None = None) -> None:
    """Add ``config`` counted as ``expected`` objects (default: its chunk expectation)."""
    if expected is None:
        expected = config.expected
    if not job.configs:
        job.min_expected = job.max_expected = expected
    else:
        job.min_expected = min(job.min_expected, expected)
        job.max_expected = max(job.max_expected, expected)
    job.configs.append(config)
    job.domains.add(config.domain)
    job.total_expected += expected


def can_accept(
    job: JobPlan,
    config: ConfigInfo,
    limits: HarvestLimits,
    settings: JobGenSettings,
    expected: int | None = None,
) -> bool:
    """Whether ``config`` may join ``job`` (each clause is one NetarchiveSuite rule).

    ``expected``: the config's expectation under the job's limits (computed when None).
    """
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
    if expected is None:
        expected = job_expectation(job, config, limits, settings)
    # total expected objects of the job
    if job.configs and job.total_expected + expected > settings.max_total_size:
        return False
    # similar sizes: a spread up to minAbsoluteSizeDifference is accepted whatever the ratio;
    # beyond it the ratio high / low must not exceed maxRelativeSizeDifference. As
    # NetarchiveSuite's DefaultJobGenerator: a real (not integer) ratio, and an expectation of 0
    # counts as 1, so 0 beside 2500 is refused rather than waved through.
    low = min(job.min_expected, expected)
    high = max(job.max_expected, expected)
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
        if current is not None:
            expected = job_expectation(current, config, limits, settings)
            if can_accept(current, config, limits, settings, expected):
                add_to_job(current, config, expected)
                continue
        current = new_job(config, limits, settings)
        jobs.append(current)
    return jobs


def generate(
    configs: Iterable[ConfigInfo], limits: HarvestLimits, settings: JobGenSettings
) -> Iterator[JobPlan]:
    """Job plans for a stream of configurations, chunk by chunk."""
    for chunk in chunked(configs, settings.domain_config_subset_size):
        yield from split_chunk(chunk, limits, settings)
