"""Helpers and fixture servers shared by tests of several packages: one home each, imported
from here (never from another test file or a conftest)."""
