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


# counts the stack walks and module scans of `import crawler.internals` in a fresh interpreter,
# then names the module of each deprecated alias Scrapy's TLS modules make
_TLS_ALIASES = """
import inspect, json
walks = []
for name in ("stack", "getmodule"):
    real = getattr(inspect, name)
    setattr(inspect, name, lambda *a, _real=real, _name=name, **k: walks.append(_name) or _real(*a, **k))
import crawler.internals
import scrapy.utils.deprecate
from scrapy.core.downloader import contextfactory, tls
print(json.dumps({
    "walks": walks,
    "restored": scrapy.utils.deprecate.inspect is inspect,
    "modules": [tls.ScrapyClientTLSOptions.__module__,
                contextfactory.ScrapyClientContextFactory.__module__,
                contextfactory.AcceptableProtocolsContextFactory.__module__],
}))
"""


def test_scrapys_deprecated_tls_aliases_are_named_without_walking_the_stack() -> None:
    """crawler.internals imports Scrapy's TLS modules with their aliases' module read off the
    caller's frame (crawler/internals.py says why): no ``inspect.stack()`` nor module scan, the
    same ``__module__`` Scrapy names, and Scrapy's ``inspect`` given back."""
    import inspect
    import json
    import subprocess
    import sys

    import scrapy.utils.deprecate

    # the cost the lookup avoids is still there in this Scrapy release (else drop the lookup)
    source = inspect.getsource(scrapy.utils.deprecate.create_deprecated_class)
    assert "inspect.stack()[1]" in source and "inspect.getmodule(frm[0])" in source
    done = subprocess.run(
        [sys.executable, "-c", _TLS_ALIASES], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["walks"] == []
    assert seen["restored"] is True
    assert seen["modules"] == [
        "scrapy.core.downloader.tls",
        "scrapy.core.downloader.contextfactory",
        "scrapy.core.downloader.contextfactory",
    ]
