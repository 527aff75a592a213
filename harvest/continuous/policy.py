"""The adaptive revisit policy: how long to wait before visiting a URL again.

Why this shape (Sigurðsson's adaptive revisiting for Heritrix): a first wait chosen from what the
URL is (HTML short, images and documents longer, audio/video longest; front pages sooner than
deep ones), then after each visit the wait is divided by ``changed_factor`` when the content
changed and multiplied by ``unchanged_factor`` when it did not, clamped to ``[min_wait_s,
max_wait_s]``. With ``use_elapsed`` the factor applies to the time actually elapsed since the
previous visit rather than to the planned wait (a URL visited late learns from the real gap).
URLs that cannot be judged (robots exclusion, DNS or connection failures) get ``fixed_wait_s``.
Every ``verify_every``-th visit is sent without If-None-Match / If-Modified-Since: a server whose
validators never change would otherwise answer 304 for ever and hide every change.

Pure functions of their arguments, ``now`` included: the crawl, the tests and the simulated-clock
benchmark all use the same code.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

HOUR = 3600.0
DAY = 86400.0

# content classes and the MIME prefixes that select them (first match wins)
CLASSES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "html",
        (
            "text/html",
            "application/xhtml",
            "text/",
            "application/json",
            "application/rss",
            "application/atom",
            "application/xml",
        ),
    ),
    ("image", ("image/",)),
    (
        "document",
        (
            "application/pdf",
            "application/msword",
            "application/vnd.",
            "application/rtf",
            "application/postscript",
        ),
    ),
    ("av", ("audio/", "video/", "application/ogg", "application/vnd.apple.mpegurl")),
)


def content_class(mime: str | None) -> str:
    """html | image | document | av | other, from a MIME type (parameters ignored)."""
    value = (mime or "").split(";")[0].strip().lower()
    for name, prefixes in CLASSES:
        if value.startswith(prefixes):
            return name
    return "other"


@dataclass(frozen=True)
class RevisitPolicy:
    """Settings of the policy; configurable per template, overridable per host (``merged``)."""

    initial_wait_s: dict[str, float] = field(
        default_factory=lambda: {
            "html": 6 * HOUR,
            "image": 3 * DAY,
            "document": 3 * DAY,
            "av": 7 * DAY,
            "other": 1 * DAY,
        }
    )
    # multiplier of the initial wait per link hop from the seed (front pages are visited sooner)
    depth_factor: float = 1.5
    max_depth_multiplier: float = 8.0
    changed_factor: float = 2.0  # wait / factor after a change
    unchanged_factor: float = 1.5  # wait * factor after no change
    use_elapsed: bool = False
    min_wait_s: float = 1 * HOUR
    max_wait_s: float = 30 * DAY
    fixed_wait_s: float = 1 * DAY  # robots, DNS, connection failures
    # every Nth visit of a URL is unconditional (0: never), so that the digest can contradict
    # validators that keep saying "not modified" (see urlstate: both indicators must agree)
    verify_every: int = 10

    def merged(self, overrides: dict[str, Any] | None) -> RevisitPolicy:
        """A copy with ``overrides`` applied (unknown keys raise: a typo must not pass)."""
        if not overrides:
            return self
        known = {f.name for f in dataclasses.fields(self)}
        unknown = set(overrides) - known
        if unknown:
            raise ValueError(f"unknown revisit policy keys: {', '.join(sorted(unknown))}")
        values = dict(overrides)
        if "initial_wait_s" in values:
            values["initial_wait_s"] = {**self.initial_wait_s, **values["initial_wait_s"]}
        return dataclasses.replace(self, **values)

    def clamp(self, wait: float) -> float:
        return max(self.min_wait_s, min(self.max_wait_s, wait))

    def initial_wait(self, mime: str | None, depth: int) -> float:
        """The first wait of a URL of this type at this depth from its seed."""
        base = self.initial_wait_s.get(content_class(mime), self.initial_wait_s.get("other", DAY))
        multiplier = min(self.max_depth_multiplier, self.depth_factor ** max(0, depth))
        return self.clamp(base * multiplier)

    def next_wait(
        self, current_wait: float, changed: bool, elapsed_s: float | None = None
    ) -> float:
        """The wait after a judged visit (``elapsed_s``: time since the previous visit)."""
        base = current_wait
        if self.use_elapsed and elapsed_s is not None and elapsed_s > 0:
            base = elapsed_s
        wait = base / self.changed_factor if changed else base * self.unchanged_factor
        return self.clamp(wait)


def policy_from_settings(
    conf: dict[str, Any] | None, template: str = "continuous"
) -> RevisitPolicy:
    """The policy of ``template`` from settings [continuous.policy] (+ [continuous.policy.<t>])."""
    conf = conf or {}
    base = {k: v for k, v in conf.items() if not isinstance(v, dict) or k == "initial_wait_s"}
    policy = RevisitPolicy().merged(base)
    per_template = conf.get(template)
    if isinstance(per_template, dict):
        policy = policy.merged(per_template)
    return policy


def template_policies(conf: dict[str, Any] | None) -> dict[str, RevisitPolicy]:
    """Every template named in settings [continuous.policy.<template>] → its policy.

    Why all at once: one run revisits URLs of seeds with different templates; each URL gets the
    policy of its seed's template (then its host's overrides), the base policy when its template
    has no sub-table.
    """
    conf = conf or {}
    return {
        name: policy_from_settings(conf, name)
        for name, value in conf.items()
        if isinstance(value, dict) and name != "initial_wait_s"
    }
