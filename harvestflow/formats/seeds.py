"""Validation of what people type as seed URLs (selection files, seed lists, the one-off form,
``harvestflow crawl --seed``): one home for all of them, in the core so the crawler's command
line checks its seeds the same way as the selection import.

Why strict: a seed URL or a field of a curators' file is read by the importer, the
one-off trigger form, the job generator, the crawler and PostgreSQL, and each failed in its
own way on what it did not expect (a ``javascript:`` URL or ``http://[::1`` raised deep in
``urllib``, a port 99999 in the crawler, a NUL byte in the database driver, ``http://a b/``
only at crawl time). Everything is checked here, up front, and refused with a reason a
curator can act on; what passes is safe for every later stage.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from urllib.parse import urlsplit

import idna
from w3lib.url import canonicalize_url

from harvestflow.errors import HarvestflowError

# Heritrix's UURI limit (and the crawler template's max_url_length default): longer seeds
# would be refused by the crawler anyway
MAX_URL_CHARS = 2083
# the largest field a record may hold (also the csv module's default field limit)
MAX_FIELD_BYTES = 128 * 1024

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):(?!\d)")
_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")


class SeedError(HarvestflowError, ValueError):
    """A value that cannot be used; the message says why, in words."""


def check_text(value: str, name: str) -> str:
    """``value`` if it can be stored as text: valid UTF-8, no NUL, at most 128 KiB.

    Undecodable bytes arrive as lone surrogates (files are read with ``surrogateescape``), so
    the byte can be named.
    """
    for index, char in enumerate(value):
        if "\udc80" <= char <= "\udcff":
            byte = ord(char) - 0xDC00
            raise SeedError(f"{name}: not UTF-8 (byte 0x{byte:02x} at character {index + 1})")
        if char == "\x00":
            raise SeedError(f"{name}: contains a NUL byte (character {index + 1})")
    size = len(value.encode("utf-8"))
    if size > MAX_FIELD_BYTES:
        raise SeedError(
            f"{name}: {size:,} bytes, more than the {MAX_FIELD_BYTES // 1024} KiB a field may hold"
        )
    return value


def check_seed_url(raw: str) -> str:
    """The canonical form (w3lib) of a seed URL, or :class:`SeedError` saying what is wrong.

    A URL without a scheme gets ``http://`` (curators write ``www.example.fr``); then the
    scheme must be http or https, the host a DNS name (IDN allowed) or an IP address, the port
    a number in 1..65535, and the URL must hold no whitespace or control character and be at
    most ``MAX_URL_CHARS`` long.
    """
    value = check_text(raw, "URL").strip()
    if not value:
        raise SeedError("the URL is empty")
    if len(value) > MAX_URL_CHARS:
        raise SeedError(f"URL of {len(value):,} characters (at most {MAX_URL_CHARS})")
    for index, char in enumerate(value):
        if char.isspace() or unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp"):
            raise SeedError(
                f"{value[:80]!r}: {'a space' if char == ' ' else repr(char)} at character"
                f" {index + 1} (a URL holds none; two URLs on one line?)"
            )
    if "://" not in value:
        scheme = _SCHEME.match(value)
        if scheme:
            raise SeedError(f"{value[:80]!r}: scheme {scheme.group(1)!r} is not http or https")
        value = "http://" + value
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError as exc:
        raise SeedError(f"{value[:80]!r} is not a URL ({exc})") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise SeedError(f"{value[:80]!r}: scheme {parts.scheme!r} is not http or https")
    if port == 0:
        raise SeedError(f"{value[:80]!r}: port 0")
    _check_host(parts.hostname or "", value)
    return canonicalize_url(value, keep_fragments=False)


def _check_host(host: str, url: str) -> None:
    if not host:
        raise SeedError(f"{url[:80]!r} has no host")
    try:
        ipaddress.ip_address(host)
        return
    except ValueError:
        pass
    if host.isascii():
        ascii_host = host
    else:
        try:
            ascii_host = idna.encode(host, uts46=True, transitional=False).decode("ascii")
        except (idna.IDNAError, UnicodeError) as exc:
            raise SeedError(f"{url[:80]!r}: host {host!r} is not a valid name ({exc})") from None
    name = ascii_host.lower().rstrip(".")
    if len(name) > 253:
        raise SeedError(f"{url[:80]!r}: host name longer than 253 characters")
    for label in name.split("."):
        if not _LABEL.match(label):
            shown = repr(label) if label else "an empty label"
            raise SeedError(f"{url[:80]!r}: host {host!r} has {shown}, not a DNS label")
