"""DNS check basics shared by the checker, the task and the CLI: classes, settings, inputs.

Why a module of its own: the settings and input formats (nameserver strings, hosts files) are
used by the CLI, the DAG tasks and the redirect probe, which should not need the wire-level
checker to read a hosts file.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from harvestflow.formats.fields import tsv_field

# its home is the core (the crawler reads [crawler] nameservers too); kept importable here
from harvestflow.nameservers import parse_nameserver as parse_nameserver

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
