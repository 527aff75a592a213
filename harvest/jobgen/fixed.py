"""NetarchiveSuite's fixed-domain-count job generator.

Why: the simpler generator, where size estimates are not wanted. Configurations are grouped by
(template, attributes, max objects, max bytes) and each group fills jobs up to
``fixed_domain_count_snapshot`` or ``_focused`` domains, in NetarchiveSuite's order (chunks of
``domain_config_subset_size`` sorted by configuration name, stably), so that the same
configurations share a job as they would there; memory is bounded by one chunk.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from harvest.jobgen.default import chunked
from harvest.jobgen.model import ConfigInfo, HarvestLimits, JobGenSettings, JobPlan, min_inf


def group_key(config: ConfigInfo) -> tuple[str, str, int, int]:
    return (config.template, config.attributes, config.max_objects, config.max_bytes)


def config_name(config: ConfigInfo) -> str:
    """The chunk order (NetarchiveSuite's ``ConfigNamesComparator``, used with a stable sort)."""
    return config.name


def generate(
    configs: Iterable[ConfigInfo], limits: HarvestLimits, settings: JobGenSettings
) -> Iterator[JobPlan]:
    """Job plans for a stream of configurations; a job is yielded as soon as it is full."""
    capacity = (
        settings.fixed_domain_count_snapshot
        if limits.snapshot
        else settings.fixed_domain_count_focused
    )
    open_jobs: dict[tuple[str, str, int, int], JobPlan] = {}
    for chunk in chunked(configs, max(settings.domain_config_subset_size, 1)):
        chunk.sort(key=config_name)  # stable: equal names keep the stream's order
        for config in chunk:
            key = group_key(config)
            job = open_jobs.get(key)
            if job is not None and config.domain in job.domains:
                # a domain appears once per job: close this one early
                yield open_jobs.pop(key)
                job = None
            if job is None:
                job = JobPlan(
                    template=config.template,
                    attributes=config.attributes,
                    max_objects_per_domain=min_inf(config.max_objects, limits.max_objects),
                    max_bytes_per_domain=min_inf(config.max_bytes, limits.max_bytes),
                )
                open_jobs[key] = job
            job.configs.append(config)
            job.domains.add(config.domain)
            if len(job.configs) >= max(capacity, 1):
                yield open_jobs.pop(key)
    yield from open_jobs.values()
