"""Live control of a partitioned job: the parent relays operators' actions to its children.

Why a relay: each child crawls part of the job, so each must apply every action, and an action
is applied for the job only when all have. The parent alone polls ``job_actions``, appends
pending actions to a file in the coordination directory, and marks an action applied (or
refused, with reasons) once every child has answered in its own file. Files, not sockets, as
for the URL inboxes: append-only, re-readable, nothing lost when a process dies.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crawler.partitioning.handoff import complete_lines

# harvestflow.job_actions (SQLAlchemy: ~0.2 s CPU to import) is imported where an action is
# read or marked: a crawl without job control, or a parent whose job has none, never loads it

if TYPE_CHECKING:
    from harvestflow.job_actions import JobAction

log = logging.getLogger(__name__)

ACTIONS_FILE = "actions.jsonl"
DEFAULT_INTERVAL_S = 2.0  # how often job_actions is polled (a job spec may say otherwise)


def answers_file(coord_dir: Path, index: int) -> Path:
    return coord_dir / f"answers-{index}.jsonl"


def action_to_dict(action: JobAction) -> dict[str, Any]:
    requested = action.requested_at
    if isinstance(requested, dt.datetime):
        requested = requested.isoformat()
    return {
        "action_id": action.action_id,
        "job_id": action.job_id,
        "action": action.action,
        "arguments": action.arguments,
        "requested_by": action.requested_by,
        "requested_at": str(requested),
    }


def action_from_dict(data: dict[str, Any]) -> JobAction:
    from harvestflow.job_actions import JobAction

    return JobAction(
        int(data["action_id"]),
        int(data["job_id"]),
        str(data["action"]),
        dict(data.get("arguments") or {}),
        str(data["requested_by"]),
        data.get("requested_at"),
        "pending",
        None,
        None,
    )


def append_line(path: Path, data: dict[str, Any]) -> None:
    """One JSON line, written whole in one ``write`` (readers take complete lines only)."""
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(data, sort_keys=True) + "\n")


def read_lines(path: Path, offset: int) -> tuple[list[dict[str, Any]], int]:
    """The complete JSON lines after ``offset``, and the offset after the last of them."""
    raw_lines, offset = complete_lines(path, offset)
    lines = []
    for raw in raw_lines:
        try:
            lines.append(json.loads(raw))
        except ValueError:
            log.error("job control: unreadable line in %s skipped: %r", path, raw[:200])
    return lines, offset


def write_action_log(path: Path, action: JobAction, state: str, message: str) -> None:
    """One line of ``operator-actions.log``: who asked what when, and what the crawler did."""
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    requested = action.requested_at
    if isinstance(requested, dt.datetime):
        requested = requested.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    append_line(
        path,
        {
            "at": now,
            "action_id": action.action_id,
            "action": action.action,
            "arguments": action.arguments,
            "requested_by": action.requested_by,
            "requested_at": str(requested),
            "state": state,
            "message": message,
        },
    )


def combined_answer(answers: dict[int, tuple[str, str]]) -> tuple[str, str]:
    """The job's answer from its children's: refused if any refused; one message if all agree,
    else each child's message after its partition (``p0: …; p1: …``)."""
    from harvestflow.job_actions import APPLIED, REFUSED

    refused = {i: a for i, a in answers.items() if a[0] == REFUSED}
    chosen = refused or answers
    messages = {m for _, m in chosen.values()}
    if len(messages) == 1:
        message = messages.pop()
    else:
        message = "; ".join(f"p{i}: {m}" for i, (_, m) in sorted(chosen.items()))
    return (REFUSED if refused else APPLIED), message


class ControlRelay:
    """The parent's side: polls the job's pending actions, relays them, collects the answers."""

    def __init__(
        self, job_id: int, coord_dir: Path, count: int, actions_log: Path, interval_s: float
    ) -> None:
        self.job_id, self.coord_dir, self.count = job_id, coord_dir, count
        self.log_path = actions_log
        self.interval_s = interval_s
        self.relayed: dict[int, JobAction] = {}
        self.answers: dict[int, dict[int, tuple[str, str]]] = {}
        self.offsets = [0] * count
        self.polled_at = 0.0
        self.failures = 0
        # a fresh run: what an earlier (killed) run relayed and did not mark is still pending
        (coord_dir / ACTIONS_FILE).unlink(missing_ok=True)
        for i in range(count):
            answers_file(coord_dir, i).unlink(missing_ok=True)

    def tick(self) -> None:
        now = time.monotonic()
        if now - self.polled_at >= self.interval_s:
            self.polled_at = now
            self._relay_pending()
        if self.relayed:  # answers only come for relayed actions: no file to read otherwise
            self._collect()

    def _relay_pending(self) -> None:
        from harvestflow.job_actions import pending_actions

        try:
            pending = pending_actions(self.job_id)
        except Exception as exc:  # the database away for a while: the crawl goes on
            self.failures += 1
            if self.failures in (1, 10) or self.failures % 100 == 0:
                log.warning("job control: cannot read job_actions (%d): %s", self.failures, exc)
            return
        self.failures = 0
        for action in pending:
            if action.action_id not in self.relayed:
                self.relayed[action.action_id] = action
                append_line(self.coord_dir / ACTIONS_FILE, action_to_dict(action))
                log.info("job control: action %s relayed to the partitions", action.action_id)

    def _collect(self) -> None:
        for i in range(self.count):
            lines, self.offsets[i] = read_lines(answers_file(self.coord_dir, i), self.offsets[i])
            for a in lines:
                self.answers.setdefault(int(a["action_id"]), {})[i] = (a["state"], a["message"])
        for action_id, answers in list(self.answers.items()):
            action = self.relayed.get(action_id)
            if action is not None and len(answers) == self.count:
                self._mark(action, *combined_answer(answers))

    def _mark(self, action: JobAction, state: str, message: str) -> None:
        del self.relayed[action.action_id]
        self.answers.pop(action.action_id, None)
        log.info(
            "job control: action %s %s %s: %s", action.action_id, action.action, state, message
        )
        write_action_log(self.log_path, action, state, message)
        from harvestflow.job_actions import mark_action

        try:
            mark_action(action.action_id, state, message)
        except Exception as exc:
            log.error("job control: cannot mark action %s: %s", action.action_id, exc)

    def finish(self, status: str) -> None:
        """After the children ended: mark what all answered; refuse the rest (never pending)."""
        from harvestflow.job_actions import REFUSED, left_at_end

        self._collect()
        for action_id, action in list(self.relayed.items()):
            answers = self.answers.get(action_id, {})
            # a refusal stands; a stop some children answered stopped the job (the others had
            # ended before they read it)
            if answers and (action.action == "stop" or REFUSED in (s for s, _ in answers.values())):
                self._mark(action, *combined_answer(answers))
            else:
                self._mark(action, REFUSED, f"the crawl ended ({status}) first")
        for action in left_at_end(self.job_id):
            self.relayed[action.action_id] = action
            self._mark(action, REFUSED, f"the crawl ended ({status}) first")
