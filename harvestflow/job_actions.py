"""Operators' actions on a running crawl job, through the harvest database (``job_actions``).

Why the database and not a socket: the crawler may run on another machine than the curator
pages or the CLI, and the table is at the same time the audit of every action (who, when, what
the crawler answered). The requesting side (harvest.control.request, for the CLI and the
curator pages) checks that the job runs and inserts a *pending* row; the
crawler (crawler/control.py) polls its job's pending rows every few seconds, applies them and
marks each *applied* or *refused* with a message. Core module: the crawler imports it as it
imports harvestflow.credentials (its engine comes from the same settings).
"""

from __future__ import annotations

import json
import logging
import re
import time
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from harvestflow.db import get_engine
from harvestflow.errors import HarvestflowError
from harvestflow.formats.integers import shown
from harvestflow.regex import PatternError, compile_linear

log = logging.getLogger(__name__)

ACTIONS = ("pause", "resume", "stop", "filter", "limits")
PENDING, APPLIED, REFUSED = "pending", "applied", "refused"
FILTER_KINDS = ("regex", "surt")
SAVE_TO = ("domain", "definition")
LIMIT_KEYS = ("max_objects", "max_bytes", "max_time_s")
# the largest limits that can be asked for (-1 is no limit): a trillion objects, an exabyte,
# ten years. Larger numbers mean nothing a crawl could reach, and overflow the bigint
# columns, the JSON readers and the crawler's timers on their way (QA directives use the same)
LIMIT_MAX = {"max_objects": 10**12, "max_bytes": 10**18, "max_time_s": 10 * 366 * 86400}
MAX_PATTERN_CHARS = 1000
MAX_DOMAIN_CHARS = 253
_NAME = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


class ActionError(HarvestflowError, ValueError):
    """An action that cannot be requested, with the reason (shown to the operator)."""


@dataclass(frozen=True)
class JobAction:
    action_id: int
    job_id: int
    action: str
    arguments: dict[str, Any]
    requested_by: str
    requested_at: Any
    state: str
    applied_at: Any
    message: str | None


def _row(r: Any) -> JobAction:
    args = r.arguments if isinstance(r.arguments, dict) else json.loads(r.arguments or "{}")
    return JobAction(
        int(r.action_id),
        int(r.job_id),
        r.action,
        args,
        r.requested_by,
        r.requested_at,
        r.state,
        r.applied_at,
        r.message,
    )


def compile_re2(pattern: str) -> Any:
    """RE2-compile an operator's URL regex (linear time: a URL cannot make it hang)."""
    if not pattern or len(pattern) > MAX_PATTERN_CHARS:
        raise ActionError(f"a filter pattern has 1 to {MAX_PATTERN_CHARS} characters")
    try:
        return compile_linear(pattern)
    except PatternError as exc:
        raise ActionError(f"filter {pattern!r}: not an RE2 regular expression: {exc}") from None


def past_limit_max(key: str, value: int) -> str | None:
    """Why ``value`` cannot be the limit ``key`` (a crawl-control action's, a QA directive's,
    a feed's budget) because it is too large; None when it is not."""
    if value <= LIMIT_MAX[key]:
        return None
    return f"{key} {shown(value)}: at most {LIMIT_MAX[key]:,} (-1: no limit)"


def check_limit(key: str, value: object) -> int:
    """``value`` as the limit ``key`` (an integer, -1 for none, at most ``LIMIT_MAX[key]``)."""
    if not isinstance(value, int) or isinstance(value, bool) or value < -1:
        raise ActionError(f"{key} {str(value)[:40]}: an integer, -1 for no limit")
    too_large = past_limit_max(key, value)
    if too_large:
        raise ActionError(too_large)
    return value


def _no_control_characters(args: dict[str, Any]) -> None:
    """Text arguments hold no NUL or other control character: the row's jsonb cannot store
    a NUL, and none belongs in a URL pattern, a name or a domain."""
    for key, value in args.items():
        if isinstance(value, str) and any(ord(c) < 32 or ord(c) == 127 for c in value):
            raise ActionError(f"{key}: a control character (NUL, tab, newline…) is not allowed")


def check_arguments(action: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments of ``action``, checked (ActionError names what is wrong)."""
    if action not in ACTIONS:
        raise ActionError(f"unknown action {action!r} (one of {', '.join(ACTIONS)})")
    args = dict(arguments or {})
    _no_control_characters(args)
    if action == "filter":
        kind, pattern = args.get("kind"), args.get("pattern")
        if kind not in FILTER_KINDS:
            raise ActionError(f"filter kind {kind!r}: one of {', '.join(FILTER_KINDS)}")
        if not isinstance(pattern, str) or not pattern:
            raise ActionError("a filter needs a pattern")
        if kind == "regex":
            compile_re2(pattern)
        elif len(pattern) > MAX_PATTERN_CHARS or any(c.isspace() for c in pattern):
            raise ActionError(f"SURT prefix {pattern!r}: no spaces, {MAX_PATTERN_CHARS} chars max")
        name = args.get("name")
        if name is not None and not _NAME.match(str(name)):
            raise ActionError(f"filter name {name!r}: letters, digits, '.', '_', '-' (64 max)")
        save = args.get("save")
        if save is not None and save not in SAVE_TO:
            raise ActionError(f"save {save!r}: one of {', '.join(SAVE_TO)}")
        if save is not None and kind != "regex":
            raise ActionError("only a regex filter can be saved (crawler traps are regexes)")
        if save == "domain" and not args.get("domain"):
            raise ActionError("saving a filter to a domain needs the domain's name")
        domain = args.get("domain")
        if domain is not None and (not isinstance(domain, str) or len(domain) > MAX_DOMAIN_CHARS):
            raise ActionError(f"domain: a domain name of at most {MAX_DOMAIN_CHARS} characters")
    elif action == "limits":
        given = {k: args[k] for k in LIMIT_KEYS if args.get(k) is not None}
        unknown = set(args) - set(LIMIT_KEYS)
        if unknown:
            raise ActionError(f"unknown limit(s) {sorted(unknown)} (one of {LIMIT_KEYS})")
        if not given:
            raise ActionError(f"limits: give at least one of {', '.join(LIMIT_KEYS)}")
        args = {key: check_limit(key, value) for key, value in given.items()}
    elif args:
        raise ActionError(f"{action} takes no arguments")
    return args


def insert_action(
    conn: sa.Connection, job_id: int, action: str, args: dict[str, Any], user: str
) -> int:
    """Insert a pending action (already checked, the job known to be running); its id.

    The check that the job runs is the requester's (harvest.control.request, which owns the
    jobs table), in the same transaction as this insert.
    """
    if not user or not user.strip():
        raise ActionError("who asks must be named (a user name)")
    action_id = conn.execute(
        sa.text(
            "INSERT INTO job_actions (job_id, action, arguments, requested_by)"
            " VALUES (:j, :a, CAST(:g AS jsonb), :u) RETURNING action_id"
        ),
        {"j": job_id, "a": action, "g": json.dumps(args), "u": user.strip()[:200]},
    ).scalar_one()
    log.info("job %s: %s %s requested by %s (action %s)", job_id, action, args, user, action_id)
    return int(action_id)


def pending_actions(job_id: int, engine: Engine | None = None) -> list[JobAction]:
    """The job's pending actions, oldest first (an index-only scan of the partial index)."""
    engine = engine or get_engine()
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT * FROM job_actions WHERE job_id = :j AND state = 'pending'"
                " ORDER BY action_id"
            ),
            {"j": job_id},
        ).all()
    return [_row(r) for r in rows]


def left_at_end(job_id: int) -> list[JobAction]:
    """The actions still pending when a crawl ends (its caller refuses them: never left
    pending); none, with a warning, when the database cannot be read then."""
    try:
        return pending_actions(job_id)
    except Exception as exc:
        log.warning("job control: cannot read job_actions at the end: %s", exc)
        return []


def mark_action(action_id: int, state: str, message: str, engine: Engine | None = None) -> None:
    """The crawler's answer: applied or refused, with its message (a pending row only)."""
    if state not in (APPLIED, REFUSED):
        raise ValueError(f"state {state!r}")
    engine = engine or get_engine()
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "UPDATE job_actions SET state = :s, message = :m, applied_at = now()"
                " WHERE action_id = :i AND state = 'pending'"
            ),
            {"s": state, "m": message[:2000], "i": action_id},
        )


def job_actions(job_id: int, conn: sa.Connection) -> list[JobAction]:
    """Every action on a job, oldest first (the job page's history)."""
    rows = conn.execute(
        sa.text("SELECT * FROM job_actions WHERE job_id = :j ORDER BY action_id"), {"j": job_id}
    ).all()
    return [_row(r) for r in rows]


def get_action(action_id: int, engine: Engine | None = None) -> JobAction | None:
    engine = engine or get_engine()
    with engine.connect() as conn:
        r = conn.execute(
            sa.text("SELECT * FROM job_actions WHERE action_id = :i"), {"i": action_id}
        ).first()
    return _row(r) if r is not None else None


def wait_for(
    action_id: int, timeout_s: float, engine: Engine | None = None, poll_s: float = 0.5
) -> JobAction | None:
    """The action once no longer pending, or its pending row when ``timeout_s`` has passed."""
    deadline = time.monotonic() + max(timeout_s, 0)
    while True:
        row = get_action(action_id, engine)
        if row is None or row.state != PENDING or time.monotonic() >= deadline:
            return row
        time.sleep(poll_s)
