"""Progress reporting shared by every long-running piece of work.

Why: a curator reading an Airflow task log must see where a run stands (done/total, rate, what
is slow) at a steady interval, and an engineer at a terminal wants a progress bar. The same
object does both: it logs a line every ``interval_s`` seconds and, when asked to and attached to
a terminal, draws a tqdm bar.
"""

from __future__ import annotations

import logging
import sys
import time
from types import TracebackType
from typing import Any

log = logging.getLogger(__name__)


class Progress:
    """Counts work done and reports it at a steady interval.

    ``total`` may be None when unknown (a crawl's frontier grows); ``detail`` is a callable
    returning extra words for the line (queue sizes, the slowest host...).
    """

    def __init__(
        self,
        label: str,
        total: int | None = None,
        *,
        interval_s: float = 10.0,
        unit: str = "items",
        logger: logging.Logger | None = None,
        bar: bool = False,
        detail: Any = None,
    ) -> None:
        self.label = label
        self.total = total
        self.unit = unit
        self.interval_s = interval_s
        self.logger = logger or log
        self.detail = detail
        self.done = 0
        self.started = time.monotonic()
        self._last_report = self.started
        self._bar = None
        if bar and sys.stderr.isatty():
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=label, unit=unit, file=sys.stderr)

    def advance(self, n: int = 1) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
        now = time.monotonic()
        if now - self._last_report >= self.interval_s:
            self._last_report = now
            self.report()

    def set_total(self, total: int | None) -> None:
        self.total = total
        if self._bar is not None:
            self._bar.total = total
            self._bar.refresh()

    def line(self) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        rate = self.done / elapsed
        if self.total:
            pct = 100.0 * self.done / self.total
            remaining = (self.total - self.done) / rate if rate > 0 else float("inf")
            eta = f", eta {remaining:.0f}s" if remaining != float("inf") else ""
            text = f"{self.label}: {self.done}/{self.total} {self.unit} ({pct:.1f}%), {rate:.1f}/s{eta}"
        else:
            text = f"{self.label}: {self.done} {self.unit}, {rate:.1f}/s, {elapsed:.0f}s elapsed"
        if self.detail is not None:
            extra = self.detail()
            if extra:
                text += f" | {extra}"
        return text

    def report(self) -> None:
        self.logger.info("%s", self.line())

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        self.report()

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
