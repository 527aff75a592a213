"""Collecting preload sources: normalisation, rejects, per-source counts, chunks, origins."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from harvest.preload.sources import SourceError, collect_sources


def _write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_sources_are_normalised_counted_and_rejects_reported(
    db_engine: sa.Engine, preload_settings, run_id: str, tmp_path: Path
) -> None:
    with db_engine.begin() as conn:
        conn.execute(sa.text("INSERT INTO domains (name) VALUES ('old.fr'), ('Bad Name')"))
        conn.execute(
            sa.text(
                "INSERT INTO selection_records (collection, seed_url, supplementary_urls, budget,"
                " frequency, depth, theme) VALUES ('c', 'https://www.curated.fr/page',"
                " ARRAY['http://old.fr/x'], 'small', 'monthly', 'domain', 't')"
            )
        )
    registry = _write(
        tmp_path / "registry.txt",
        "Example.FR.\nwww.example.fr\nbücher.de\n*.wild.fr\n192.168.1.1\nfoo.unknowntld\n"
        "\n# a comment\nbad_label!.fr\nold.fr\n" + "a" * 64 + ".fr\nsite.test\n",
    )
    csv_source = _write(
        tmp_path / "registry.csv", "id,domain,owner\n1,example.fr,x\n2,second.com,y\n3,,z\n"
    )
    urls = _write(
        tmp_path / "urls.txt",
        "https://blog.third.org/post?id=1\nftp://nope.fr/\nnot a url at all\nhttp://second.com/a\n",
    )
    result = collect_sources(
        run_id,
        [
            {"name": "registry", "kind": "registry", "path": registry},
            {"name": "csv", "kind": "registry", "path": csv_source, "column": "domain"},
            {"name": "db", "kind": "harvest_db"},
            {"name": "curators", "kind": "selections"},
            {"name": "urls", "kind": "url_list", "path": urls},
        ],
        settings=preload_settings,
        engine=db_engine,
    )
    stats = {s["name"]: s for s in result["sources"]}
    # registry: 12 lines, the comment not counted; example.fr twice, bücher.de, old.fr, site.test
    assert stats["registry"]["lines"] == 11
    assert stats["registry"]["valid"] == 5
    assert stats["registry"]["unique"] == 4
    assert stats["registry"]["new"] == 3  # example.fr, xn--bcher-kva.de, site.test
    assert stats["registry"]["rejected"] == 5
    assert (stats["csv"]["valid"], stats["csv"]["unique"], stats["csv"]["new"]) == (2, 2, 1)
    assert (stats["db"]["valid"], stats["db"]["new"], stats["db"]["rejected"]) == (1, 0, 1)
    assert (stats["curators"]["unique"], stats["curators"]["new"]) == (2, 1)  # curated.fr
    assert (stats["urls"]["valid"], stats["urls"]["new"], stats["urls"]["rejected"]) == (2, 1, 2)

    rejects = Path(result["rejects_path"]).read_text(encoding="utf-8").splitlines()
    reasons = {
        (line.split("\t")[0], line.split("\t")[1]): line.split("\t")[2] for line in rejects[1:]
    }
    assert reasons[("registry", "4")] == "wildcard"
    assert reasons[("registry", "5")] == "ip-literal"
    assert reasons[("registry", "6")] == "unknown-suffix"
    assert reasons[("registry", "9")] == "bad-label"
    assert reasons[("registry", "11")] == "bad-label"
    assert reasons[("urls", "2")] == "bad-url"
    assert len(rejects) - 1 == result["rejected"] == 8  # header + every rejected line

    chunked = [d for p in result["chunks"] for d in Path(p).read_text().split()]
    expected = {
        "example.fr",
        "xn--bcher-kva.de",
        "old.fr",
        "site.test",
        "second.com",
        "curated.fr",
        "third.org",
    }
    assert sorted(chunked) == sorted(expected)
    assert all(len(Path(p).read_text().split()) <= 3 for p in result["chunks"])

    with db_engine.connect() as conn:
        origins = set(
            conn.execute(
                sa.text("SELECT domain, origin FROM domain_origins WHERE run_id = :r"),
                {"r": run_id},
            ).all()
        )
        seeds = set(
            conn.execute(
                sa.text("SELECT domain, url FROM preload_seeds WHERE run_id = :r"), {"r": run_id}
            ).all()
        )
        source_rows = conn.execute(
            sa.text("SELECT count(*) FROM preload_sources WHERE run_id = :r"), {"r": run_id}
        ).scalar()
    assert ("old.fr", "registry") in origins and ("old.fr", "db") in origins
    assert ("third.org", "urls") in origins
    assert ("curated.fr", "https://www.curated.fr/page") in seeds
    assert ("third.org", "https://blog.third.org/post?id=1") in seeds
    assert source_rows == 5

    again = collect_sources(
        run_id,
        [
            {"name": "registry", "kind": "registry", "path": registry},
            {"name": "csv", "kind": "registry", "path": csv_source, "column": "domain"},
            {"name": "db", "kind": "harvest_db"},
            {"name": "curators", "kind": "selections"},
            {"name": "urls", "kind": "url_list", "path": urls},
        ],
        settings=preload_settings,
        engine=db_engine,
    )
    assert again["sources"] == result["sources"]
    with db_engine.connect() as conn:
        assert conn.execute(
            sa.text("SELECT count(*) FROM domain_origins WHERE run_id = :r"), {"r": run_id}
        ).scalar() == len(origins)


def test_a_big_file_with_garbage_imports_every_valid_line(
    db_engine: sa.Engine, preload_settings, run_id: str, tmp_path: Path
) -> None:
    path = tmp_path / "big.txt"
    garbage = ["", "!!!", "1.2.3.4", "*.x.fr", "x" * 300, "\x00\xff", "nosuffix"]
    lines = []
    bad = 0
    for i in range(30_000):
        if i % 10 == 3:
            text = garbage[i % len(garbage)]
            bad += bool(text)
            lines.append(text)
        else:
            lines.append(f"Site{i}.FR")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogateescape")
    preload_settings.data["preload"]["chunk_size"] = 10_000
    result = collect_sources(
        run_id,
        [{"name": "big", "kind": "registry", "path": str(path)}],
        settings=preload_settings,
        engine=db_engine,
    )
    stat = result["sources"][0]
    assert stat["valid"] == 27_000 == stat["unique"] == result["unique_domains"]
    assert stat["rejected"] == bad == result["rejected"]
    assert len(result["chunks"]) == 3


def test_a_missing_csv_column_is_a_clear_error(
    db_engine: sa.Engine, preload_settings, run_id: str, tmp_path: Path
) -> None:
    path = _write(tmp_path / "r.csv", "name,owner\nexample.fr,x\n")
    with pytest.raises(SourceError, match="no column 'domain'"):
        collect_sources(
            run_id,
            [{"name": "r", "kind": "registry", "path": path, "column": "domain"}],
            settings=preload_settings,
            engine=db_engine,
        )
