"""Nameserver addresses as operators type them (``host``, ``host:port``, ``[v6]:port``).

Why in the core: the preload's DNS check (``[preload] nameservers``, ``--nameserver``) and the
crawler's resolver (``[crawler] nameservers``) read the same spelling, and the crawler may not
import the harvest package.
"""

from __future__ import annotations

import ipaddress
import re


def parse_nameserver(text: str, default_port: int = 53) -> tuple[str, int]:
    """``host``, ``host:port``, ``[v6]:port`` or a bare IPv6 address -> (host, port).

    ValueError, saying what is wrong, for anything else (an empty host, a port that is not a
    number in 1..65535, an unclosed bracket, a URL): a typo in ``--nameserver`` is a usage
    error, not a traceback from the socket layer later.
    """
    text = text.strip()
    if text.startswith("["):
        host, closed, rest = text[1:].partition("]")
        if not closed or (rest and not rest.startswith(":")):
            raise ValueError(f"{text!r}: expected [IPv6]:PORT")
        if not _is_ip(host):
            raise ValueError(f"{text!r}: {host!r} is not an IPv6 address")
        return host, _port(rest[1:], text) if rest else default_port
    if text.count(":") == 1:
        host, _, port_text = text.partition(":")
        return _host(host, text), _port(port_text, text)
    if text.count(":") > 1:
        if not _is_ip(text):
            raise ValueError(f"{text!r}: not HOST[:PORT] (an IPv6 address with a port: [v6]:53)")
        return text, default_port
    return _host(text, text), default_port


_HOSTNAME = re.compile(r"^(?!-)[A-Za-z0-9-]{1,63}(?<!-)(\.(?!-)[A-Za-z0-9-]{1,63}(?<!-))*\.?$")


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _host(host: str, text: str) -> str:
    if not host:
        raise ValueError(f"{text!r}: no host")
    if not (_is_ip(host) or _HOSTNAME.match(host)):
        raise ValueError(f"{text!r}: {host!r} is neither an IP address nor a host name")
    return host


def _port(port_text: str, text: str) -> int:
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"{text!r}: port {port_text!r} is not a number in 1..65535")
    return int(port_text)
