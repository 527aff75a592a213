"""Integers typed by people or read back from our text files: ASCII digits only, in a range.

Why one strict parser: ``str.isdigit()`` is true for ``"²"`` and ``"٣"``, and ``int()`` takes
``"٣"``, ``" 1_000 "`` and 4,000 digits but raises on ``"²"``; a number past a column's range
fails only in the database. A form or a file line checked with ``isdigit`` and read with
``int`` gave a 500 on the first and a bigint overflow on the last. Here a number is an optional
sign and ASCII digits, nothing else, and a range is checked before anything stores it.
"""

from __future__ import annotations

import re

from harvestflow.errors import HarvestflowError

SMALLINT_MAX = 2**15 - 1
INTEGER_MAX = 2**31 - 1
BIGINT_MAX = 2**63 - 1
_INTEGER = re.compile(r"[+-]?[0-9]+")
MAX_DIGITS = 40  # past this, no range of ours holds the number: not even converted


class NumberError(HarvestflowError, ValueError):
    """Not an integer, or one outside the range asked for; the message names the field."""


def shown(value: int) -> str:
    """A number as a message shows it: an absurd one by its size, not its 400 digits."""
    text = str(value)
    return text if len(text) <= 24 else f"a number of {len(text)} digits"


def ascii_int(text: str) -> int | None:
    """The integer ``text`` spells (optional sign, ASCII digits, at most ``MAX_DIGITS``), or
    None when it spells none: for readers of our own files, which skip a torn line."""
    if not _INTEGER.fullmatch(text) or len(text.lstrip("+-")) > MAX_DIGITS:
        return None
    return int(text)


def parse_int(
    text: str, name: str, *, minimum: int = -BIGINT_MAX, maximum: int = BIGINT_MAX
) -> int:
    """The integer ``text`` spells, within ``minimum``..``maximum`` (default: PostgreSQL's
    bigint); :class:`NumberError` says what is wrong in words."""
    shown = text[:40] + ("…" if len(text) > 40 else "")
    if not _INTEGER.fullmatch(text):
        raise NumberError(f"{name}: {shown!r} is not an integer (digits 0-9 only)")
    number = ascii_int(text)
    if number is None or not minimum <= number <= maximum:
        raise NumberError(f"{name}: {shown} is out of range ({minimum:,} to {maximum:,})")
    return number
