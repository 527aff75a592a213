"""``python -m app.demo.samplesite --port 8099``: serve the sample site in the foreground."""

from __future__ import annotations

import argparse
import logging
import time

from app.demo.samplesite import HOSTS, start
from harvestflow.settings import get_settings


def main(argv: list[str] | None = None) -> int:
    conf = get_settings()["samplesite"]
    parser = argparse.ArgumentParser(prog="python -m app.demo.samplesite")
    parser.add_argument("--host", default=conf.get("host", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(conf.get("port", 8099)))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    site = start(args.host, args.port)
    logging.info("sample site on %s:%d, virtual hosts: %s", args.host, site.port, ", ".join(HOSTS))
    logging.info(
        "crawl it with: harvestflow crawl --seed %s --out DIR %s",
        site.url("www.example-a.test", "/"),
        " ".join(f"--resolve {h}:{args.host}" for h in HOSTS),
    )
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        site.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
