"""For the compression-bomb tests: the peak memory of one piece of work, measured in a child
process, and WARC files holding bombs as the crawler records them.

Why a child: a process's high-water mark (``VmHWM``) only grows, so each measurement needs a
fresh process; the child also runs under an address-space limit, so that code which would
inflate a bomb whole fails fast with MemoryError instead of taking the shared machine's memory.
"""

from __future__ import annotations

import importlib
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
ADDRESS_SPACE = 3 << 30  # below the tests' bombs (4 GiB), far above what a bounded reader needs

# warcio's digest check of every record, over the bytes as stored; run by the oracle venv's
# Python. Why not ``warcio check``: it reads each record's content_stream(), which inflates a
# bomb's payload whole (~15 CPU-s for four 1 GiB bombs), and both digests are taken over the
# bytes as sent, never over the inflated ones.
_CHECK_DIGESTS = """
import sys
from warcio.archiveiterator import ArchiveIterator

failed = []
for name in sys.argv[1:]:
    with open(name, "rb") as fh:
        records = ArchiveIterator(fh, check_digests=True)
        for record in records:
            while record.raw_stream.read(1 << 20):
                pass
            if record.digest_checker.passed is not True:  # None: no digest to check
                failed.append((name, records.get_record_offset(), record.rec_type,
                               record.digest_checker.passed, record.digest_checker.problems))
print(failed)
sys.exit(1 if failed else 0)
"""


def check_digests(warcs: list[Path]) -> None:
    """Every record of ``warcs`` carries its digests and warcio verifies them (the oracle
    venv's warcio, not the platform's: that one pairs warcio 1.8.1 with a brotli whose
    Decompressor it cannot use)."""
    from tests.support.environment import oracle

    proc = subprocess.run(
        [str(oracle("python")), "-c", _CHECK_DIGESTS, *map(str, warcs)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def vm_hwm_kb(pid: int | str = "self") -> int:
    """The peak resident set size of a process so far (``VmHWM``, kB); 0 once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def _limit_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def call_measured(target: str, *args: str, timeout: float = 120) -> tuple[Any, int]:
    """Run ``module:function(*args)`` in a child: (its JSON-able result, the growth of the
    child's peak RSS during the call, kB). The module is imported before the first reading."""
    proc = subprocess.run(
        [sys.executable, "-c", "from tests.support.bombs import _child; _child()", target, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=_limit_address_space,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return out["result"], out["growth_kb"]


def _child() -> None:
    module, name = sys.argv[1].split(":")
    function = getattr(importlib.import_module(module), name)
    before = vm_hwm_kb()
    result = function(*sys.argv[2:])
    print(json.dumps({"result": result, "growth_kb": vm_hwm_kb() - before}))


def run_polled(cmd: list[str], timeout: float, **popen: Any) -> tuple[int, int]:
    """Run ``cmd``: (exit code, its own peak RSS in kB, read from ``VmHWM`` while it runs —
    its children, such as Chromium, are not counted)."""
    proc = subprocess.Popen(cmd, **popen)
    peak = 0
    deadline = time.monotonic() + timeout
    try:
        while proc.poll() is None:
            if time.monotonic() > deadline:
                proc.kill()
                break
            peak = max(peak, vm_hwm_kb(proc.pid))
            time.sleep(0.05)
    finally:
        code = proc.wait(timeout=30)
    return code, peak


def bomb_warc(
    warc_dir: Path, responses: dict[str, tuple[str, str, bytes]]
) -> list[tuple[str, str, int, int]]:
    """A WARC of response records as the crawler writes them, URL → (Content-Type,
    Content-Encoding, payload as sent): [(URL, file name, offset, length)]."""
    import datetime as dt

    from crawler.warc import records
    from crawler.warc.files import RotatingWarcWriter

    writer = RotatingWarcWriter(warc_dir, "1-9", 1 << 34, {"software": "test"})
    when = records.warc_date(dt.datetime(2026, 1, 2, tzinfo=dt.UTC))
    out = []
    for url, (ctype, coding, sent) in responses.items():
        head = [("Content-Type", ctype)] + ([("Content-Encoding", coding)] if coding else [])
        http = records.response_http_headers(200, "HTTP/1.1", head)
        record = records.response_record(url, http, sent, when, records.new_record_id(), None, None)
        ((name, offset, length),) = writer.write(record)
        out.append((url, name, offset, length))
    writer.close()
    return out
