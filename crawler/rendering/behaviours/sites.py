"""Site-specific behaviours: a folder of JavaScript files (the template's
``render_site_behaviours``), each run in the pages whose URL matches its ``// @match`` header.

Why: a curator can teach the crawler a difficult site without a release. A file's header names
its patterns, and optionally ``@name`` and ``@timeout``; its body runs as an async function with
the ``hf`` helpers, and what it returns goes to the behaviour report. A file that cannot be read
or has no valid pattern is left out, named in crawler.log.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path

from harvestflow.settings import base_dir

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 256 * 1024
_HEADER = re.compile(r"^\s*//\s*@(\w+)\s+(.*?)\s*$")
HF_API = """{
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  visible: (el) => !!el && el.getClientRects().length > 0,
  click: (el) => { el.scrollIntoView({block: 'center'}); el.click(); },
}"""


@dataclass(frozen=True)
class SiteBehaviour:
    """One behaviour file: its name, URL patterns, time limit and source."""

    name: str
    patterns: tuple[re.Pattern[str], ...]
    timeout_s: float
    source: str

    def matches(self, url: str) -> bool:
        return any(p.search(url) for p in self.patterns)

    def expression(self) -> str:
        """The file as one expression: its body run with ``hf``, raced against its limit."""
        limit = int(self.timeout_s * 1000)
        return (
            f"Promise.race([(async (hf) => {{\n{self.source}\n}})({HF_API}),"
            f" new Promise((resolve) => setTimeout(() => resolve('timeout'), {limit}))])"
        )


def parse_behaviour(path: Path, default_timeout_s: float) -> SiteBehaviour:
    """One behaviour file (ValueError saying what is wrong with it)."""
    if path.stat().st_size > MAX_FILE_BYTES:
        raise ValueError(f"larger than {MAX_FILE_BYTES} bytes")
    source = path.read_text(encoding="utf-8")
    name, timeout, patterns = path.stem, default_timeout_s, []
    for lineno, line in enumerate(source.splitlines(), 1):
        if not line.strip():
            continue
        m = _HEADER.match(line)
        if m is None:
            if line.lstrip().startswith("//"):
                continue
            break  # the header ends at the first line of code
        key, value = m.groups()
        if key == "match":
            try:
                patterns.append(re.compile(value))
            except re.error as exc:
                raise ValueError(f"line {lineno}: bad @match pattern {value!r}: {exc}") from exc
        elif key == "name":
            name = value
        elif key == "timeout":
            try:
                timeout = min(float(value), default_timeout_s * 4)
            except ValueError as exc:
                raise ValueError(f"line {lineno}: bad @timeout {value!r}") from exc
    if not patterns:
        raise ValueError("no '// @match <pattern>' line in its header")
    return SiteBehaviour(name, tuple(patterns), timeout, source)


def load_site_behaviours(folder: str, default_timeout_s: float) -> list[SiteBehaviour]:
    """The ``*.js`` behaviours of ``folder`` (relative: under the deployment's base directory),
    in name order; none when ``folder`` is empty."""
    if not folder:
        return []
    path = Path(folder)
    if not path.is_absolute():
        path = base_dir() / path
    if not path.is_dir():
        log.error("render_site_behaviours: %s is not a folder: no site behaviours", path)
        return []
    out = []
    for file in sorted(path.glob("*.js")):
        try:
            out.append(parse_behaviour(file, default_timeout_s))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            log.error("site behaviour %s left out: %s", file, exc)
    log.info("site behaviours from %s: %s", path, ", ".join(b.name for b in out) or "none")
    return out
