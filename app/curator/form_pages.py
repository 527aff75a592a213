"""What every group of the curator app's form pages is given: the renderer of pages with forms,
a read-only connection, the engine for writes and the CSRF key.

Why one bundle: the definitions, records, rights and documents pages each took these four as
keyword arguments, a signature copied four times (a tuple: each unpacks it in one line).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import NamedTuple

import sqlalchemy as sa
from fastapi.responses import HTMLResponse

Pager = Callable[..., HTMLResponse]


class FormPages(NamedTuple):
    """``page`` sets the CSRF token and ``can_edit``; ``connect`` opens a READ ONLY transaction;
    writes go through ``engine_factory()`` after the CSRF check with ``csrf_key``."""

    page: Pager
    connect: Callable[[], AbstractContextManager[sa.Connection]]
    engine_factory: Callable[[], sa.Engine]
    csrf_key: bytes
