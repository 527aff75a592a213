"""Licences that act: a target's licence status puts an access rule in force on its seed.

Why a rule, and made here: a granted licence (permission to open a site's captures to everyone)
must change what replay serves, and the one place that decides what replay serves is the access
rules (:mod:`access.rules`); a rule made by a licence is a rule like the others, shown by
``access rules list`` with its origin (``licence:record N``) and who changed the licence. The
rule for each status is a setting (``[access] licence_rules``; by default a granted licence
puts an ``open`` rule: allowed, and open outside the reading room, :mod:`access.gateway`).
:func:`sync` makes the rules in force match the licences: it is run when a licence changes (the
curator pages, the CLI) and by every publish (``access serve``'s refresh pass, the DAG task),
so a licence changed anywhere is in force within ``refresh_interval_s``, and a licence set back
closes its rule the same way. A rule an operator put on the same prefix wins: it is never
replaced nor removed by a licence.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from access import rules
from access.config import AccessConfig
from harvest.selection.annotations import licence_states
from harvestflow.db_reads import Bind, engine_of, read, wrote

log = logging.getLogger(__name__)

ORIGIN = "licence:record "


@dataclass
class SyncResult:
    added: list[rules.Rule] = field(default_factory=list)
    removed: list[rules.Rule] = field(default_factory=list)
    kept_operators: list[str] = field(default_factory=list)  # prefixes an operator's rule holds


@dataclass(frozen=True)
class _Wanted:
    policy: str
    origin: str
    user: str


def _wanted(bind: Bind, policies: dict[str, str]) -> tuple[dict[str, _Wanted], dict[str, str]]:
    """The rule each licensed seed prefix should have, and who last changed each record's
    licence (by origin: who closes a rule the licence no longer wants)."""
    states = read(bind, "licence_states", licence_states)
    wanted: dict[str, _Wanted] = {}
    changed_by = {}
    for state in states:
        origin = f"{ORIGIN}{state.record_id}"
        changed_by[origin] = state.changed_by
        policy = policies.get(str(state.status))
        if policy is None:
            continue
        try:
            prefix = rules.prefix_of(state.seed_url)
        except rules.RuleError as exc:
            log.warning("licence of record %s puts no rule: %s", state.record_id, exc)
            continue
        wanted.setdefault(prefix, _Wanted(policy, origin, state.changed_by))  # first record
    return wanted, changed_by


def sync(bind: Bind, cfg: AccessConfig | None = None) -> SyncResult:
    """Put in force the rules the licences want and close the licence rules they no longer
    want; the operators' rules are left as they are (``bind``: an engine, or a refresh pass's
    reads, told when this wrote)."""
    cfg = cfg or AccessConfig.from_settings()
    wanted, changed_by = _wanted(bind, dict(cfg.licence_rules))
    result = SyncResult()
    in_force = {r.surt: r for r in rules.active(bind)}
    engine = engine_of(bind)
    for rule in in_force.values():
        if rule.origin and rule.origin.startswith(ORIGIN):
            want = wanted.get(rule.surt)
            if want is None or (want.policy, want.origin) != (rule.policy, rule.origin):
                who = changed_by.get(rule.origin, "licence")
                try:
                    result.removed.append(rules.remove(engine, str(rule.rule_id), user=who))
                except rules.RuleError:  # closed meanwhile (another sync)
                    continue
    for prefix, want in wanted.items():
        had = in_force.get(prefix)
        if had is not None and not (had.origin or "").startswith(ORIGIN):
            result.kept_operators.append(prefix)
            continue
        if had is not None and (had.policy, had.origin) == (want.policy, want.origin):
            continue
        result.added.append(
            rules.add(
                engine, prefix, want.policy, user=want.user, origin=want.origin, reason="licence"
            )
        )
    if result.added or result.removed:
        wrote(bind)
        log.info("licence rules: %d put in force, %d closed", len(result.added),
                 len(result.removed))  # fmt: skip
    return result
