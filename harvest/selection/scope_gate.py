"""Legal-deposit scope: a target outside the national domains is harvested only with evidence.

Why a gate at the transfer: legal deposit covers the country's web; a site under another
top-level domain is in scope only for a reason a curator recorded (its address in the country,
correspondence: the annotation's scope evidence, :mod:`annotations`). With ``[harvest]
require_scope_evidence = true`` (legal-deposit mode), the selection transfer leaves out every
active record whose seed's host is under none of ``[harvest] national_domains`` and which has
no scope evidence, naming it and what to do, so no such site is harvested until a curator says
why it is in scope; the next transfer after the evidence is recorded harvests it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy.engine import Connection

from harvest.selection.annotations import current
from harvestflow.settings import Settings, SettingsError, get_settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ScopeRule:
    required: bool
    national: tuple[str, ...]  # domain suffixes, without dots at either end: "fr", "gouv.fr"

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> ScopeRule:
        settings = settings or get_settings()
        required = settings.get("harvest", "require_scope_evidence", False)
        if not isinstance(required, bool):
            raise SettingsError(f"[harvest] require_scope_evidence: {required!r} is not true/false")
        given = settings.get("harvest", "national_domains", []) or []
        if isinstance(given, str) or not all(isinstance(d, str) and d.strip(".") for d in given):
            raise SettingsError(
                f"[harvest] national_domains: want a list of domains, got {given!r}"
            )
        national = tuple(d.strip(".").lower() for d in given)
        if required and not national:
            raise SettingsError(
                '[harvest] require_scope_evidence needs [harvest] national_domains (e.g. ["fr"])'
            )
        return cls(required, national)

    def is_national(self, url: str) -> bool:
        host = (urlsplit(url).hostname or "").lower().rstrip(".")
        return any(host == d or host.endswith("." + d) for d in self.national)


def refused(conn: Connection, rows: Sequence[Any], rule: ScopeRule) -> dict[int, str]:
    """The records (``record_id``, ``seed_url``) the rule keeps from being harvested, each with
    the reason (empty when the rule is off)."""
    if not rule.required:
        return {}
    foreign = [r for r in rows if not rule.is_national(r.seed_url)]
    notes = current(conn, [int(r.record_id) for r in foreign]) if foreign else {}
    found = {}
    for row in foreign:
        if not notes[int(row.record_id)].scope_evidence:
            found[int(row.record_id)] = (
                f"record {row.record_id} ({row.seed_url}): not harvested: outside the national"
                f" domains ({', '.join(rule.national)}) and no scope evidence; annotate it"
                " (domain, address or manual evidence) to harvest it under legal deposit"
            )
    return found
