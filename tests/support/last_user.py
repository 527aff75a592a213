"""Session fixtures torn down after the last test of this pytest process that uses them, not at
the end of the session.

Why: ``shared_up`` (a whole `harvestflow up`: scheduler, dag-processor, api-server,
their databases and services) and ``demo_platform`` (the services the demo leaves running) are
session-scoped so that their users share one; but their users are one xdist unit of work
(tests/conftest.py), and the worker went on with other files after it (for two thirds of the
last full run's wall time) while the platform's loops idled on a CPU-bound CI machine. A
teardown after the last user changes nothing for the tests that use it, and its checks (a clean
Ctrl-C of `up`) become an error of that last test.

Which test is the last user: the last of the session's items that uses the fixture (tests in
between keep it running, as before). Under pytest-xdist every worker collects the same items,
and the users' files are one unit of work run in that order by one worker (tests/conftest.py;
tests/platform/test_test_tree.py checks that every user is in its unit), so that worker runs
the last user last. Were a user to run after it all the same (another ``--dist`` mode), pytest
sets the fixture up again for it: slower, never wrong.
"""

from __future__ import annotations

import logging

import pytest

log = logging.getLogger(__name__)

# the session fixtures stopped after their last user
STOPPED_AFTER_LAST_USER = ("shared_up", "demo_platform")


class LastUserTeardown:
    """The plugin (registered by tests/conftest.py) that finishes each fixture of ``names``
    after the teardown of its last user."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names
        self._last: dict[str, pytest.Item] | None = None

    def _last_users(self, session: pytest.Session) -> dict[str, pytest.Item]:
        if self._last is None:  # the session's final items: after deselection and reordering
            self._last = {}
            for item in session.items:
                for name in self.names:
                    if name in getattr(item, "fixturenames", ()):
                        self._last[name] = item
        return self._last

    @pytest.hookimpl(trylast=True)  # after pytest's own teardown of the item's module and class
    def pytest_runtest_teardown(self, item: pytest.Item) -> None:
        for name in self.names:
            if self._last_users(item.session).get(name) is not item:
                continue
            fixturedefs = item._fixtureinfo.name2fixturedefs.get(name)  # type: ignore[attr-defined]
            if fixturedefs and fixturedefs[-1].cached_result is not None:
                log.info("%s: its last user %s is done, tearing it down", name, item.nodeid)
                fixturedefs[-1].finish(item._request)  # type: ignore[attr-defined]
