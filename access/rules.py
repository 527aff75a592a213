"""Access rules (legal deposit): allow / block / exclude by SURT prefix, versioned in the harvest DB.

Why one home: replay and search must refuse the same captures, so both are generated from the
``access_rules`` table: pywb's ACL file (``.aclj``) and :class:`search.model.AccessRules`.
Semantics are pywb's: the longest matching prefix decides (no rule: allowed), ``block`` refuses
replay (451), ``exclude`` hides the capture, an embargo applies to younger captures only. A rule
is never updated in place: a change closes the old row and inserts one that ``replaces`` it.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import sqlalchemy as sa

from access import POLICIES as POLICIES  # re-exported: the rules' callers use it
from access.errors import AccessError
from harvestflow.atomic import atomic_write_text
from harvestflow.db_reads import Bind, read
from harvestflow.formats.surt import SurtError, surt
from search.model import AccessRules

log = logging.getLogger(__name__)

OPEN = "open"  # allowed, and open outside the reading room (a licence's rule: access.licences)
ACL_NAME = "rules.aclj"
_COLUMNS = (
    "rule_id, surt, policy, embargo_days, reason, created_by, created_at, removed_by,"
    " removed_at, replaces, origin"
)


class RuleError(AccessError, ValueError):
    """A rule that cannot be stored (bad prefix, policy or embargo), named with the value."""


@dataclass(frozen=True)
class Rule:
    rule_id: int
    surt: str
    policy: str
    embargo_days: int | None
    reason: str
    created_by: str
    created_at: datetime
    removed_by: str | None = None
    removed_at: datetime | None = None
    replaces: int | None = None
    origin: str | None = None  # None: an operator's; 'licence:record N': a licence's

    def describe(self) -> str:
        """One line for logs and refusal pages: ``rule 7 block org,example)/ (reason)``."""
        embargo = f" embargo {self.embargo_days} days" if self.embargo_days else ""
        reason = f" ({self.reason})" if self.reason else ""
        origin = f" [from {self.origin}]" if self.origin else ""
        where = self.surt or "(everything)"
        return f"rule {self.rule_id} {self.policy} {where}{embargo}{reason}{origin}"

    def applies_to(self, timestamp: str, now: datetime | None = None) -> bool:
        """Whether the rule decides a capture of this 14-digit time (embargo: younger only)."""
        if not self.embargo_days:
            return True
        try:
            captured = datetime.strptime(timestamp[:14].ljust(14, "0"), "%Y%m%d%H%M%S")
        except ValueError:
            return True
        now = now or datetime.now(UTC)
        return captured.replace(tzinfo=UTC) > now - timedelta(days=self.embargo_days)


_HERITRIX = re.compile(r"^[a-z][a-z0-9+.-]*://\((?P<host>[^)]*)\)(?P<rest>.*)$", re.I)
_HOST_PART = re.compile(r"^[^/?#@\s()]+$")
_WWW_LABEL = re.compile(r"^www\d*$")


def prefix_of(value: str) -> str:
    """A SURT prefix from what an operator typed: a URL (``http://…``) or a SURT prefix,
    canonicalised the way capture keys are made (:func:`harvestflow.formats.surt.surt`).

    Why: keys are canonical (lower case, %-escapes decoded then re-escaped once, ``www``
    dropped, default port dropped, trailing ``/`` dropped), and a rule is a plain prefix of the
    key: a prefix typed any other way (``org,Example)/Private``, ``/%7Euser``) would be shown
    in force and never match. What cannot be canonicalised faithfully is refused.
    """
    value = value.strip()
    if any(ch in value for ch in " \t\r\n\x00"):
        raise RuleError(f"SURT prefix {value!r}: no spaces or control characters")
    if value in ("", "*", "*,"):
        return ""
    heritrix = _HERITRIX.match(value)  # Heritrix's form: http://(org,example,www,)/path
    if heritrix:
        value = heritrix.group("host").rstrip(",") + ")" + heritrix.group("rest")
    elif "://" in value:
        if not value.lower().startswith(("http://", "https://")):
            raise RuleError(f"{value!r}: rules apply to web captures, http:// or https:// URLs")
        return _key(value, value)
    if "," not in value and ")" not in value:
        raise RuleError(f"{value!r} is neither a URL (http://…) nor a SURT prefix (org,example)/…)")
    host, paren, rest = value.partition(")")
    domain = host.endswith(",")  # "org,example," : example.org's sub-domains only
    labels = host.rstrip(",").split(",")
    port = ""
    if ":" in labels[-1]:
        labels[-1], port = labels[-1].split(":", 1)
    if not all(labels) or not _HOST_PART.match(host) or (port and not port.isdigit()):
        raise RuleError(f"SURT prefix {value!r}: {host!r} is not a host in SURT form (org,example)")
    dotted = ".".join(reversed(labels)) + (f":{port}" if port else "")
    if paren:
        return _key(f"http://{dotted}{rest or '/'}", value)
    if port:
        raise RuleError(f"SURT prefix {value!r}: a port belongs to a whole host (end it with ')')")
    canonical = _key(f"http://{dotted}/", value).split(")", 1)[0]
    if _WWW_LABEL.match(labels[-1].lower()) and canonical != host.rstrip(",").lower():
        raise RuleError(
            f"SURT prefix {value!r}: capture keys drop a leading {labels[-1]!r}, so this would"
            f" never match; write {canonical + ')/'!r} for that host or {canonical!r} for the"
            " domain and its sub-domains"
        )
    return canonical + ("," if domain else "")


def _key(url: str, typed: str) -> str:
    """The capture key of ``url``: a SURT prefix for what the operator typed."""
    try:
        key = surt(url)
    except SurtError as exc:
        raise RuleError(f"SURT prefix {typed!r}: cannot be keyed ({exc})") from exc
    if ")" not in key:
        raise RuleError(f"{typed!r}: not an http(s) URL or SURT prefix (key {key!r})")
    return key


def canonical(rule: Rule) -> bool:
    """Whether a stored rule's prefix is as keys are made (one stored before prefixes were
    canonicalised may not be: it never matches, and ``access rules list`` says so)."""
    try:
        return prefix_of(rule.surt) == rule.surt
    except RuleError:
        return False


def _row(row: sa.Row) -> Rule:
    return Rule(*row)


def active(bind: Bind) -> list[Rule]:
    """The rules in force, by prefix (``bind``: an engine, or a refresh pass's reads)."""
    return read(bind, "access_rules.active", _active)


def _active(conn: sa.Connection) -> list[Rule]:
    rows = conn.execute(
        sa.text(f"SELECT {_COLUMNS} FROM access_rules WHERE removed_at IS NULL ORDER BY surt")
    )
    return [_row(r) for r in rows]


def history(engine: sa.Engine) -> list[Rule]:
    """Every version of every rule, oldest change first."""
    with engine.connect() as conn:
        rows = conn.execute(sa.text(f"SELECT {_COLUMNS} FROM access_rules ORDER BY rule_id"))
        return [_row(r) for r in rows]


def add(
    engine: sa.Engine,
    prefix: str,
    policy: str,
    *,
    user: str,
    reason: str = "",
    embargo_days: int | None = None,
    origin: str | None = None,
) -> Rule:
    """Put a rule in force for ``prefix`` (replacing the one it had, which is kept, closed);
    ``origin`` names what made it when not an operator (a licence: :mod:`access.licences`)."""
    key = prefix_of(prefix)
    if policy not in POLICIES:
        raise RuleError(f"policy {policy!r}: want one of {', '.join(POLICIES)}")
    if embargo_days is not None and embargo_days <= 0:
        raise RuleError(f"embargo {embargo_days!r} days: want a positive number of days")
    if policy in ("allow", OPEN) and embargo_days:
        raise RuleError(f"an embargo belongs to a block or exclude rule, not to {policy}")
    if not user:
        raise RuleError("who makes the change must be named (--user)")
    with engine.begin() as conn:
        conn.execute(sa.text("LOCK TABLE access_rules IN SHARE ROW EXCLUSIVE MODE"))
        old = conn.execute(
            sa.text(
                "UPDATE access_rules SET removed_by = :u, removed_at = clock_timestamp()"
                " WHERE surt = :s AND removed_at IS NULL RETURNING rule_id"
            ),
            {"u": user, "s": key},
        ).scalar()
        row = conn.execute(
            sa.text(
                "INSERT INTO access_rules (surt, policy, embargo_days, reason, created_by,"
                f" replaces, origin) VALUES (:s, :p, :e, :r, :u, :old, :o) RETURNING {_COLUMNS}"
            ),
            {
                "s": key,
                "p": policy,
                "e": embargo_days,
                "r": reason,
                "u": user,
                "old": old,
                "o": origin,
            },
        ).one()
    rule = _row(row)
    log.info("access %s added by %s", rule.describe(), user)
    return rule


def remove(engine: sa.Engine, rule_or_prefix: str, *, user: str) -> Rule:
    """Close the rule in force with this id or prefix; the row stays as history."""
    if not user:
        raise RuleError("who makes the change must be named (--user)")
    if rule_or_prefix.isdigit():
        where, value = "rule_id = :v", int(rule_or_prefix)
    else:
        where, value = "surt = :v", prefix_of(rule_or_prefix)  # type: ignore[assignment]
    with engine.begin() as conn:
        row = conn.execute(
            sa.text(
                "UPDATE access_rules SET removed_by = :u, removed_at = clock_timestamp()"
                f" WHERE {where} AND removed_at IS NULL RETURNING {_COLUMNS}"
            ),
            {"u": user, "v": value},
        ).one_or_none()
    if row is None:
        raise RuleError(f"no rule in force with id or prefix {rule_or_prefix!r}")
    rule = _row(row)
    log.info("access %s removed by %s", rule.describe(), user)
    return rule


def deciding(rules: Iterable[Rule], key: str) -> Rule | None:
    """The rule pywb applies to a capture whose SURT key is ``key``: the longest prefix."""
    best: Rule | None = None
    for rule in rules:
        if key.startswith(rule.surt) and (best is None or len(rule.surt) > len(best.surt)):
            best = rule
    return best


def opens(rules: Iterable[Rule], key: str) -> Rule | None:
    """The ``open`` rule deciding a capture's key, if that is the rule that decides it: its
    replay is open outside the reading room (the gateway's exception to the room)."""
    rule = deciding(rules, key)
    return rule if rule is not None and rule.policy == OPEN else None


def acl_lines(rules: Iterable[Rule], audit_user: str = "") -> list[str]:
    """pywb's ACL file lines (``wb-manager acl`` format), sorted as pywb searches them.

    ``audit_user``: beside each rule, an ``allow`` for that pywb ACL user only (what the
    gateway asks as, to find the captures a rule excluded: :mod:`access.cdxaudit`); it sorts
    after the rule of the same prefix, where pywb prefers a line naming the request's user.
    """
    lines = []
    for rule in rules:
        if audit_user:
            audit = {"access": "allow", "url": rule.surt or "*", "user": audit_user}
            lines.append(f"{rule.surt or '*,'} - {json.dumps(audit, ensure_ascii=True)}")
        # pywb knows allow / block / exclude: an open rule is an allow there (the gateway opens it)
        policy = "allow" if rule.policy == OPEN else rule.policy
        entry: dict[str, object] = {"access": policy, "url": rule.surt or "*"}
        if rule.embargo_days:
            entry["newer"] = {"days": rule.embargo_days}
        entry["rule"] = rule.rule_id
        if rule.reason:
            entry["reason"] = rule.reason
        lines.append(f"{rule.surt or '*,'} - {json.dumps(entry, ensure_ascii=True)}")
    return sorted(lines, reverse=True)


def write_acl(path: Path, rules: Iterable[Rule], audit_user: str = "") -> bool:
    """Write pywb's ACL file if its content changed (atomic rename); True when written.

    pywb opens the file at every lookup, so a new version is in force for the next request.
    """
    text = "".join(line + "\n" for line in acl_lines(rules, audit_user))
    try:
        if path.read_text(encoding="utf-8") == text:
            return False
    except FileNotFoundError:
        pass
    atomic_write_text(path, text, chmod=0o600)  # names the audit user, who passes every rule
    return True


def search_rules(engine: sa.Engine) -> AccessRules:
    """The rules in force as full-text search applies them (the same as replay's)."""
    return AccessRules.from_rules(
        (r.surt, "allow" if r.policy == OPEN else r.policy, r.embargo_days) for r in active(engine)
    )
