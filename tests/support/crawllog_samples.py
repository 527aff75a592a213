"""crawl.log samples the readers are tested on: Heritrix's own lines, lines a reader must name
rather than read, a good line and its forgeries (a server-chosen field holding spaces), and the
characters a writer must escape."""

from __future__ import annotations

from pathlib import Path

SAMPLES = Path(__file__).resolve().parents[1] / "formats" / "data" / "heritrix-crawl.log"

# What a reader must name rather than read (why, line): Heritrix 1.x logs before the source
# tag column (11 fields; NetarchiveSuite's test crawl log of 2005), shifted or forged lines,
# an extra-info object with spaces in it, and fields that do not read as numbers or a time.
HOSTILE_LINES = [
    (
        "11 fields",
        "2005-05-06T11:47:34.753Z -9998          - https://rex.qb.dk/F L http://www.qb.dk/"
        " no-type #030 - - 3t",
    ),
    (
        "14 fields",
        "2026-11-22T10:15:02.123Z   200       1234 http://a.test/y L http://a.test/ text/html x y"
        " #001 20261122101502100+20 sha1:FORGED http://evil.test/ duplicate:digest",
    ),
    (
        "13 fields",
        "2026-11-22T10:15:02.123Z    -6          - dns:a.test P http://a.test/ unknown #003 - - - -"
        " extra",
    ),
    (
        "14 fields",
        "2026-11-22T10:15:02.123Z   200         12 http://a.test/ - - text/html #003 - - - -"
        ' {"contentSize": 12}',
    ),
    (
        "status 'x200' is not an integer",
        "2026-11-22T10:15:02.123Z  x200         12 http://a.test/ - - text/html #003 - - - -",
    ),
    (
        "size '12k' is not an integer",
        "2026-11-22T10:15:02.123Z   200        12k http://a.test/ - - text/html #003 - - - -",
    ),
    (
        "not an ISO timestamp",
        "22/11/2026-10:15:02.123   200         12 http://a.test/ - - text/html #003 - - - -",
    ),
    ("0 fields", ""),
]

GOOD = (
    "2026-11-22T10:15:02.123Z   200       1234 http://a.test/x L http://a.test/ text/html"
    " #001 20261122101502100+20 sha1:GOODGOOD http://a.test/ -"
)
FORGED = (
    "2026-11-22T10:15:02.123Z   200       1234 http://a.test/y L http://a.test/ text/html x y"
    " #001 20261122101502100+20 sha1:FORGED http://evil.test/ duplicate:digest"
)
FORGED_DIGEST = (
    "2026-11-22T10:15:02.123Z   200       1234 http://a.test/z L http://a.test/ text/html #001 x"
    " sha1:FORGED http://evil.test/ duplicate:digest"
    " #001 20261122101502100+20 sha1:REALREAL http://a.test/ -"
)
EXTRA_INFO = GOOD + ' {"contentSize":1234,"warcFilename":"x.warc.gz"}'
HOSTILE_CHARS = [
    "\t",
    "\r",
    "\n",
    "\x00",
    " ",
    "\x0b",
    "\x0c",
    "\x1c",
    "\x85",
    "\u00a0",
    "\u2028",
    "\u2029",
    "\u3000",
    "\u200b",
    "\ufeff",
    "\x7f",
]
