"""Consent dialogs: DuckDuckGo's autoconsent (shipped unmodified in ``autoconsent/``, see its
NOTICE) run in every frame over the DevTools protocol, its answer kept for the host's pages.

Why autoconsent: its maintained rules (~800 consent platforms) beat selectors of our own; its
playwright content script is driven here through a DevTools binding. Why a memory of the host:
each page renders in its own browser context, so after a consent action the cookies and
``localStorage`` are kept per host and restored for its next pages (``consent:kept``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

VENDOR = Path(__file__).parent / "autoconsent"
BINDING = "__harvestflowAutoconsent"
CONSENT_MODES = ("accept", "reject", "hide", "none")
AUTO_ACTION = {"accept": "optIn", "reject": "optOut", "hide": None}
# lifecycle states of autoconsent while it answers a dialog it found (or is starting); while
# it is "started" it looks for one, again every ~0.5 s for ``detectRetries`` tries: waited for
# only during its first try (a dialog there at load is found then; one appearing later is still
# answered, as the other behaviours run, and what it reveals is captured at their settles)
ANSWERING = {
    "waitingForInitResponse",
    "initialized",
    "cmpDetected",
    "openPopupDetected",
    "runningOptIn",
    "runningOptOut",
}
# the binding may be installed a moment after the first script of a new document runs: the
# message waits for it (a few tries)
SHIM = f"""window.autoconsentSendMessage = (m) => {{
  const s = JSON.stringify(m);
  const send = (n) => {{
    if (typeof window.{BINDING} === 'function') window.{BINDING}(s);
    else if (n < 50) setTimeout(() => send(n + 1), 20);
  }};
  send(0);
  return Promise.resolve();
}};"""


@functools.cache
def content_script() -> str:
    """The shim, then autoconsent's content script as published."""
    return SHIM + "\n" + (VENDOR / "autoconsent.playwright.js").read_text(encoding="utf-8")


@functools.cache
def _rules() -> list[tuple[re.Pattern[str] | None, str]]:
    """autoconsent's rules.json as published: each rule's URL pattern (None: every site) and
    its JSON text."""
    rules = json.loads((VENDOR / "rules.json").read_text(encoding="utf-8"))["autoconsent"]
    out: list[tuple[re.Pattern[str] | None, str]] = []
    for rule in rules:
        pattern = (rule.get("runContext") or {}).get("urlPattern")
        compiled = None
        if pattern:
            try:
                compiled = re.compile(pattern)
            except re.error:  # a JavaScript-only construct: sent everywhere, judged there
                compiled = None
        out.append((compiled, json.dumps(rule)))
    return out


def rules_for(url: str) -> str:
    """The rule bundle for a frame at ``url``: the rules of every site and those whose URL
    pattern matches it. Why: three rules in four are for one site each (~600 kB of the 700),
    and every frame of every page parses what it is sent; autoconsent itself skips a rule
    whose pattern does not match (as its Playwright runner filters its compact rules)."""
    chosen = [text for pattern, text in _rules() if pattern is None or pattern.search(url)]
    return '{"autoconsent": [' + ", ".join(chosen) + "]}"


def init_response(mode: str, retries: int, url: str) -> str:
    """The ``initResp`` expression for a frame at ``url``: the template's choice, the rules."""
    config: dict[str, Any] = {
        "enabled": True,
        "autoAction": AUTO_ACTION.get(mode),
        "disabledCmps": [],
        "enablePrehide": False,  # a dialog it cannot answer stays for the wording fallback
        "enableCosmeticRules": True,
        "enableGeneratedRules": True,
        "enableHeuristicDetection": False,
        "detectRetries": retries,
        "isMainWorld": True,  # it runs in the page's own world: rules' checks run inline
        "logs": {
            k: False
            for k in ("lifecycle", "rulesteps", "detectionsteps", "evals", "errors", "messages")
        },
    }
    return (
        f'autoconsentReceiveMessage({{"type": "initResp", "config": {json.dumps(config)},'
        f' "rules": {rules_for(url)}}})'
    )


@dataclass
class Autoconsent:
    """What autoconsent reported in one page's frames (by execution context)."""

    mode: str
    retries: int = 6
    lifecycle: dict[int, str] = field(default_factory=dict)
    attempts: dict[int, int] = field(default_factory=dict)  # its tries to find a dialog
    popups: list[str] = field(default_factory=list)
    done: list[str] = field(default_factory=list)  # CMPs answered (the mode's action)
    failed: list[str] = field(default_factory=list)
    tasks: set[asyncio.Task[Any]] = field(default_factory=set)

    def on_message(self, payload: str, context_id: int, reply: Any) -> None:
        """A message of the content script (``reply(expr, context_id)``: a coroutine that
        evaluates an expression in that frame)."""
        try:
            msg = json.loads(payload)
        except ValueError:
            return
        if not isinstance(msg, dict):
            return
        kind = msg.get("type")
        cmp = str(msg.get("cmp") or "")
        if kind == "init":
            self.lifecycle[context_id] = "waitingForInitResponse"
            url = str(msg.get("url") or "")
            self._spawn(reply(init_response(self.mode, self.retries, url), context_id))
        elif kind == "report" and isinstance(msg.get("state"), dict):
            self.lifecycle[context_id] = str(msg["state"].get("lifecycle") or "")
            with contextlib.suppress(TypeError, ValueError):
                self.attempts[context_id] = int(msg["state"].get("findCmpAttempts") or 0)
        elif kind == "popupFound" and cmp:
            self.popups.append(cmp)
        elif kind in ("optInResult", "optOutResult"):
            (self.done if msg.get("result") else self.failed).append(cmp)
        elif kind == "autoconsentDone" and cmp and cmp not in self.done:
            self.done.append(cmp)
        elif kind == "autoconsentError":
            log.debug("autoconsent error: %s", msg.get("details"))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def forget_context(self, context_id: int) -> None:
        self.lifecycle.pop(context_id, None)
        self.attempts.pop(context_id, None)

    @property
    def busy(self) -> bool:
        """Whether a frame's autoconsent is on its first look for a dialog, or answering one
        (in ``hide`` mode a found dialog waits for us: not busy)."""
        for cid, state in self.lifecycle.items():
            if self.mode == "hide" and state == "openPopupDetected":
                continue
            if state in ANSWERING or (state == "started" and self.attempts.get(cid, 0) <= 1):
                return True
        return False


@dataclass
class HostConsent:
    """A host's consent state after a page answered its dialog."""

    how: str
    cookies: list[dict[str, Any]]
    storage: dict[str, list[list[str]]]  # origin → localStorage items


class ConsentMemory:
    """The job's consent states by host (one crawler process renders all of a host's pages)."""

    def __init__(self) -> None:
        self.hosts: dict[str, HostConsent] = {}

    def get(self, host: str) -> HostConsent | None:
        return self.hosts.get(host)

    def keep(self, host: str, state: HostConsent) -> None:
        self.hosts[host] = state


def restore_storage_script(storage: dict[str, list[list[str]]]) -> str:
    """A new-document script putting kept ``localStorage`` items back in their origin."""
    return f"""(() => {{
  const kept = {json.dumps(storage)}[location.origin];
  if (!kept) return;
  try {{
    for (const [k, v] of kept) if (localStorage.getItem(k) === null) localStorage.setItem(k, v);
  }} catch (e) {{}}
}})();"""


STORAGE_JS = """(() => { try { return [location.origin, Object.entries(localStorage).slice(0, 200)]; }
  catch (e) { return null; } })()"""
