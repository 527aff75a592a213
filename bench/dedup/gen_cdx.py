"""A large synthetic merged CDX (CDX11, byte order) for ``bench/run dedup``, and the job's domains.

Why synthetic: a real national index of 100 M captures is not on a development machine. The
file is what a merged CDX of many years looks like to the dedup index's reader: domains under a
few TLDs, each with its own host, an ``img`` subdomain and sometimes a host with a port, several
captures per URL over the years (http and https spellings under one key), revisits, 404s, POST
answers keyed under their body, and decoy domains whose keys share a domain's prefix
(``d0000042-x``, ``d00000420``: not the domain's). Written in key order block by block (fixed-width
names keep blocks apart), checked with ``sort -c`` once.

    python bench/dedup/gen_cdx.py OUT.cdx DOMAINS_OUT LINES JOB_DOMAINS
"""

from __future__ import annotations

import base64
import hashlib
import os
import random
import subprocess
import sys
from pathlib import Path

TLDS = ("com", "fr", "org", "test")
YEARS = ("2019", "2021", "2023", "2025")


def _digest(n: int) -> str:
    return base64.b32encode(hashlib.sha1(n.to_bytes(8, "big")).digest()).decode()


def _block(rnd: random.Random, tld: str, name: str, lines_wanted: int, serial: int) -> list[bytes]:
    hosts = [("", ""), (",img", "img.")]
    if rnd.random() < 0.2:
        hosts.append((":8080", ""))
    decoys = [("-x", "-x"), ("0", "0")] if rnd.random() < 0.3 else []
    out: list[bytes] = []
    for _ in range(lines_wanted):
        sub, sub_host = rnd.choice(hosts)
        key_name, host_name = name, name
        if decoys and rnd.random() < 0.1:
            extra = rnd.choice(decoys)[0]
            key_name, host_name, sub, sub_host = name + extra, name + extra, "", ""
        port = ":8080" if sub == ":8080" else ""
        key_host = f"{tld},{key_name}{'' if port else sub}{port}"
        path = f"/p{rnd.randrange(max(2, lines_wanted // 3))}.png"
        scheme = rnd.choice(("http", "https"))
        host = f"{sub_host if not port else ''}{host_name}.{tld}{port}"
        ts = f"{rnd.choice(YEARS)}{rnd.randrange(1, 13):02d}{rnd.randrange(1, 29):02d}{rnd.randrange(10**6):06d}"
        roll = rnd.random()
        mime, status, digest = "image/png", "200", _digest(serial * 7 + rnd.randrange(3))
        if roll < 0.15:
            mime = "warc/revisit"
        elif roll < 0.2:
            status = "404"
        elif roll < 0.22:
            path = path + "?__wb_method=post&q=1"
        fname = f"{rnd.randrange(1, 5000)}-{rnd.randrange(1, 50)}-{ts}000-00000-h.warc.gz"
        out.append(
            f"{key_host}){path} {ts} {scheme}://{host}{path.split('?')[0]} {mime} {status}"
            f" {digest} - - {rnd.randrange(300, 9000)} {rnd.randrange(10**9)} {fname}".encode()
        )
    out.sort()
    return out


def generate(cdx: Path, domains_out: Path, lines: int, job_domains: int, seed: int = 37) -> None:
    """Write ``cdx`` (about ``lines`` lines) and ``job_domains`` of its domains to ``domains_out``."""
    rnd = random.Random(seed)
    per_domain = 50
    count = max(job_domains * 2, lines // per_domain)
    names = [(tld, f"d{i:07d}") for tld in TLDS for i in range(count // len(TLDS))]
    tmp = cdx.with_name(cdx.name + ".tmp")
    with open(tmp, "wb", buffering=1 << 22) as fh:
        for serial, (tld, name) in enumerate(names):
            block = _block(rnd, tld, name, rnd.randrange(1, 2 * per_domain), serial)
            fh.write(b"\n".join(block) + b"\n")
    env = {**os.environ, "LC_ALL": "C"}
    subprocess.run(["sort", "-c", str(tmp)], env=env, check=True)
    os.replace(tmp, cdx)
    chosen = sorted(rnd.sample(names, job_domains))
    domains_out.write_text("".join(f"{name}.{tld}\n" for tld, name in chosen))


if __name__ == "__main__":
    generate(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
