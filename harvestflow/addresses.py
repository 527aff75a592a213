"""Which network addresses the platform may connect to for a URL someone outside it chose.

Why one rule, in the core: the crawler (its resolver and capture middleware) and the seed URL
check of the selection (``harvest.selection.urlcheck``) both connect to hosts that curators,
feeds and linked pages name. Either could be turned into a way into internal services
(PostgreSQL, the S3 filer, the cloud's metadata endpoint) or a scanner of their ports, so both
refuse the same addresses: anything that is not a global unicast address. An IPv6 address that
carries an IPv4 one (IPv4-mapped ``::ffff:127.0.0.1``, 6to4, NAT64, Teredo) is judged by the
IPv4 address it reaches. Names are not judged here: the caller resolves them first (numeric
spellings such as ``0x7f000001`` or ``2130706433`` resolve to the address they mean).
"""

from __future__ import annotations

import ipaddress

# RFC 6052's well-known NAT64 prefix: the last 32 bits are the IPv4 address reached
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def _embedded_ipv4(addr: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    found = [addr.ipv4_mapped, addr.sixtofour]
    if addr.teredo is not None:
        found.append(addr.teredo[1])
    if addr in _NAT64:
        found.append(ipaddress.IPv4Address(int(addr) & 0xFFFFFFFF))
    return [a for a in found if a is not None]


def address_allowed(ip: str) -> bool:
    """Only global addresses: no loopback, private, link-local (metadata), reserved, multicast.

    ``ip`` may be bracketed (``[::1]``, as in a URL). A string that is no IP address (a host
    name, to be resolved) is not refused here.
    """
    try:
        addr = ipaddress.ip_address(ip.strip("[]"))
    except ValueError:
        return True
    if not addr.is_global or addr.is_multicast:
        return False
    if isinstance(addr, ipaddress.IPv6Address):
        return all(a.is_global and not a.is_multicast for a in _embedded_ipv4(addr))
    return True
