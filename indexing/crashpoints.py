"""Named points where a test can kill the process, to prove the chain restarts cleanly.

Why: "interrupt and restart anywhere" is only believable if it is tried at every step. When the
environment variable ``HARVESTFLOW_INDEXING_CRASH`` names a point, the process dies there at once
with ``os._exit`` (no cleanup, no finally blocks: like kill -9). Unset, a crash point costs one
dictionary lookup.
"""

from __future__ import annotations

import os

ENV = "HARVESTFLOW_INDEXING_CRASH"
EXIT_CODE = 86


def crashpoint(name: str) -> None:
    if os.environ.get(ENV) == name:
        os._exit(EXIT_CODE)
