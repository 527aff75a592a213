"""Rendered crawls within their bounds: the job's object budget holds for the browser's
requests, a browser's memory is measured (PSS of its process group) for the restart bound, and
a page whose script hangs is retried once, then logged while the crawl goes on."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from tests.support import scriptsite
from tests.support.crawl import FAST_TEMPLATE, run_crawl
from tests.support.rawsite import serve


def test_a_hanging_page_is_retried_once_then_logged_and_the_crawl_goes_on(tmp_path: Path) -> None:
    """A page whose script never yields: its tab is killed, the page tried once more in a new
    browser, then its crawl.log line says why; its plain capture and links stand."""
    from tests.support.rawsite import Raw, Routes

    html = b"Content-Type: text/html"
    routes: Routes = {
        (None, "/"): Raw(
            b'<html><body><a href="/next.html">next</a>'
            b"<script>while (true) {}</script></body></html>",
            [html],
        ),
        (None, "/next.html"): Raw(b"<html><body>next</body></html>", [html]),
    }
    with serve(routes) as site:
        seed = site.url("hang.test", "/")
        job = {
            "job_id": 5,
            "seeds": [seed],
            "template": {
                **FAST_TEMPLATE,
                "max_hops": 1,
                "render": "seeds",
                "render_page_timeout_s": 2,
                "render_min_wait_s": 0,
            },
            "resolve": {"hang.test": "127.0.0.1"},
        }
        result = run_crawl(job, tmp_path / "hang", timeout=120)
    assert result.summary["status"] == "complete"
    line = result.line_for(seed)
    assert line[1] == "200" and "render-failed:timeout" in line[11].split(","), line
    assert result.line_for(site.url("hang.test", "/next.html"))[1] == "200"
    attempts = [ln for ln in result.proc.stderr.splitlines() if "render of " + seed in ln]
    assert len(attempts) == 2 and "attempt 2" in attempts[1], attempts
    assert not (result.out / "reports" / "screenshots-report.txt").exists()


def test_a_browsers_memory_is_measured_for_the_restart_bound() -> None:
    """``render_max_memory_mb`` compares against the proportional memory (PSS) of the browser's
    whole process group (browser, renderers, GPU and network processes): more than the main
    process alone, and less than the group's RSS sum, which counts shared pages once per
    process (an RSS sum restarted browsers every few pages: bench/render)."""
    import asyncio

    from crawler.rendering.cdp import Browser

    def rss_kb(pid: int) -> int:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * 4

    async def measure() -> tuple[int, int, int]:
        browser = Browser(None)
        await browser.start()
        try:
            assert browser.proc is not None
            pgid = browser.proc.pid
            group = [
                int(p.parent.name)
                for p in Path("/proc").glob("[0-9]*/stat")
                if int(p.read_text().rsplit(")", 1)[1].split()[2]) == pgid
            ]
            total = await browser.memory_kb()
            own_pss = int(
                next(
                    line.split()[1]
                    for line in Path(f"/proc/{pgid}/smaps_rollup").read_text().splitlines()
                    if line.startswith("Pss:")
                )
            )
            return total, own_pss, sum(rss_kb(pid) for pid in group)
        finally:
            await browser.close()

    total, main_only, rss_sum = asyncio.run(measure())
    assert rss_sum > total > main_only > 10_000, (rss_sum, total, main_only)


def test_the_browsers_requests_count_against_the_budget(tmp_path: Path) -> None:
    """A job's object budget holds for what the browser asks for too: past it, the browser's
    requests are refused (-5003, annotated ``browser``) and never reach the site. (The job's
    ``max_objects`` is, as everywhere in the crawler, a limit per domain.)"""
    with serve(scriptsite.route) as site:
        job = {
            "job_id": 2,
            "seeds": [site.url(scriptsite.HOST, "/")],
            "max_objects": 4,
            "template": {
                **FAST_TEMPLATE,
                "max_hops": 0,
                "render": "seeds",
                "render_min_wait_s": 0.5,
                "extract_js": False,
            },
            "resolve": {scriptsite.HOST: "127.0.0.1", scriptsite.CDN_HOST: "127.0.0.1"},
        }
        limited = run_crawl(job, tmp_path / "limited", timeout=120)
        asked = list(site.requests)
    fields = limited.log_fields()
    fetched = [
        f
        for f in fields
        if f[1] == "200" and scriptsite.HOST in f[3] and not f[3].endswith("/robots.txt")
    ]
    assert len(fetched) == 4, [f[3] for f in fetched]
    once = Counter(f[3] for f in fields)
    assert [u for u, n in once.items() if n > 1] == []  # one line per URL, fetched or refused
    refused = [f for f in fields if f[1] == "-5003"]
    # the browser's own requests past the budget are refused and say so; a refusal without the
    # tag is an embed that the crawler's extraction of the rendered page found before the
    # browser asked for it (the same budget, and a race with the page's timers): never fetched
    # either way
    assert [f for f in refused if "browser" in f[11].split(",")], refused
    for f in refused:
        path = "/" + f[3].split("/", 3)[3]
        assert (scriptsite.HOST, path) not in asked and (scriptsite.CDN_HOST, path) not in asked


def test_chromium_keeps_its_sandbox() -> None:
    """No ``--no-sandbox``: run by a root crawler, Chromium runs as the unprivileged system user
    ``harvestflow_chromium``, and its renderers are sandboxed (a user namespace of their own and
    a seccomp filter), as the kernel reports in /proc."""
    import asyncio
    import os
    import pwd
    import time

    from crawler.rendering.cdp import Browser

    def group_of(pgid: int) -> list[int]:
        out = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                if int(stat.read_text().rsplit(")", 1)[1].split()[2]) == pgid:
                    out.append(int(stat.parent.name))
            except (OSError, ValueError):
                continue
        return out

    async def inspect() -> tuple[list[str], int, list[tuple[str, str]]]:
        browser = Browser(None)
        await browser.start()
        try:
            assert browser.proc is not None
            pid = browser.proc.pid
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
            uid = Path(f"/proc/{pid}").stat().st_uid
            renderers: list[tuple[str, str]] = []
            deadline = time.time() + 20
            while not renderers and time.time() < deadline:
                await asyncio.sleep(0.2)
                for p in group_of(pid):
                    try:
                        if b"--type=renderer" not in Path(f"/proc/{p}/cmdline").read_bytes():
                            continue
                        seccomp = next(
                            ln.split()[1]
                            for ln in Path(f"/proc/{p}/status").read_text().splitlines()
                            if ln.startswith("Seccomp:")
                        )
                        renderers.append((os.readlink(f"/proc/{p}/ns/user"), seccomp))
                    except OSError:
                        continue
            return argv, uid, renderers
        finally:
            await browser.close()

    argv, uid, renderers = asyncio.run(inspect())
    assert "--no-sandbox" not in argv, argv
    if os.geteuid() == 0:
        assert uid == pwd.getpwnam("harvestflow_chromium").pw_uid
    else:
        assert uid == os.geteuid()
    assert renderers, "no renderer process seen"
    ours = os.readlink("/proc/self/ns/user")
    for userns, seccomp in renderers:
        assert userns != ours and seccomp == "2", renderers  # 2: seccomp-bpf filter


def test_the_no_sandbox_escape_is_explicit_and_logged() -> None:
    """``HARVESTFLOW_CHROMIUM_NO_SANDBOX=1`` (a host without user namespaces): Chromium gets
    ``--no-sandbox`` and crawler.log says so; it is never added otherwise."""
    import os
    import subprocess
    import sys

    from tests.support.crawl import REPO

    script = (
        "import asyncio, logging, pathlib\n"
        "from crawler.rendering.cdp import Browser\n"
        "logging.basicConfig(level=logging.WARNING)\n"
        "async def main():\n"
        "    b = Browser(None)\n"
        "    await b.start()\n"
        "    argv = pathlib.Path(f'/proc/{b.proc.pid}/cmdline').read_bytes().split(b'\\0')\n"
        "    await b.close()\n"
        "    print(b'--no-sandbox' in argv)\n"
        "asyncio.run(main())\n"
    )
    env = dict(os.environ, HARVESTFLOW_CHROMIUM_NO_SANDBOX="1")
    proc = subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=REPO, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "True"
    assert "Chromium runs without its sandbox (HARVESTFLOW_CHROMIUM_NO_SANDBOX is set)" in (
        proc.stderr
    )
