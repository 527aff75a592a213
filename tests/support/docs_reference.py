"""docs/gen_reference.py (the manual's generated reference pages) loaded as a module, for the
tests that check the manual against the code."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from harvestflow.settings import PROJECT_ROOT


def reference_generator() -> ModuleType:
    """docs/gen_reference.py as a module (it is a file of the manual, not a package)."""
    spec = importlib.util.spec_from_file_location(
        "gen_reference", PROJECT_ROOT / "docs" / "gen_reference.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module
