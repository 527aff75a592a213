"""DNS check basics shared by the checker, the task and the CLI: classes, settings, inputs.

Why a module of its own: the settings and input formats (nameserver strings, hosts files) are
used by the CLI, the DAG tasks and the redirect probe, which should not need the wire-level
checker to read a hosts file.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
from dataclasses import dataclass, field

from harvestflow.formats.fields import tsv_field

ACTIVE = "active"
FAILED = "failed"
UNKNOWN = "unknown"


Result = tuple[str, str, str]
"""(domain, class, detail) — the line format of ``check-dns`` output."""


@dataclass(frozen=True)
class DnsSettings:
    """How to check: nameservers, timeouts, retries, window size, static answers."""

    nameservers: tuple[tuple[str, int], ...] = (("127.0.0.1", 53),)
    timeout_s: float = 2.0
    retries: int = 2
    max_in_flight: int = 2000
    max_cname_depth: int = 8
    tcp_fallback: bool = True
    # name -> address: answered without asking DNS (a hosts file; demo and closed networks)
    static: dict[str, str] = field(default_factory=dict)
    # with static answers, may names not listed be asked to the nameservers?
    static_only: bool = False


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


def timed_out(cls: str, detail: str) -> bool:
    """Whether a result is *unknown* only because no answer came (every try a timeout)."""
    if cls != UNKNOWN:
        return False
    tries = detail.rpartition(": ")[2].split(",")
    return bool(tries) and all(t.strip() == "timeout" for t in tries)


def format_result(result: Result) -> str:
    """One ``domain<TAB>class<TAB>detail`` output line (with its newline)."""
    return "\t".join(tsv_field(field) for field in result) + "\n"


def read_hosts_file(path: str) -> dict[str, str]:
    """A hosts-format file (``address name [alias...]``, # comments) as name -> address."""
    answers: dict[str, str] = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            words = line.split("#", 1)[0].split()
            for name in words[1:]:
                answers.setdefault(name.lower().rstrip("."), words[0])
    return answers


def encode_qname(name: str) -> bytes:
    """Wire form of an ASCII name; ValueError for what no DNS server could be asked."""
    raw = name.rstrip(".").encode("ascii")
    labels = raw.split(b".")
    if not raw or any(not 0 < len(label) < 64 for label in labels):
        raise ValueError(f"invalid DNS name {name!r}")
    wire = b"".join(bytes((len(label),)) + label for label in labels) + b"\x00"
    if len(wire) > 255:
        raise ValueError(f"DNS name too long: {name!r}")
    return wire.lower()


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop when installed (about twice the datagram rate), else the standard loop."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()
