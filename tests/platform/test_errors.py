"""One exception tree: every error class a library package defines derives from its package's
base, and every package base from harvestflow.errors.HarvestflowError (found by reading the
source, so a new class that forgets it fails here). Flow-control exceptions (signals to Scrapy
or between two functions, never shown to a person) are listed with why."""

from __future__ import annotations

import ast
import importlib

import pytest

from harvestflow.errors import HarvestflowError
from harvestflow.settings import PROJECT_ROOT

BASES = {
    "crawler": "crawler.CrawlerError",
    "harvest": "harvest.errors.HarvestError",
    "harvestflow": "harvestflow.errors.HarvestflowError",
    "indexing": "indexing.errors.IndexingError",
    "preservation": "preservation.errors.PreservationError",
    "qa": "qa.errors.QaError",
    "access": "access.errors.AccessError",
    "search": "search.errors.SearchError",
}
# not errors: signals that steer control flow and are always caught by the code next to them
FLOW_CONTROL = {
    "crawler.errors.Refused": "Scrapy IgnoreRequest: routes a refused fetch to its errback",
    "crawler.errors.FetchedByBrowser": "Scrapy IgnoreRequest: drops a request a browser made",
    "crawler.internals.HeaderOverflow": "raised in the bounded header parser, caught by the capture middleware",
    "indexing.warcscan.Fallback": "switches the fast scan to warcio's reader",
    "indexing.warcscan.SkipUnsafe": "skips one record in the fast scan",
    "indexing.record_model.NeedMore": "asks the incremental reader for more bytes",
    "preservation.sources.NotReady": "a job whose files are not all in place yet (not an error)",
}
EXCEPTION_NAMES = ("Error", "Exception", "Failed", "Held", "Mismatch", "Refused")


def _declared() -> list[str]:
    found = []
    for package in BASES:
        for path in sorted((PROJECT_ROOT / package).rglob("*.py")):
            module = ".".join(path.relative_to(PROJECT_ROOT).with_suffix("").parts)
            module = module.removesuffix(".__init__")
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ClassDef) and any(
                    isinstance(b, ast.Name | ast.Attribute)
                    and ast.unparse(b).split(".")[-1].endswith(EXCEPTION_NAMES)
                    for b in node.bases
                ):
                    found.append(f"{module}.{node.name}")
    return found


def _load(dotted: str) -> type:
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


@pytest.mark.parametrize("package", sorted(BASES))
def test_each_package_base_is_under_the_project_base(package: str) -> None:
    assert issubclass(_load(BASES[package]), HarvestflowError)


def test_every_declared_error_is_under_its_package_base() -> None:
    declared = _declared()
    assert len(declared) > 40  # the scan finds the classes (a broken scan must not pass)
    wrong = []
    for dotted in declared:
        cls = _load(dotted)
        if not issubclass(cls, BaseException) or dotted in FLOW_CONTROL:
            continue
        base = _load(BASES[dotted.split(".")[0]])
        # a subclass of a flow-control class is flow control too
        if any(issubclass(cls, _load(f)) for f in FLOW_CONTROL):
            continue
        if not issubclass(cls, base):
            wrong.append(f"{dotted} is not under {BASES[dotted.split('.')[0]]}")
    assert not wrong, "\n".join(wrong)


def test_rebased_classes_are_still_caught_as_before() -> None:
    from crawler.jobspec import JobSpecError
    from harvestflow.formats.seeds import SeedError
    from indexing.record_model import IndexingError, NotAWarcError

    assert issubclass(JobSpecError, ValueError) and issubclass(SeedError, ValueError)
    assert issubclass(NotAWarcError, IndexingError)
