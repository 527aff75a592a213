"""``harvestflow preload`` subcommands, run through the real CLI entry point."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from harvestflow import samplesite
from harvestflow.cli import main

from .dnsserver import ZoneServer


def test_check_dns_writes_tab_separated_lines(
    zone_server: ZoneServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    names = tmp_path / "names.txt"
    names.write_text("exists.test\n# comment\nnothere.test\nservfail.test\n\nv6only.test\n")
    code = main(
        [
            "preload", "check-dns", str(names), "--nameserver", zone_server.address,
            "--timeout", "0.3", "--retries", "1", "--processes", "2",
        ]
    )  # fmt: skip
    assert code == 0
    lines = sorted(capsys.readouterr().out.splitlines())
    assert lines == [
        "exists.test\tactive\tA 192.0.2.1",
        "nothere.test\tfailed\tNXDOMAIN",
        "servfail.test\tunknown\tA: SERVFAIL,SERVFAIL",
        "v6only.test\tactive\tAAAA 2001:db8::1",
    ]


def test_check_dns_output_file_resumes_an_interrupted_run(
    zone_server: ZoneServer, tmp_path: Path
) -> None:
    names = tmp_path / "names.txt"
    names.write_text("".join(f"n{i}.test\n" for i in range(50)) + "exists.test\n")
    out = tmp_path / "out.tsv"
    # an interrupted earlier run: 20 results and a torn last line
    part = tmp_path / "out.tsv.part"
    part.write_text("".join(f"n{i}.test\tfailed\tNXDOMAIN\n" for i in range(20)) + "n20.te")
    code = main(
        ["preload", "check-dns", str(names), "--nameserver", zone_server.address, "-o", str(out),
         "--processes", "1"]
    )  # fmt: skip
    assert code == 0 and not part.exists()
    rows = [line.split("\t") for line in out.read_text().splitlines()]
    assert sorted(r[0] for r in rows) == sorted([f"n{i}.test" for i in range(50)] + ["exists.test"])
    assert all(zone_server.queries[(f"n{i}.test", "A")] == 0 for i in range(20))
    assert zone_server.queries[("n20.test", "A")] == 1


def test_preload_run_demo_without_internet_dns(
    db_engine: sa.Engine, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 example-a.test example-b.test\n")
    domains = tmp_path / "domains.txt"
    domains.write_text("www.example-b.test\nunknown-site.test\n::garbage::\n")
    urls = tmp_path / "urls.txt"
    urls.write_text("http://example-b.test/moved\n")
    site = samplesite.start()
    try:
        code = main(
            [
                "preload", "run", "--run-id", "demo-1",
                "--source", f"afnic=registry:{domains}", "--source", f"links=url_list:{urls}",
                "--hosts-file", str(hosts), "--static-only",
                "--connect-to", f"127.0.0.1:{site.port}",
            ]
        )  # fmt: skip
    finally:
        site.stop()
    assert code == 0
    text = capsys.readouterr().out
    assert "Broad-crawl preload demo-1" in text
    with db_engine.connect() as conn:
        names = set(conn.execute(sa.text("SELECT name FROM domains WHERE active")).scalars())
    assert names == {"example-a.test", "example-b.test"}  # example-a.test found by redirect
