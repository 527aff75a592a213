"""Live control of a running crawl: an operator's pause, resume, stop, filter and limits.

Why through the harvest database: the curator pages and the CLI may run on another machine
than the crawler. They insert a pending ``job_actions`` row; :class:`JobControl`, a Scrapy
extension, polls its job's rows (in a thread: a slow database never stalls the crawl), applies
each in the reactor thread, marks it applied or refused, and logs it to the operator-actions
log the metadata WARC carries. A refused action changes nothing. In a partitioned job the parent
relays every action to each child through a file.
"""

from __future__ import annotations

import json
import logging
import time
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.extensions.closespider import CloseSpider
from scrapy.utils.defer import deferred_from_coro
from twisted.internet import task, threads

from crawler.context import context_of
from crawler.control_gates import (
    REJECTED_STAT,
    OperatorFilter,
    ReturnedToFrontier,
    controls_of,
    held_by_pause,
)
from crawler.internals import take_unsent_requests
from crawler.partitioning.control_relay import (
    ACTIONS_FILE,
    DEFAULT_INTERVAL_S,
    action_from_dict,
    answers_file,
    append_line,
    read_lines,
    write_action_log,
)
from crawler.state import FrontierState
from harvestflow.formats.integers import shown

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from twisted.internet.base import DelayedCall

    from crawler.jobspec import JobSpec
    from harvestflow.job_actions import JobAction

log = logging.getLogger(__name__)

STOP_BY_OPERATOR = "stopped_by_operator"  # the spider's close reason
_STATE_KEY = "operator_filters"


def _reactor() -> Any:
    """The reactor Scrapy installed (imported late: importing it first would install the
    default one)."""
    from twisted.internet import reactor

    return reactor


def control_settings(spec: JobSpec, settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` with the control extension and the filter middleware when enabled: jobs
    made from the harvest database say ``"job_control": true`` (harvest/jobs.py), partitioned
    or not."""
    settings["HARVESTFLOW_JOB_CONTROL"] = spec.job_control
    if settings["HARVESTFLOW_JOB_CONTROL"]:
        settings["EXTENSIONS"]["crawler.control.JobControl"] = 540
        # first: a filtered URL costs no robots.txt fetch, no delay, no address check (and
        # its process_exception, called last, puts a request held back by a pause back)
        settings["DOWNLOADER_MIDDLEWARES"]["crawler.control_gates.OperatorFilterMiddleware"] = 50
        # last, after the capture middleware's reservation (950): nothing enters a host's
        # send queue while paused
        settings["DOWNLOADER_MIDDLEWARES"]["crawler.control_gates.PauseGateMiddleware"] = 990
        interval = spec.job_control_interval_s or DEFAULT_INTERVAL_S
        settings["HARVESTFLOW_CONTROL_INTERVAL"] = float(interval)
    return settings


class JobControl:
    """Extension: polls ``job_actions`` for this job and applies what operators asked."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        settings = crawler.settings
        if not settings.getbool("HARVESTFLOW_JOB_CONTROL"):
            raise NotConfigured("job control is off for this job")
        self.ctx = context_of(crawler)
        self.job_id = settings.getint("HARVESTFLOW_JOB_ID")
        self.interval = settings.getfloat("HARVESTFLOW_CONTROL_INTERVAL", 2.0)
        self.download_timeout_s = settings.getfloat("DOWNLOAD_TIMEOUT")
        self.controls = controls_of(crawler)
        self.loop: task.LoopingCall | None = None
        self.polling = False
        self.poll_failures = 0
        self.paused = False
        self.returned = 0  # requests a pause took back from the downloader (in its message)
        # pause/stop actions waiting for the downloader to empty: (action, deadline)
        self.waiting: list[tuple[JobAction, float]] = []
        self.closing = False
        # actions taken: a poll that runs before their mark is committed must not repeat them
        self.taken: set[int] = set()
        self.time_limit: DelayedCall | None = None
        self.recheck: DelayedCall | None = None
        self.log_path = self.ctx.jobdir.actions_log
        # a partition child: actions come from the parent's relay file, answers go back there
        self.partition = self.ctx.partition
        self.relay_offset = 0
        self._restore_filters()
        crawler.signals.connect(self.opened, signal=signals.spider_opened)
        crawler.signals.connect(self.closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> JobControl:
        return cls(crawler)

    # --- the poll -----------------------------------------------------------------------------
    def opened(self, spider: Any) -> None:
        self.loop = task.LoopingCall(self.tick)
        self.loop.start(self.interval, now=True)
        log.info(
            "job control: polling job_actions of job %s every %.1fs", self.job_id, self.interval
        )

    def tick(self) -> None:
        self._check_waiting()
        if self.polling or self.closing:
            return
        if self.partition is not None:
            lines, self.relay_offset = read_lines(
                self.partition.coord_dir / ACTIONS_FILE, self.relay_offset
            )
            self._apply_all([action_from_dict(d) for d in lines])
            return
        from harvestflow.job_actions import pending_actions

        self.polling = True
        d = threads.deferToThread(pending_actions, self.job_id)
        d.addCallback(self._apply_all)
        d.addErrback(self._poll_failed)
        d.addBoth(self._done_polling)

    def _done_polling(self, _: Any) -> None:
        self.polling = False

    def _poll_failed(self, failure: Any) -> None:
        self.poll_failures += 1
        if self.poll_failures in (1, 10) or self.poll_failures % 100 == 0:
            log.warning(
                "job control: cannot read job_actions (%d failures so far): %s",
                self.poll_failures,
                failure.value,
            )

    def _apply_all(self, actions: list[JobAction]) -> None:
        self.poll_failures = 0
        for action in actions:
            if action.action_id in self.taken or self.closing:
                continue
            self.taken.add(action.action_id)
            try:
                self.apply(action)
            except Exception as exc:  # a bad action is refused, the crawl goes on
                log.warning("job control: action %s refused: %s", action.action_id, exc)
                self._mark(action, "refused", f"refused: {exc}")

    # --- actions ------------------------------------------------------------------------------
    def apply(self, action: JobAction) -> None:
        engine = self.crawler.engine
        assert engine is not None
        if action.action in ("pause", "stop"):
            engine.pause()
            self.paused = self.controls.paused = True
            self.returned += self._return_unsent()
            deadline = time.monotonic() + self.download_timeout_s + 5
            self.waiting.append((action, deadline))
            self._check_waiting()
        elif action.action == "resume":
            was = self.paused
            self.paused = self.controls.paused = False
            self.returned = 0
            engine.unpause()
            slot = getattr(engine, "_slot", None)
            if slot is not None:  # take the next requests now, not at the next heartbeat
                slot.nextcall.schedule()
            self._mark(action, "applied", "resumed" if was else "resumed (was not paused)")
        elif action.action == "filter":
            self._mark(action, "applied", self._add_filter(action))
        elif action.action == "limits":
            self._mark(action, "applied", self._set_limits(action.arguments))
        else:
            self._mark(action, "refused", f"unknown action {action.action!r}")

    def _return_unsent(self) -> int:
        """Put the frontier requests waiting in the hosts' send queues back in the scheduler
        (see :class:`ReturnedToFrontier`); how many."""
        engine = self.crawler.engine
        if engine is None:
            return 0
        taken = take_unsent_requests(engine.downloader, held_by_pause)
        for _request, waiting in taken:
            waiting.errback(ReturnedToFrontier("paused"))
        return len(taken)

    def _check_waiting(self) -> None:
        """Pause/stop actions whose in-flight fetches have finished (or waited long enough)."""
        if not self.waiting:
            return
        engine = self.crawler.engine
        if self.paused:  # a request that was in a middleware may have reached a host's queue
            self.returned += self._return_unsent()
        active = len(engine.downloader.active) if engine is not None else 0
        now = time.monotonic()
        still = []
        for action, deadline in self.waiting:
            if active and now < deadline:
                still.append((action, deadline))
                continue
            self.ctx.state.checkpoint()
            queued = self.ctx.state.counts().get(FrontierState.QUEUED, 0)
            left = f", {active} fetch(es) still in flight" if active else ""
            if action.action == "stop":
                self._stop(action, queued, left)
            elif self.paused:
                back = f" ({self.returned} unsent put back)" if self.returned else ""
                self._mark(
                    action, "applied", f"paused: frontier saved, {queued} URLs queued{back}{left}"
                )
            else:  # resumed before the in-flight fetches finished
                self._mark(action, "applied", "paused, then resumed before it was quiet")
        self.waiting = still
        if still and (self.recheck is None or not self.recheck.active()):
            # look again soon: the poll interval is for the database, not for this
            self.recheck = _reactor().callLater(0.2, self._check_waiting)

    def _stop(self, action: JobAction, queued: int, left: str) -> None:
        if self.closing:
            self._mark(action, "applied", "the crawl is already stopping")
            return
        self.closing = True
        message = f"stopped by operator: {queued} URLs left queued{left}"
        self._mark(action, "applied", message, wait=True)
        engine = self.crawler.engine
        assert engine is not None
        deferred_from_coro(engine.close_spider_async(reason=STOP_BY_OPERATOR))

    def _add_filter(self, action: JobAction) -> str:
        args = action.arguments
        name = str(args.get("name") or f"op{action.action_id}")
        f = OperatorFilter(
            name, str(args["kind"]), str(args["pattern"]), action.action_id, action.requested_by
        )
        self.controls.filters = [x for x in self.controls.filters if x.name != name] + [f]
        self.ctx.state.set_meta(_STATE_KEY, json.dumps([x.saved() for x in self.controls.filters]))
        saved = f", saved to the {args['save']}" if args.get("save") else ""
        return f"filter {name} ({f.kind} {f.pattern}) rejects matching URLs from now on{saved}"

    def _restore_filters(self) -> None:
        raw = self.ctx.state.get_meta(_STATE_KEY)
        if not raw:
            return
        try:
            self.controls.filters = [OperatorFilter(**d) for d in json.loads(raw)]
        except Exception as exc:  # a damaged entry must not stop the crawl
            log.error("job control: operator filters in the frontier state unreadable: %s", exc)
        else:
            n = len(self.controls.filters)
            log.info("job control: %d operator filter(s) kept from the earlier run", n)

    def _set_limits(self, arguments: dict[str, Any]) -> str:
        from harvestflow.job_actions import check_arguments

        # every value checked first (the requester's checks and bounds: the row comes from a
        # table others write), so that a refused action changes nothing
        args: dict[str, Any] = check_arguments("limits", arguments)
        done = []
        budgets = self.ctx.budgets
        if args.get("max_objects") is not None or args.get("max_bytes") is not None:
            if self.partition is not None:
                self._check_partition_keys(args)
            budgets.set_limits(args.get("max_objects"), args.get("max_bytes"))
            done.append(
                f"per-domain max objects {budgets.spec.max_objects},"
                f" max bytes {budgets.spec.max_bytes}"
            )
        if args.get("max_time_s") is not None:
            done.append(self._set_time_limit(int(args["max_time_s"])))
        return "; ".join(done)

    def _check_partition_keys(self, args: dict[str, Any]) -> None:
        """Refuse per-domain limits that would move URLs between partitions: a URL's partition
        is its domain's when the domain is limited, its host's otherwise (crawler/partitioning/handoff.py),
        and job-level limits make every domain limited."""
        spec = self.ctx.budgets.spec
        objects = spec.max_objects if args.get("max_objects") is None else args["max_objects"]
        nbytes = spec.max_bytes if args.get("max_bytes") is None else args["max_bytes"]
        before = spec.max_objects >= 0 or spec.max_bytes >= 0
        after = objects >= 0 or nbytes >= 0
        if before != after:
            had = "had per-domain limits" if before else "had no per-domain limit"
            raise ValueError(
                f"this job is crawled by {self.partition.count if self.partition else 1}"
                f" processes and {had} when it started: limits that make domains"
                f" {'unlimited' if before else 'limited'} would move URLs between the processes"
                " (change a limit's value, or the time limit, instead)"
            )

    def _set_time_limit(self, seconds: int) -> str:
        """Replace Scrapy's CLOSESPIDER_TIMEOUT timer (≤ 0: no time limit); ``seconds`` is
        checked (``check_arguments``), and the new timer's delay computed before the old
        timer is cancelled."""
        assert self.crawler.extensions is not None
        try:  # first: a value no timer can hold is refused with the old timer in place
            remaining = max(self.ctx.started + seconds - time.time(), 0.0) if seconds > 0 else 0.0
        except OverflowError:
            raise ValueError(f"max_time_s {shown(seconds)}: too large; -1 for no limit") from None
        for ext in self.crawler.extensions.middlewares:
            if isinstance(ext, CloseSpider) and ext.task is not None:
                ext.task.cancel()
                ext.task = None
        if self.time_limit is not None and self.time_limit.active():
            self.time_limit.cancel()
        self.time_limit = None
        self.ctx.spec.max_running_time_s = max(seconds, 0)
        if seconds <= 0:
            return "no time limit"
        self.time_limit = _reactor().callLater(remaining, self._time_up)
        return f"max running time {seconds}s ({remaining:.0f}s left)"

    def _time_up(self) -> None:
        engine = self.crawler.engine
        if engine is not None and not self.closing:
            self.closing = True
            deferred_from_coro(engine.close_spider_async(reason="closespider_timeout"))

    # --- the audit ----------------------------------------------------------------------------
    def _mark(self, action: JobAction, state: str, message: str, wait: bool = False) -> None:
        """Record the answer in job_actions (in a thread unless ``wait``) and in the log; a
        partition child answers in the relay's file (the parent marks for the job)."""
        from harvestflow.job_actions import mark_action

        log.info(
            "job control: action %s %s %s: %s", action.action_id, action.action, state, message
        )
        write_action_log(self.log_path, action, state, message)
        if self.partition is not None:
            answer = {"action_id": action.action_id, "state": state, "message": message}
            append_line(answers_file(self.partition.coord_dir, self.partition.index), answer)
            return
        if wait:
            try:
                mark_action(action.action_id, state, message)
            except Exception as exc:
                log.error("job control: cannot mark action %s: %s", action.action_id, exc)
            return
        d = threads.deferToThread(mark_action, action.action_id, state, message)
        d.addErrback(lambda f: log.error("job control: cannot mark action: %s", f.value))

    def closed(self, spider: Any, reason: str) -> None:
        if self.loop is not None and self.loop.running:
            self.loop.stop()
        for call in (self.time_limit, self.recheck):
            if call is not None and call.active():
                call.cancel()
        stats = self.crawler.stats.get_stats()
        for key, n in sorted(stats.items()):
            if key.startswith(REJECTED_STAT):
                log.info("job control: filter %s rejected %d URLs", key[len(REJECTED_STAT) :], n)
        if self.partition is not None:  # the parent refuses what is left (control_relay)
            return
        # what was asked and not done (the crawl ended first) is refused, never left pending
        from harvestflow.job_actions import left_at_end

        for action in left_at_end(self.job_id):
            self._mark(action, "refused", f"the crawl ended ({reason}) first", wait=True)
