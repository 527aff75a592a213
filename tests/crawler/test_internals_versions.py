"""The Scrapy, Twisted and warcio releases installed are inside the ranges pyproject.toml declares.

Why: the crawler relies on Scrapy's engine API and on a few private Scrapy and Twisted parts
(crawler/internals.py), which change between minor releases. A fresh install takes the newest
release a range allows, so each range needs an upper bound, and the release installed here —
the one every crawler test runs on — must be inside it; otherwise the tests vouch for a
release nobody installs.
"""

from __future__ import annotations

import tomllib
from importlib.metadata import version
from pathlib import Path

from packaging.requirements import Requirement

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
PINNED = ("scrapy", "twisted", "warcio")
UPPER = {"<", "<=", "==", "~=", "==="}


def _declared() -> dict[str, Requirement]:
    data = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    requirements = [Requirement(line) for line in data["project"]["dependencies"]]
    return {r.name.lower(): r for r in requirements}


def test_scrapy_twisted_warcio_ranges_are_bounded_and_hold_the_installed_release() -> None:
    declared = _declared()
    problems = []
    for name in PINNED:
        req = declared.get(name)
        if req is None:
            problems.append(f"{name}: not declared in [project] dependencies")
            continue
        if not any(spec.operator in UPPER for spec in req.specifier):
            problems.append(f"{name}{req.specifier}: no upper bound")
        installed = version(name)
        if not req.specifier.contains(installed, prereleases=True):
            problems.append(f"{name} {installed} is installed, outside {name}{req.specifier}")
    assert problems == []
