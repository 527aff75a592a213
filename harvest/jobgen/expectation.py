"""How many objects a domain configuration is expected to yield (NetarchiveSuite's rules).

Why: the default job generator groups configurations of similar expected size, so that one
huge site does not hold a job of small ones open for days. The rules are NetarchiveSuite's
``DomainConfiguration.getExpectedNumberOfObjects`` and ``DomainHistory
.getBestHarvestInfoExpectation``.
"""

from __future__ import annotations

from harvest.jobgen.model import UNLIMITED, ConfigInfo, HistoryEntry, JobGenSettings, min_inf
from harvestflow.formats.stop_reasons import StopReason


def best_history(history: tuple[HistoryEntry, ...]) -> HistoryEntry | None:
    """The "best" earlier harvest: newest first, the largest object count seen so far (ties go to
    the older one), stopping at the first complete harvest."""
    best: HistoryEntry | None = None
    for entry in history:
        if best is None or best.objects <= entry.objects:
            best = entry
        if entry.stop_reason == StopReason.DOWNLOAD_COMPLETE:
            return best
    return best


def bytes_per_object(best: HistoryEntry | None, settings: JobGenSettings) -> int:
    """Bytes per object of the best harvest; the default when it is unknown, or smaller than the
    default on a harvest too small (< 50 objects) to be trusted."""
    default = settings.expected_average_bytes_per_object
    if best is None or best.objects <= 0:
        return default
    per_object = best.bytes // best.objects
    if per_object < default and best.objects < settings.min_objects_to_trust_small_expectation:
        return default
    return max(per_object, 1)


def _max_objects(object_limit: int, byte_limit: int, per_object: int) -> int:
    by_bytes = byte_limit // per_object if byte_limit != UNLIMITED else UNLIMITED
    return min_inf(object_limit, by_bytes)


def _div_trunc(a: int, b: int) -> int:
    """Integer division rounding toward zero, as Java's (NetarchiveSuite's) ``/``."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def expected_objects(
    config: ConfigInfo,
    settings: JobGenSettings,
    harvest_max_objects: int = UNLIMITED,
    harvest_max_bytes: int = UNLIMITED,
) -> int:
    """Expected object count of ``config`` in a harvest with the given per-domain limits."""
    best = best_history(config.history)
    per_object = bytes_per_object(best, settings)
    if harvest_max_objects != UNLIMITED or harvest_max_bytes != UNLIMITED:
        maximum = _max_objects(harvest_max_objects, harvest_max_bytes, per_object)
    elif config.max_objects != UNLIMITED or config.max_bytes != UNLIMITED:
        maximum = _max_objects(config.max_objects, config.max_bytes, per_object)
    else:
        maximum = settings.max_domain_size
    if best is None:
        expectation = min_inf(settings.max_domain_size, config.max_objects)
    else:
        minimum = best.objects
        factor = (
            settings.error_factor_prev_result
            if best.stop_reason == StopReason.DOWNLOAD_COMPLETE
            else settings.error_factor_best_effort
        )
        expectation = minimum + _div_trunc(maximum - minimum, factor)
    # the configuration's own limits always cap it ("we always expect to actually hit this
    # limit"): a harvest budget above what the configuration allows does not raise it
    if (config.max_objects > UNLIMITED and maximum > config.max_objects) or (
        config.max_bytes > UNLIMITED and maximum > config.max_bytes // per_object
    ):
        maximum = _max_objects(config.max_objects, config.max_bytes, per_object)
    return min_inf(expectation, maximum)
