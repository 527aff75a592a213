"""One sanitiser for every server-controlled value written into a line-oriented file.

Why: crawl.log, the Heritrix reports and the progress lines are split on whitespace by every
reader (ours, NetarchiveSuite's, curators' ``awk``), and a text reader also ends a line at CR,
LF and the Unicode line separators. A value a server chose (its ``Content-Type``, a
``Location``, a URL with odd bytes, an error message) written as is can therefore shift the
columns of its own line or start a new, forged one. Every such value goes through
:func:`clean_field` before it is written: whitespace, control, format and separator characters
are percent-escaped as their UTF-8 bytes (``%09``, ``%0A``, ``%E2%80%A8``: the form URLs use,
so a clean URL is unchanged and an escaped one still reads as a URL), an empty value becomes
``-`` and the length is capped (an escape is never cut in half). A TSV column whose value may
hold spaces goes through :func:`tsv_field` instead (backslash escapes, nothing cut).

The fast path — the common, clean value — costs three C-level scans of the string
(``isascii``, ``isprintable``, ``in``) and returns the same object.
"""

from __future__ import annotations

# the default cap of one field, in characters (a URL over this is logged cut; the WARC and the
# frontier keep the whole one)
MAX_FIELD_CHARS = 8192
# a MIME type longer than this is not a MIME type: logged cut
MAX_MIME_CHARS = 200


def _escape_char(char: str) -> str:
    return "".join(f"%{b:02X}" for b in char.encode("utf-8", "surrogatepass"))


def clean_field(
    value: str | None, limit: int = MAX_FIELD_CHARS, *, extra: str = "", empty: str = "-"
) -> str:
    """``value`` as one whitespace-free field of a line-oriented file.

    ``extra``: further characters to escape (``","`` for one annotation of a comma-separated
    list). ``empty``: what an empty (or None) value is written as.
    """
    if not value:
        return empty
    if (
        len(value) <= limit
        and value.isascii()
        and value.isprintable()
        and " " not in value
        and not (extra and any(c in value for c in extra))
    ):
        return value
    out = "".join(
        c if (c.isprintable() and c != " " and c not in extra) else _escape_char(c)
        for c in value[: limit + 1]
    )
    if len(out) > limit:
        out = out[:limit]
        cut = out.find("%", len(out) - 2)
        if cut != -1:  # never leave half an escape at the end
            out = out[:cut]
    return out or empty


def tsv_field(value: str) -> str:
    """A value made safe for one TSV column: backslash, tab, CR, LF and other control
    characters escaped (``\\t``, ``\\x00``), so no value can add or shift a column or line.

    Why not :func:`clean_field`: these TSV outputs (DNS check results, preload and selection
    rejects) keep a value's spaces and are read back as TSV, so only what would add or shift a
    column or line is escaped, backslash-style. A byte read
    with ``surrogateescape`` that was not UTF-8 comes out as ``\\xNN``, never as a lone
    surrogate that would fail the write.
    """
    out = []
    for char in value.replace("\\", "\\\\"):
        if char == "\t":
            out.append("\\t")
        elif char == "\n":
            out.append("\\n")
        elif char == "\r":
            out.append("\\r")
        elif "\udc80" <= char <= "\udcff":  # a byte that was not UTF-8 (surrogateescape)
            out.append(f"\\x{ord(char) - 0xDC00:02x}")
        elif (
            ord(char) < 32
            or 0x7F <= ord(char) < 0xA0
            or char in "\u2028\u2029"
            or "\ud800" <= char <= "\udfff"
        ):
            out.append(f"\\x{ord(char):02x}" if ord(char) < 256 else f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return "".join(out)
