"""``harvestflow crawl --seed …``: an ad-hoc crawl with a template of config/templates/ and the
command-line overrides, through the installed ``harvestflow`` command. The crawl also proves
scope and transclusion end to end: with the ``host_only`` template the other domain's page is
refused (-5000) while the images and stylesheets of another host are fetched (transclusion),
within the hop limit plus at most two embed hops."""

from __future__ import annotations

import json
import subprocess

import pytest

from app.demo.samplesite import HOSTS
from tests.support.crawl import REPO, CrawlResult


def test_adhoc_crawl_with_a_config_template_and_overrides(fresh_site, tmp_path) -> None:
    site = fresh_site
    out = tmp_path / "adhoc"
    seed = site.url("www.example-a.test", "/")
    cmd = [
        str(REPO / ".venv" / "bin" / "harvestflow"),
        "crawl",
        "--seed",
        seed,
        "--out",
        str(out),
        "--template",
        "host_only",
        "--max-hops",
        "1",
        "--ignore-robots",
        "--no-politeness",
        # plain extraction's hop chains are checked here: host_only renders its seeds, and a
        # browser's requests are all embeds of the page (tests/crawler/test_renderer.py)
        "--render",
        "none",
        "--job-id",
        "77",
        "--progress-interval",
        "1",
    ]
    for host in HOSTS:  # loopback, refused by host_only unless given explicitly
        cmd += ["--resolve", f"{host}:{site.host}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary_line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("SUMMARY "))
    summary = json.loads(summary_line[len("SUMMARY ") :])
    assert summary["status"] == "complete" and summary["job_id"] == 77
    assert summary == json.loads((out / "summary.json").read_text())
    result = CrawlResult(out, summary, proc)

    frozen = json.loads((out / "job.json").read_text())
    t = frozen["template"]
    assert t["name"] == "host_only" and t["scope"] == "host"  # from config/templates/
    assert t["max_hops"] == 1 and t["obey_robots"] is False and t["delay_factor"] == 0
    assert t["render"] == "none"  # the option over the template's "seeds"
    assert frozen["resolve"]["www.example-a.test"] == site.host

    a = lambda p: site.url("www.example-a.test", p)  # noqa: E731
    s = lambda p: site.url("static.example-a.test", p)  # noqa: E731
    # robots ignored: the disallowed page is fetched, robots.txt is not
    assert result.line_for(a("/private/secret.html"))[1] == "200"
    assert not site.served("www.example-a.test", "/robots.txt")
    # host scope: the other domain's page is refused, not fetched
    b = result.line_for(site.url("example-b.test", "/"))
    assert b[1] == "-5000" and b[11] == "err=out-of-scope"
    assert not site.served("example-b.test")
    # hop limit 1: one link away is fetched, two are not
    assert result.line_for(a("/section/"))[1] == "200"
    deeper = result.line_for(a("/section/sub/"))
    assert deeper[1] == "-4001" and deeper[4] == "LL"
    # a redirect at the limit is followed within scope (LR)
    assert result.line_for(a("/refreshed.html"))[1:5:3] == ["200", "LR"]
    # transclusion: another host's images and CSS, past the limit on a linked page (LE),
    # through a stylesheet (EE), but not three embed hops away (EEE)
    assert result.line_for(s("/img/logo.png"))[1:5:3] == ["200", "E"]
    assert result.line_for(s("/img/bullet.gif"))[1] == "200"
    assert result.line_for(s("/img/css-bg.png"))[1:5:3] == ["200", "EE"]
    assert result.line_for(s("/css/imported.css"))[1:5:3] == ["200", "EE"]
    far = result.line_for(s("/img/imported-bg.png"))
    assert far[1] == "-4002" and far[4] == "EEE"
    assert not site.served("static.example-a.test", "/img/imported-bg.png")


@pytest.mark.parametrize(
    ("seed", "said"),
    [
        ("notaurl", "'notaurl' is not a URL (give it with http:// or https://)"),
        ("ftp://example.test/", "scheme 'ftp' is not http or https"),
        ("http://[::1", "'http://[::1' is not a URL"),
        ("http://a b/", "a space at character 9"),
    ],
)
def test_a_seed_that_is_not_a_url_is_refused_with_exit_2(tmp_path, seed, said) -> None:
    """As `selection import` refuses it (the same check): nothing is crawled, no summary says
    "complete", the message names the seed."""
    out = tmp_path / "adhoc"
    good = "http://www.example-a.test/"
    proc = subprocess.run(
        [str(REPO / ".venv" / "bin" / "harvestflow"), "crawl", "--seed", good,
         "--seed", seed, "--out", str(out)],
        capture_output=True, text=True, timeout=120, cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert said in proc.stderr and repr(seed) in proc.stderr
    assert good not in proc.stderr  # only the bad one is named
    assert "SUMMARY" not in proc.stdout and not out.exists()
