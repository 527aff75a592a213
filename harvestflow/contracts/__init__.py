"""The contracts between stages: what one stage writes and another reads, owned once.

- :mod:`.jobdir`: the layout of a job's directory (job.json, warcs/, logs/crawl.log, reports/,
  state/, summary.json), one object instead of path literals in every stage;
- :mod:`.jobspec`: the job spec (job.json) harvest writes and the crawler runs;
- :mod:`.summary`: the job summary (summary.json) the crawler writes and harvest, QA, the
  curator pages and the demo read.

Each file model has a ``version`` field; files written before it existed (no ``version``) are
read as version 0, the same as today's. A field of the wrong type is a :class:`ContractError`
naming the file and the field. This package is part of the core: stage libraries import it; it
imports none of them.
"""

from __future__ import annotations

from harvestflow.errors import HarvestflowError


class ContractError(HarvestflowError, ValueError):
    """A contract file that cannot be read as its model: names the file and the field."""
