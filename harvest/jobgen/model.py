"""Plain data the job generators work on (no database here: the rules are unit-testable).

Why ``settings`` as a dataclass: the NetarchiveSuite names and defaults live in config/
([jobgen] of config/harvestflow.toml); a dataclass built from that section makes every rule's
parameters explicit in a test.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harvestflow.settings import get_settings

UNLIMITED = -1


@dataclass(frozen=True)
class JobGenSettings:
    """NetarchiveSuite's job-generator settings, with its defaults."""

    domain_config_subset_size: int = 10000
    max_relative_size_difference: int = 100
    min_absolute_size_difference: int = 2000
    max_total_size: int = 8_000_000
    error_factor_prev_result: int = 10
    error_factor_best_effort: int = 2
    expected_average_bytes_per_object: int = 38000
    max_domain_size: int = 5000
    fixed_domain_count_snapshot: int = 10000
    fixed_domain_count_focused: int = 0
    min_objects_to_trust_small_expectation: int = 50

    @classmethod
    def from_settings(cls, section: dict[str, Any] | None = None) -> JobGenSettings:
        data = section if section is not None else get_settings()["jobgen"]
        known = {k: int(v) for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One historyinfo row of a configuration."""

    objects: int
    bytes: int
    stop_reason: int


@dataclass(slots=True)
class ConfigInfo:
    """A domain configuration as the generators see it.

    ``history`` is newest first. ``attributes`` is a canonical (sorted JSON) string of the
    configuration's template overrides: configurations only share a job with identical ones.
    ``name`` is the configuration's own name (the fixed-count generator sorts by it).
    """

    config_id: int
    domain: str
    template: str
    max_objects: int = UNLIMITED
    max_bytes: int = 1_000_000_000
    attributes: str = "{}"
    history: tuple[HistoryEntry, ...] = ()
    domain_id: int = 0
    expected: int = 0  # filled by the default generator
    name: str = ""


@dataclass
class HarvestLimits:
    """What a job inherits from its harvest definition."""

    snapshot: bool = False
    max_objects: int = UNLIMITED  # per domain (snapshot definitions)
    max_bytes: int = UNLIMITED


@dataclass
class JobPlan:
    """One job as planned by a generator: its configurations and limits."""

    template: str
    attributes: str
    configs: list[ConfigInfo] = field(default_factory=list)
    max_objects_per_domain: int = UNLIMITED
    max_bytes_per_domain: int = UNLIMITED
    config_sets_byte_limit: bool = False
    config_sets_object_limit: bool = False
    total_expected: int = 0
    min_expected: int = 0
    max_expected: int = 0
    domains: set[str] = field(default_factory=set)

    @property
    def config_ids(self) -> list[int]:
        return [c.config_id for c in self.configs]


def is_limit(value: object) -> bool:
    """A budget NetarchiveSuite accepts: a positive integer, or -1 (:data:`UNLIMITED`)."""
    return (
        isinstance(value, int) and not isinstance(value, bool) and (value == UNLIMITED or value > 0)
    )


def max_inf(a: int, b: int) -> int:
    """Maximum where -1 means infinity (the larger of two budgets)."""
    return UNLIMITED if UNLIMITED in (a, b) else max(a, b)


def min_inf(a: int, b: int) -> int:
    """Minimum where -1 means infinity (NetarchiveSuite's NumberUtils.minInf)."""
    if a == UNLIMITED:
        return b
    if b == UNLIMITED:
        return a
    return min(a, b)


def compare_inf(a: int, b: int) -> int:
    """Compare where -1 means infinity: <0, 0, >0 (NetarchiveSuite's NumberUtils.compareInf)."""
    if a == b:
        return 0
    if a == UNLIMITED:
        return 1
    if b == UNLIMITED:
        return -1
    return -1 if a < b else 1
