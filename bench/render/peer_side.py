"""The peer's side of bench/run render: pywb recording through its proxy, and N Chromium tabs
(N chromedriver loops, bench/render/peer.py) loading the pages, the pages dealt out in turn.

Why one command: the runner measures one process tree per side; this script is that tree's
root (pywb, every chromedriver and Chromium below it), as ``harvestflow crawl`` is ours.

``python peer_side.py OUT --tabs N --timeout S --min-wait S --max-scrolls N URL...``: the
collection is ``OUT/collections/peer`` (its WARCs in ``archive/``). Exit 1 when pywb does not
start, or a driver loop fails.
"""

from __future__ import annotations

import argparse
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ORACLE = HERE.parents[1] / ".oracle-venv" / "bin"
CONFIG = (
    "collections:\n  live: {index: $live}\n"
    "recorder:\n  source_coll: live\n"
    "proxy:\n  coll: peer\n  recording: true\n  enable_content_rewrite: false\n"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_for_port(proc: subprocess.Popen[bytes], port: int, timeout: float = 60.0) -> None:
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        if proc.poll() is not None:
            raise SystemExit(f"peer: wayback exited {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"peer: wayback did not listen on {port} within {timeout:.0f} s")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--tabs", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--min-wait", type=float, default=0.5)
    ap.add_argument("--max-scrolls", type=int, default=40)
    ap.add_argument("urls", nargs="+")
    a = ap.parse_args()
    # what ``wb-manager init peer`` makes, without a Python start of its own
    for sub in ("archive", "indexes"):
        (a.out / "collections" / "peer" / sub).mkdir(parents=True, exist_ok=True)
    (a.out / "config.yaml").write_text(CONFIG)
    port = free_port()
    with (a.out / "wayback.log").open("wb") as log:
        pywb = subprocess.Popen(
            [str(ORACLE / "wayback"), "--record", "-b", "127.0.0.1", "-p", str(port)],
            cwd=a.out,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_for_port(pywb, port)
            common = [sys.executable, str(HERE / "peer.py"), "--proxy", f"127.0.0.1:{port}"]
            common += ["--timeout", str(a.timeout), "--min-wait", str(a.min_wait)]
            common += ["--max-scrolls", str(a.max_scrolls)]
            loops = [
                subprocess.Popen([*common, *a.urls[i :: a.tabs]])
                for i in range(min(a.tabs, len(a.urls)))
            ]
            failed = [p.args for p in loops if p.wait() != 0]
        finally:
            pywb.send_signal(signal.SIGINT)
            try:
                pywb.wait(20)
            except subprocess.TimeoutExpired:
                pywb.kill()
                pywb.wait()
    if failed:
        print(f"peer: {len(failed)} driver loop(s) failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
