"""The replay service: pywb run as a program from its own virtualenv, with our resolver beside it.

Why this module owns the process: pywb is GPL-3.0, so the platform never imports it; it runs
``<venv>/bin/wayback`` with a ``config.yaml`` generated from our settings (:mod:`access.pywbconfig`),
in the access folder, its request log (gevent's access lines and pywb's errors, from its
stderr) appended to ``<access>/logs/access.log``. Beside it, in this process: our WARC resolver
(:mod:`access.resolver`) and a thread that refreshes the flat index files every
``refresh_interval_s`` (:func:`access.index.refresh`, :func:`access.publish.publish`), so new
captures, rules, definition collections and tours appear without a restart. In front of pywb,
our gateway (:mod:`access.gateway`) on the public address (pywb, the resolver and the search
page listen on loopback only: whoever reaches the gateway's address reaches nothing else, not
pywb's port that would lift the reading room, nor the resolver's whole WARCs): reading room,
refusal log, and the
full-text search page at ``/search/`` (:mod:`access.searchapp`, served in this process), and the
record of what the curators' job views could not serve (:mod:`access.missing`).
"""

from __future__ import annotations

import logging
import os
import subprocess
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import sqlalchemy as sa

from access import definition_index, missing, pywbconfig, rules
from access.config import INTERNAL_HOST, AccessConfig
from access.definitions import acl_file
from access.gateway import SEARCH_HOST, Gateway
from access.index import Lister, refresh, reindex
from access.publish import publish
from access.resolver import make_server
from access.searchapp import SearchServer, app_from_settings
from harvestflow.db import get_engine
from harvestflow.db_reads import Reads
from harvestflow.package_data import data_path
from harvestflow.services import ServiceError
from harvestflow.services.process import wait_until
from harvestflow.settings import Settings, get_settings

log = logging.getLogger(__name__)

SETUP_SCRIPT = data_path("access", "setup-replay.sh")


def setup(settings: Settings | None = None) -> None:
    """Create the replay virtualenv with pywb (idempotent; ``access/setup-replay.sh``)."""
    cfg = AccessConfig.from_settings(settings)
    env = {**os.environ, "REPLAY_VENV": str(cfg.venv)}
    subprocess.run(["bash", str(SETUP_SCRIPT)], env=env, check=True)


def http_ok(url: str, timeout: float = 5.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return 200 <= resp.status < 400
    except (OSError, urllib.error.URLError):
        return False


class ReplayService:
    """pywb + resolver + refresh thread; ``start`` / ``stop`` / ``healthy``."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or get_settings()
        self.cfg = AccessConfig.from_settings(self.settings)
        self.proc: subprocess.Popen[bytes] | None = None
        self._resolver: Any = None
        self._gateway: Any = None
        self._search: SearchServer | None = None
        self._rules: tuple[tuple[int, int, int], list[rules.Rule]] = ((-1, -1, -1), [])
        self._rules_lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._reads: Reads | None = None

    def start(self, timeout_s: float = 120.0) -> None:
        """Reindex what changed, write pywb's config, start the resolver and pywb; wait healthy."""
        if not self.cfg.wayback.exists():
            raise ServiceError(
                f"pywb is not installed in {self.cfg.venv}: run `harvestflow access setup`"
                " (access/setup-replay.sh)"
            )
        reindex(self.settings)
        self._reads = Reads(self._engine())  # kept: a pass over an idle database, one query
        try:
            definition_index.reindex(self.settings, self._engine())
            publish(self.settings, self._engine(), reads=self._reads)
        except sa.exc.SQLAlchemyError as exc:
            raise ServiceError(
                f"access rules and definitions: cannot read them from the harvest database"
                f" ({exc.__class__.__name__}:"
                f" {exc}); the replay service does not start without them"
            ) from exc
        config = pywbconfig.write(self.settings)
        try:
            self._resolver = make_server(self.settings, INTERNAL_HOST, self.cfg.resolver_port)
        except OSError as exc:
            raise ServiceError(
                f"WARC resolver: cannot listen on {INTERNAL_HOST}:{self.cfg.resolver_port} ({exc});"
                " set [access] resolver_port (HARVESTFLOW_ACCESS__RESOLVER_PORT)"
            ) from exc
        self._spawn("warc-resolver", self._resolver.serve_forever)
        self._search = SearchServer(app_from_settings(self.settings), SEARCH_HOST)
        self._search.start()
        try:
            gateway = Gateway(
                self.cfg,
                self.current_rules,
                search_port=self._search.port,
                missing=lambda miss: missing.record(self._engine(), miss),
            )
            self._gateway = gateway.server()
        except OSError as exc:
            self.stop()
            raise ServiceError(
                f"access gateway: cannot listen on {self.cfg.host}:{self.cfg.port} ({exc});"
                " set [access] url (HARVESTFLOW_ACCESS__URL)"
            ) from exc
        self._spawn("access-gateway", self._gateway.serve_forever)
        self.cfg.log_dir.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
        env["PYWB_CONFIG_FILE"] = str(config)
        # stderr: gevent's request lines and pywb's log; stdout only gets pywb's print()s (a
        # "Dir ... unchanged" line per query and folder source): dropped. The child keeps its
        # own descriptor of the log; ours closes at once.
        with open(self.cfg.access_log, "ab") as err:
            self.proc = subprocess.Popen(
                [str(self.cfg.wayback), "-p", str(self.cfg.pywb_port), "-b", INTERNAL_HOST],
                cwd=self.cfg.root,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=err,
                start_new_session=True,
            )
        try:
            wait_until(
                self.healthy,
                timeout_s,
                proc=self.proc,
                name="pywb",
                logfile=self.cfg.access_log,
                not_ready=f"pywb did not answer on {self.cfg.pywb_url}",
                poll_s=0.3,
            )
        except ServiceError:
            self.stop()
            raise
        self._spawn("access-refresh", self._refresh_loop)
        log.info(
            "replay service on %s, site %s (resolver %s)",
            self.cfg.listen_url,
            self.cfg.url,
            self.cfg.resolver_url,
        )

    def _spawn(self, name: str, target: Any) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _engine(self) -> sa.Engine:
        return get_engine(self.settings.harvest_db_url)

    def current_rules(self) -> list[rules.Rule]:
        """The rules in force, for the refusal log: re-read whenever pywb's ACL file changed
        (every change is published there first), so the log names the rule pywb applied."""
        try:
            st = acl_file(self.cfg).stat()
            version = (st.st_mtime_ns, st.st_size, st.st_ino)
        except FileNotFoundError:
            version = (0, 0, 0)
        with self._rules_lock:
            seen, cached = self._rules
            if seen != version:
                try:
                    cached = rules.active(self._engine())
                    self._rules = (version, cached)
                except sa.exc.SQLAlchemyError:
                    log.exception("access rules: cannot read them; the refusal log uses the last")
            return cached

    def _refresh_loop(self) -> None:
        lister = Lister()
        while not self._stop.wait(self.cfg.refresh_interval_s):
            try:
                refresh(self.settings, lister)
                publish(self.settings, self._engine(), lister, self._reads)
            except Exception:  # keep serving (the last rules and pages); the next pass retries
                log.exception("access refresh failed")

    def healthy(self) -> bool:
        return (
            http_ok(self.cfg.pywb_url)
            and http_ok(self.cfg.listen_url + "_health")
            and http_ok(self.cfg.resolver_url.replace("/warc/", "/health"))
        )

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        self._stop.set()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._gateway is not None:
            self._gateway.shutdown()
            self._gateway.server_close()
            self._gateway = None
        if self._resolver is not None:
            self._resolver.shutdown()
            self._resolver.server_close()
            self._resolver = None
        if self._search is not None:
            self._search.stop()
            self._search = None

    def serve_forever(self) -> int:
        """Start, then wait until pywb exits or Ctrl-C / SIGTERM; stop everything."""
        import signal

        def _terminate(signum: int, frame: Any) -> None:
            raise KeyboardInterrupt

        signal.signal(signal.SIGTERM, _terminate)
        self.start()
        print(f"replay: {self.cfg.url}all/  (access log {self.cfg.access_log})", flush=True)
        try:
            while self.running():
                time.sleep(1)
            log.error(
                "pywb exited with %s; see %s",
                self.proc and self.proc.returncode,
                self.cfg.access_log,
            )
            return 1
        except KeyboardInterrupt:
            return 0
        finally:
            self.stop()
