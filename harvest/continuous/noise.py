"""Change detection that ignores noise: operator rules stripping clocks, tokens and counters.

Why rules instead of a fuzzy hash: a news page whose only difference is "generated at 10:42" or a
fresh session token must not count as changed (it would pull its revisit interval down to the
minimum for nothing), yet any real edit must. A rule is two regular expressions chosen by an
operator who has looked at the page: one searched in the URL (which pages it applies to: a host,
a path pattern) and one whose matches are removed from the body before hashing. The digest of
what remains (``sha1:BASE32`` like the strict one) is compared visit to visit.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import re
from dataclasses import dataclass

import sqlalchemy as sa

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class NoiseRule:
    url_pattern: str
    remove_pattern: str
    comment: str = ""

    def compiled(self) -> tuple[re.Pattern[str], re.Pattern[bytes]]:
        try:
            return re.compile(self.url_pattern), re.compile(self.remove_pattern.encode("utf-8"))
        except re.error as exc:
            raise ValueError(
                f"noise rule {self.url_pattern!r} / {self.remove_pattern!r}: {exc}"
            ) from exc


class NoiseFilter:
    """Compiled rules; ``digest(url, body)`` is None when no rule applies to the URL."""

    def __init__(self, rules: list[NoiseRule]) -> None:
        self.rules = [(rule, *rule.compiled()) for rule in rules]

    def applies(self, url: str) -> bool:
        return any(url_re.search(url) for _, url_re, _ in self.rules)

    def strip(self, url: str, body: bytes) -> bytes | None:
        """The body without the noise of every rule matching ``url`` (None: no rule matches)."""
        matched = False
        for _, url_re, remove_re in self.rules:
            if url_re.search(url):
                body = remove_re.sub(b"", body)
                matched = True
        return body if matched else None

    def digest(self, url: str, body: bytes) -> str | None:
        stripped = self.strip(url, body)
        return None if stripped is None else sha1_b32(stripped)


def sha1_b32(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode("ascii")


def load_rules(engine: sa.Engine) -> list[NoiseRule]:
    """Active rules of table continuous_noise_rules; a rule that does not compile is skipped
    with an error naming it (the others still apply)."""
    rules: list[NoiseRule] = []
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT rule_id, url_pattern, remove_pattern, coalesce(comment, '') AS comment"
                " FROM continuous_noise_rules WHERE active ORDER BY rule_id"
            )
        )
        for row in rows:
            rule = NoiseRule(row.url_pattern, row.remove_pattern, row.comment)
            try:
                rule.compiled()
            except ValueError as exc:
                log.error("continuous_noise_rules id %s skipped: %s", row.rule_id, exc)
                continue
            rules.append(rule)
    return rules


def add_rule(engine: sa.Engine, url_pattern: str, remove_pattern: str, comment: str = "") -> None:
    """Add (or re-activate) a rule; checked before it is stored."""
    NoiseRule(url_pattern, remove_pattern).compiled()
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO continuous_noise_rules (url_pattern, remove_pattern, comment)"
                " VALUES (:u, :r, :c) ON CONFLICT (url_pattern, remove_pattern)"
                " DO UPDATE SET active = true, comment = EXCLUDED.comment"
            ),
            {"u": url_pattern, "r": remove_pattern, "c": comment},
        )
