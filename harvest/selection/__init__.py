"""Curators' selection records (BCWeb-like): import, validation, transfer to definitions."""
