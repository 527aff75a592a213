"""``harvestflow preload`` subcommands, run through the real CLI entry point."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from app.cli.main import main
from app.demo import samplesite
from tests.support.dnsserver import ZoneServer


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


HOSTILE_LINES = [
    "exists.test",  # line 1: good
    "http://exists.test/",  # a URL
    "exists .test",  # a space
    "nul\x00.test",  # a NUL
    "*.exists.test",  # a wildcard
    "192.0.2.1",  # an IPv4 address
    "::1",  # an IPv6 address
    "com",  # a bare TLD
    "exists.test\tactive\tforged",  # a tab: would add columns to the output
    "Bücher.test",  # line 10: an IDN, asked in punycode
]


def test_check_dns_rejects_lines_that_are_not_domain_names(
    zone_server: ZoneServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    zone_server.records["xn--bcher-kva.test"] = {"A": ["192.0.2.7"]}
    names = tmp_path / "names.txt"
    names.write_text("\n".join(HOSTILE_LINES) + "\n", encoding="utf-8")
    code = main(
        ["preload", "check-dns", str(names), "--nameserver", zone_server.address,
         "--timeout", "0.3", "--retries", "1", "--processes", "1"]
    )  # fmt: skip
    out, err = capsys.readouterr()
    rows = [line.split("\t") for line in out.splitlines()]
    assert all(len(row) == 3 for row in rows), out
    assert sorted(rows) == [
        ["exists.test", "active", "A 192.0.2.1"],
        ["xn--bcher-kva.test", "active", "A 192.0.2.7"],
    ]
    for number in range(2, 10):
        assert f"names.txt line {number}: " in err, (number, err)
    assert "line 8: public-suffix-only" in err and "line 6: ip-literal" in err
    assert "line 5: wildcard" in err
    asked = {name for name, _ in zone_server.queries}
    assert asked == {"exists.test", "xn--bcher-kva.test"}
    assert code == 1  # something was rejected


def test_check_dns_output_file_gets_a_rejects_file(zone_server: ZoneServer, tmp_path: Path) -> None:
    names = tmp_path / "names.txt"
    names.write_bytes(b"exists.test\nbad\xff.test\nhttp://x.test/\n")
    out = tmp_path / "out.tsv"
    code = main(
        ["preload", "check-dns", str(names), "--nameserver", zone_server.address, "-o", str(out),
         "--processes", "1"]
    )  # fmt: skip
    assert code == 1
    assert out.read_text() == "exists.test\tactive\tA 192.0.2.1\n"
    rejects = (tmp_path / "out.tsv.rejects.tsv").read_text().splitlines()
    assert rejects[0] == "line\treason\tdetail\ttext"
    assert [r.split("\t")[:2] for r in rejects[1:]] == [["2", "not-utf-8"], ["3", "bad-label"]]


@pytest.mark.parametrize("value", ["x:abc", "127.0.0.1:99999", "[::1", "", "http://1.2.3.4/"])
def test_check_dns_malformed_nameserver_is_a_usage_error(
    value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    names = tmp_path / "names.txt"
    names.write_text("exists.test\n")
    with pytest.raises(SystemExit) as exit_info:
        main(["preload", "check-dns", str(names), "--nameserver", value])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "usage:" in err and "--nameserver" in err


def test_check_dns_where_every_query_timed_out_exits_non_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.support.dnsserver import SAMPLE_RECORDS

    server = ZoneServer(SAMPLE_RECORDS, silent_all=True).start()
    names = tmp_path / "names.txt"
    names.write_text("exists.test\nnothere.test\n")
    try:
        code = main(
            ["preload", "check-dns", str(names), "--nameserver", server.address,
             "--timeout", "0.2", "--retries", "1", "--processes", "1"]
        )  # fmt: skip
    finally:
        server.stop()
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 2 and all("\tunknown\t" in line for line in out.splitlines())
    assert code == 3 and "no answer at all" in err
