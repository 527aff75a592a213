"""ARK identifiers, NOID style: ``ark:/<NAAN>/<shoulder><blade><check char>``.

Why NOID: it is what the BnF (and most ARK issuers) use. The blade is the value of the database
sequence ``ark_seq`` written in NOID's "extended digits", so two workers (or a restarted one) can
never mint the same name; the check character is NOID's Check Digit Algorithm (NCDA): each
character's ordinal in ``0123456789bcdfghjkmnpqrstvwxz`` (0 for anything else, such as ``/``)
times its 1-based position in the check zone ``<NAAN>/<name>``, summed, modulo 29. It catches
every single-character error and every transposition of two adjacent characters, which is what
matters when a curator copies an identifier by hand. The ``arks`` table's UNIQUE(kind, ref) makes
minting idempotent: asking again for the same file returns the ARK it already has.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import sqlalchemy as sa

XDIGITS = "0123456789bcdfghjkmnpqrstvwxz"
_ORDINAL = {ch: i for i, ch in enumerate(XDIGITS)}
MIN_BLADE = 4
_ARK = re.compile(r"^ark:/?(?P<naan>[0-9bcdfghjkmnpqrstvwxz]+)/(?P<name>[^/?.#]+)(?P<rest>.*)$")


def check_char(zone: str) -> str:
    """The NCDA check character of ``zone`` (``<NAAN>/<name>`` without the check character)."""
    total = sum(pos * _ORDINAL.get(ch, 0) for pos, ch in enumerate(zone, start=1))
    return XDIGITS[total % len(XDIGITS)]


def encode(number: int, min_width: int = MIN_BLADE) -> str:
    """``number`` in extended digits (base 29), left-padded with ``0`` to ``min_width``."""
    if number < 0:
        raise ValueError(f"cannot encode a negative number: {number}")
    digits = []
    while True:
        number, rem = divmod(number, len(XDIGITS))
        digits.append(XDIGITS[rem])
        if number == 0:
            break
    return "".join(reversed(digits)).rjust(min_width, "0")


def _check_part(value: str, what: str) -> None:
    if not value or any(ch not in _ORDINAL for ch in value):
        raise ValueError(f"ARK {what} {value!r} must use only the characters {XDIGITS}")


def make_ark(naan: str, shoulder: str, number: int) -> str:
    """The full ARK for sequence value ``number``."""
    _check_part(naan, "NAAN")
    _check_part(shoulder, "shoulder")
    name = shoulder + encode(number)
    return f"ark:/{naan}/{name}{check_char(f'{naan}/{name}')}"


@dataclass(frozen=True)
class ArkCheck:
    ark: str
    valid: bool
    reason: str
    naan: str = ""
    name: str = ""
    expected: str = ""


def verify(ark: str) -> ArkCheck:
    """Check the syntax and the check character of ``ark`` (``ark:/`` or ``ark:`` form).

    Qualifiers after the name (``/…``, ``.…``) are not covered by the check character and are
    ignored, as NOID does.
    """
    text = ark.strip()
    match = _ARK.match(text)
    if not match:
        return ArkCheck(text, False, "not an ARK (expected ark:/<NAAN>/<name>)")
    naan, name = match["naan"], match["name"]
    if len(name) < 2:
        return ArkCheck(text, False, "name too short to hold a check character", naan, name)
    bad = sorted({ch for ch in name if ch not in _ORDINAL})
    if bad:
        return ArkCheck(
            text, False, f"characters outside the NOID alphabet: {''.join(bad)}", naan, name
        )
    expected = check_char(f"{naan}/{name[:-1]}")
    if expected != name[-1]:
        return ArkCheck(
            text,
            False,
            f"check character is {name[-1]!r}, expected {expected!r}",
            naan,
            name,
            expected,
        )
    return ArkCheck(text, True, "check character ok", naan, name, expected)


def get_or_mint(conn: sa.Connection, kind: str, ref: str, naan: str, shoulder: str) -> str:
    """The ARK of (kind, ref), minting one from ``ark_seq`` if it has none yet.

    Safe under concurrency: if another worker inserts the same (kind, ref) between our look-up
    and our insert, ``ON CONFLICT DO NOTHING`` returns nothing and we read the winner's ARK (the
    sequence value we took is simply never used, as NOID allows).
    """
    found = conn.execute(
        sa.text("SELECT ark FROM arks WHERE kind = :k AND ref = :r"), {"k": kind, "r": ref}
    ).scalar()
    if found:
        return str(found)
    number = int(conn.execute(sa.text("SELECT nextval('ark_seq')")).scalar_one())
    ark = make_ark(naan, shoulder, number)
    inserted = conn.execute(
        sa.text(
            "INSERT INTO arks (ark, kind, ref) VALUES (:a, :k, :r)"
            " ON CONFLICT (kind, ref) DO NOTHING RETURNING ark"
        ),
        {"a": ark, "k": kind, "r": ref},
    ).scalar()
    if inserted:
        return str(inserted)
    return str(
        conn.execute(
            sa.text("SELECT ark FROM arks WHERE kind = :k AND ref = :r"), {"k": kind, "r": ref}
        ).scalar_one()
    )
