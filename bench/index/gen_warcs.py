"""Generate gzipped WARCs shaped like our crawler's output, for the indexing benchmark.

Why generated: crawling a gigabyte from the loopback sample site would take far longer than the
benchmark itself. Records follow the crawler's layout (warcinfo; per URL a response, its request
and a metadata record; some revisits) and the BnF's mix (about 60% text, 36% images, 4% other;
mean object size about 38 kB), so the per-record and per-byte costs are realistic.
"""

from __future__ import annotations

import argparse
import io
import os
import random
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

WORDS = [os.urandom(3).hex() for _ in range(3000)]


def _body(rnd: random.Random) -> tuple[bytes, str]:
    kind = rnd.random()
    if kind < 0.60:
        n = int(rnd.lognormvariate(8.3, 0.9))  # words; median ~4000 words (~28 kB)
        return (" ".join(rnd.choice(WORDS) for _ in range(n))).encode(), "text/html; charset=utf-8"
    if kind < 0.96:
        return os.urandom(int(rnd.lognormvariate(9.8, 1.0))), "image/jpeg"
    return os.urandom(int(rnd.lognormvariate(10.5, 1.0))), "application/pdf"


def write_file(path: Path, target_bytes: int, job: int, serial: int) -> int:
    rnd = random.Random(job * 1000 + serial)
    records = 0
    tmp = path.with_name(path.name + ".open")
    with open(tmp, "wb") as fh:
        w = WARCWriter(fh, gzip=True, warc_version="WARC/1.1")
        w.write_record(w.create_warcinfo_record(path.name, {"software": "harvestflow-crawler"}))
        i = 0
        while fh.tell() < target_bytes:
            i += 1
            host = f"www.site{rnd.randint(1, 400)}.example.fr"
            url = f"https://{host}/section/{i % 50}/page-{serial}-{i}.html?id={i}&lang=fr"
            body, ctype = _body(rnd)
            http = StatusAndHeaders(
                rnd.choice(["200 OK"] * 18 + ["404 Not Found", "301 Moved Permanently"]),
                [
                    ("Content-Type", ctype),
                    ("Content-Length", str(len(body))),
                    ("Server", "nginx"),
                    ("ETag", f'"{i:x}"'),
                ],
                protocol="HTTP/1.1",
            )
            resp = w.create_warc_record(
                url, "response", payload=io.BytesIO(body), http_headers=http
            )
            w.write_record(resp)
            req = StatusAndHeaders(
                "GET / HTTP/1.1",
                [("Host", host), ("User-Agent", "harvestflow/0.1")],
                is_http_request=True,
            )
            w.write_record(
                w.create_warc_record(url, "request", payload=io.BytesIO(b""), http_headers=req)
            )
            meta = f"via: https://{host}/\r\nhopsFromSeed: L\r\noutlink: {url}x L a/@href\r\n"
            w.write_record(
                w.create_warc_record(
                    url,
                    "metadata",
                    payload=io.BytesIO(meta.encode()),
                    warc_content_type="application/warc-fields",
                )
            )
            records += 3
            if i % 10 == 0:
                w.write_record(
                    w.create_revisit_record(
                        url + "&again",
                        digest=resp.rec_headers.get_header("WARC-Payload-Digest"),
                        refers_to_uri=url,
                        refers_to_date=resp.rec_headers.get_header("WARC-Date"),
                        http_headers=http,
                    )
                )
                records += 1
    os.replace(tmp, path)
    return records


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--file-mb", type=int, default=100)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    n = max(1, round(args.gb * 1000 / args.file_mb))
    for serial in range(n):
        path = args.out / f"101-7-20261122031500{serial:03d}-{serial:05d}-bench.warc.gz"
        if not path.exists():
            write_file(path, args.file_mb * 1_000_000, 101, serial)
        print(path)


if __name__ == "__main__":
    main()
