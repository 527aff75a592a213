"""Fixtures of the curator pages' tests shared with the selection tests."""

from tests.support.selection_site import loopback_seeds, site  # noqa: F401 (fixtures)
