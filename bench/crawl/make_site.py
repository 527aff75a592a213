"""Generate the benchmark's static site: HOSTS × PAGES html pages with images and CSS.

Each "host" is one nginx port on 127.0.0.1 (so that wget, which has no resolver override,
reaches it too). Pages link to a few others (a binary tree + neighbours, so every page is
reachable within ~12 hops from the front page) and embed two images, a srcset and a CSS file
whose url() points at a background image. With ``--ports`` (the nginx ports of the hosts, in
order), every page also links to a page of the next host, so a host-partitioned crawl hands URLs
off between its processes.
"""

from __future__ import annotations

import argparse
import struct
import zlib
from pathlib import Path


def png(w: int, h: int, seed: int) -> bytes:
    rgb = bytes(((seed * 37) % 256, (seed * 91) % 256, (seed * 53) % 256))
    raw = b"".join(b"\x00" + rgb * w for _ in range(h))

    def chunk(t: bytes, d: bytes) -> bytes:
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


TEXT = (
    "A national web archive keeps what the web was, page by page, so that later readers "
    "can see it as it was published. "
) * 12


def page(i: int, n: int, images: int, cross: str = "") -> str:
    links = sorted({j for j in (2 * i + 1, 2 * i + 2, i + 1, i - 1, (i * 7 + 3) % n) if 0 <= j < n})
    a = "".join(f'<li><a href="/p{j}.html">page {j}</a></li>' for j in links)
    if cross:
        a += f'<li><a href="{cross}p{(i * 5 + 2) % n}.html">elsewhere</a></li>'

    im1, im2 = i % images, (i * 3 + 1) % images
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>Page {i}</title><link rel='stylesheet' href='/site.css'></head><body>"
        f"<h1>Page {i}</h1><p>{TEXT}</p>"
        f"<img src='/img/i{im1}.png' alt=''>"
        f"<img src='/img/i{im2}.png' srcset='/img/i{im2}.png 1x, /img/i{im1}.png 2x' alt=''>"
        f"<ul>{a}</ul></body></html>\n"
    )


def build(root: Path, hosts: int, pages: int, images: int, ports: list[int] | None = None) -> int:
    total = 0
    for h in range(hosts):
        cross = f"http://127.0.0.1:{ports[(h + 1) % hosts]}/" if ports and hosts > 1 else ""
        d = root / f"h{h}"
        (d / "img").mkdir(parents=True, exist_ok=True)
        for i in range(pages):
            (d / f"p{i}.html").write_text(page(i, pages, images, cross))
        (d / "index.html").write_text(page(0, pages, images, cross))
        for k in range(images):
            (d / "img" / f"i{k}.png").write_bytes(png(24 + k % 8, 16, h * 1000 + k))
        (d / "img" / "bg.png").write_bytes(png(8, 8, h))
        (d / "site.css").write_text("body{background:#fff url(/img/bg.png)}\n")
        total += pages + 1 + images + 2
    return total


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("root", type=Path)
    p.add_argument("--hosts", type=int, default=4)
    p.add_argument("--pages", type=int, default=1300)
    p.add_argument("--images", type=int, default=50)
    p.add_argument("--ports", default="", help="comma-separated nginx ports of the hosts")
    args = p.parse_args()
    ports = [int(x) for x in args.ports.split(",") if x]
    print(build(args.root, args.hosts, args.pages, args.images, ports))
