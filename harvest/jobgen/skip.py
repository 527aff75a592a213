"""Configurations left out of jobs because they would crawl nothing.

Why: a configuration whose object or byte budget is 0, or whose seed lists hold no active seed
(only blank lines and lines commented out with ``#``), gives a crawl that fetches nothing: a
crawler started for nothing, and a history row of 0 objects that later skews the expectations.
NetarchiveSuite's generators skip configurations without active seeds
(``AbstractJobGenerator.ignoreConfiguration``) and its fixed-count one excludes zero budgets
when a setting asks for it; a crawl engineer expects neither in a job, so both are
always skipped here, and the run's log says how many and why so that curators can fix them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from harvest.jobgen.model import ConfigInfo, HarvestLimits

log = logging.getLogger(__name__)


def active_seeds(text: str) -> list[str]:
    """The seeds of a seed list: non-blank lines not commented out with ``#`` (NAS's rule)."""
    seeds = []
    for line in text.splitlines():
        seed = line.strip()
        if seed and not seed.startswith("#"):
            seeds.append(seed)
    return seeds


def zero_budget(config: ConfigInfo, limits: HarvestLimits) -> bool:
    """Whether the configuration may fetch nothing: its budget, narrowed by the harvest's, is 0.

    -1 means unlimited, so only a real 0 on either side counts (``min_inf`` of the two is 0
    exactly then; compared directly, as this runs once per configuration of a snapshot).
    """
    return (
        config.max_objects == 0
        or config.max_bytes == 0
        or limits.max_objects == 0
        or limits.max_bytes == 0
    )


@dataclass
class SkipCounts:
    """How many configurations a run left out, by reason."""

    zero_budget: int = 0
    no_active_seeds: int = 0

    @property
    def total(self) -> int:
        return self.zero_budget + self.no_active_seeds

    def log_summary(self, harvest_id: int, harvest_num: int) -> None:
        """One warning per run that skipped anything (nothing logged otherwise)."""
        if self.total:
            log.warning(
                "definition %s run %s: %d configuration(s) left out of the jobs:"
                " %d with a zero object/byte budget, %d without an active seed",
                harvest_id,
                harvest_num,
                self.total,
                self.zero_budget,
                self.no_active_seeds,
            )
