"""Replay in tests: pywb's environment, a flat pywb over CDX files, HTTP gets and CDX queries."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path

import pytest
import sqlalchemy as sa

from harvestflow import settings as settings_mod
from harvestflow.settings import PROJECT_ROOT
from indexing.cdx import index_warc
from indexing.layout import Layout
from tests.support.environment import free_port

ORACLE_WAYBACK = PROJECT_ROOT / ".oracle-venv" / "bin" / "wayback"


FIELDS = "urlkey,timestamp,url,mime,status,digest,length,offset,filename"


def replay_env(mp: pytest.MonkeyPatch, data_dir: Path) -> None:
    """The environment of a replay service of its own: ``data_dir``, free loopback ports."""
    mp.setenv("HARVESTFLOW_DATA_DIR", str(data_dir))
    mp.setenv("HARVESTFLOW_INDEXING__MIN_FREE_BYTES", "0")
    mp.setenv("HARVESTFLOW_ACCESS__URL", f"http://127.0.0.1:{free_port()}/")
    mp.setenv("HARVESTFLOW_ACCESS__RESOLVER_PORT", str(free_port()))
    mp.setenv("HARVESTFLOW_ACCESS__PYWB_PORT", str(free_port()))
    mp.setenv("HARVESTFLOW_ACCESS__REFRESH_INTERVAL_S", "1")


def get(url: str, timeout: float = 30) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
    except OSError:  # not listening (yet)
        return 0, b""


def cdx(base: str, coll: str, url: str, match: str | None = "exact") -> list[dict]:
    """pywb's CDX server API answer (capture fields only, not pywb's ``source``); ``match``
    None: no matchType (pywb reads a trailing ``*`` of the URL as a prefix query)."""
    params = {"url": url, "output": "json", "fl": FIELDS}
    if match:
        params["matchType"] = match
    query = urllib.parse.urlencode(params)
    status, body = get(f"{base.rstrip('/')}/{coll}/cdx?{query}")
    assert status == 200, (url, match, body[:300])
    return [json.loads(line) for line in body.splitlines() if line.strip()]


@contextmanager
def flat_pywb(index: Path | dict[str, Path], workdir: Path) -> Iterator[str]:
    """pywb (the oracle venv's) serving ``index`` as a flat CDXJ file, collection ``flat``
    (or each of a ``{collection: flat CDXJ file}``)."""
    workdir.mkdir(parents=True, exist_ok=True)
    colls = index if isinstance(index, dict) else {"flat": index}
    (workdir / "config.yaml").write_text(
        "collections:\n"
        + "".join(
            f"  {name}:\n    index: {path}\n    archive_paths: {workdir}/\n"
            for name, path in colls.items()
        )
    )
    port = free_port()
    proc = subprocess.Popen(
        [str(ORACLE_WAYBACK), "-p", str(port), "-b", "127.0.0.1"],
        cwd=workdir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 60
        while get(base, timeout=2)[0] != 200:
            assert proc.poll() is None, "oracle pywb exited"
            assert time.monotonic() < deadline, "oracle pywb did not start"
            time.sleep(0.3)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def index_into_daily(warc: Path, layout: Layout, day: date, collection: str = "") -> Path:
    """What the chain's index module leaves: the file's CDXJ lines, byte-sorted, per day (the
    indexer `harvestflow index cdx` runs, called here: a command per WARC cost a second each)."""
    result = index_warc(warc)
    assert result.damage_text() is None, result.damage_text()
    lines = sorted({line.encode() for line in result.lines("cdxj", warc.name)})
    dest = layout.cdx_daily(day, collection) / (warc.name + ".cdxj")
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(b"".join(line + b"\n" for line in lines))
    return dest


def reindex_cli() -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "app.cli.main", "access", "reindex"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out)


def make_db_job(engine: sa.Engine, data_dir: Path) -> tuple[int, int, Path]:
    """A DONE job of a selective definition, with its job directory (the crawl's output)."""
    with engine.begin() as conn:
        hid = int(
            conn.execute(
                sa.text(
                    "INSERT INTO harvestdefinitions (name, kind) VALUES ('access', 'partial')"
                    " RETURNING harvest_id"
                )
            ).scalar_one()
        )
        job_id = int(
            conn.execute(
                sa.text(
                    "INSERT INTO jobs (harvest_id, harvest_num, job_index, status, channel,"
                    " template_name, template, seedlist) VALUES (:h, 1, 0, 3, 'CIBLEE',"
                    " 'default', CAST('{}' AS jsonb), 'http://www.example-a.test/')"
                    " RETURNING job_id"
                ),
                {"h": hid},
            ).scalar_one()
        )
        job_dir = data_dir / "jobs" / str(hid) / str(job_id) / "20261125120000"
        conn.execute(
            sa.text("UPDATE jobs SET job_dir = :d WHERE job_id = :j"),
            {"d": str(job_dir), "j": job_id},
        )
    return hid, job_id, job_dir


def embedded(fields: list[list[str]], page: str) -> set[str]:
    """URLs a page embeds, directly or through its stylesheets (crawl.log via/hop columns)."""
    found: set[str] = set()
    frontier = {page}
    while frontier:
        nxt = {f[3] for f in fields if f[5] in frontier and f[4].endswith("E") and f[1] == "200"}
        frontier = nxt - found
        found |= nxt
    return found


@pytest.fixture(scope="session")
def replay_venv() -> Path:
    """The replay service's virtualenv, made or brought up to date by access/setup-replay.sh
    (idempotent: nothing to do when pywb and the codings hook are current)."""
    venv = PROJECT_ROOT / ".replay-venv"
    subprocess.run(["bash", str(PROJECT_ROOT / "access" / "setup-replay.sh")], check=True)
    assert (venv / "bin" / "wayback").exists()
    return venv


@pytest.fixture
def access_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replay_venv: Path
) -> Iterator[settings_mod.Settings]:
    """Settings with a per-test data directory and the replay service on free ports."""
    replay_env(monkeypatch, tmp_path / "data")
    settings_mod.reset()
    yield settings_mod.get_settings()
    settings_mod.reset()
