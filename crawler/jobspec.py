"""The job spec (job.json) as the crawler runs it: the model of ``harvestflow.contracts.jobspec``
with the crawler's own normalisation of seeds, and the frozen copy of the spec it ran.

Why the model lives in the core: harvest writes job.json and the crawler reads it; one model
(:class:`JobSpec`, with defaults from settings [crawler], types checked, a bad value named with
its file and key) serves both sides. Here: seeds are captured under the URL the server is asked
for (fragments stripped, see :func:`harvestflow.formats.urls.without_fragment`), and :func:`freeze_job`.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from harvestflow.atomic import commit, tmp_path
from harvestflow.contracts import jobspec as _model
from harvestflow.contracts.jobdir import JOB_JSON
from harvestflow.contracts.jobspec import (
    JOBSPEC_VERSION,
    DomainBudget,
    JobSpec,
    JobSpecError,
    Template,
    template_defaults,
)
from harvestflow.formats.urls import without_fragment

__all__ = [
    "JOBSPEC_VERSION",
    "DomainBudget",
    "JobSpec",
    "JobSpecError",
    "Template",
    "freeze_job",
    "from_dict",
    "load",
    "template_defaults",
]


def _crawl_seeds(job: JobSpec) -> JobSpec:
    """The seeds as the crawler fetches them: captured under the URL the server is asked for
    (see urls.without_fragment), each once."""
    job.seeds = list(dict.fromkeys(u for s in job.seeds if (u := without_fragment(s.strip()))))
    return job


def from_dict(data: dict[str, Any], where: str = "job spec") -> JobSpec:
    """A JobSpec from the parsed JSON, seeds as the crawler fetches them; raises JobSpecError
    naming the key at fault."""
    return _crawl_seeds(_model.from_dict(data, where))


def load(path: Path) -> JobSpec:
    """Read and check a job.json file (the core's reader: JobSpecError naming file and key)."""
    return _crawl_seeds(JobSpec.read(path))


def freeze_job(job_path: Path, out_dir: Path) -> Path:
    """Copy the job spec to ``out_dir/job.json`` (the frozen spec the crawler ran)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    frozen = out_dir / JOB_JSON
    if job_path.resolve() != frozen.resolve():
        tmp = tmp_path(frozen)
        shutil.copyfile(job_path, tmp)
        commit(tmp, frozen)
    return frozen
