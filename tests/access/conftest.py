"""Fixtures of the access tests: the replay virtualenv, settings with free loopback ports, CDX
API queries, and pywb from the oracle venv serving a flat CDXJ file (the reference)."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from harvestflow import settings as settings_mod
from harvestflow.settings import PROJECT_ROOT
from tests.conftest import free_port

ORACLE_WAYBACK = PROJECT_ROOT / ".oracle-venv" / "bin" / "wayback"
FIELDS = "urlkey,timestamp,url,mime,status,digest,length,offset,filename"


@pytest.fixture(scope="session")
def replay_venv() -> Path:
    """The replay service's virtualenv, made by access/setup-replay.sh if missing."""
    venv = PROJECT_ROOT / ".replay-venv"
    if not (venv / "bin" / "wayback").exists():
        subprocess.run(["bash", str(PROJECT_ROOT / "access" / "setup-replay.sh")], check=True)
    assert (venv / "bin" / "wayback").exists()
    return venv


def replay_env(mp: pytest.MonkeyPatch, data_dir: Path) -> None:
    """The environment of a replay service of its own: ``data_dir``, free loopback ports."""
    mp.setenv("HARVESTFLOW_DATA_DIR", str(data_dir))
    mp.setenv("HARVESTFLOW_INDEXING__MIN_FREE_BYTES", "0")
    mp.setenv("HARVESTFLOW_ACCESS__URL", f"http://127.0.0.1:{free_port()}/")
    mp.setenv("HARVESTFLOW_ACCESS__RESOLVER_PORT", str(free_port()))
    mp.setenv("HARVESTFLOW_ACCESS__PYWB_PORT", str(free_port()))
    mp.setenv("HARVESTFLOW_ACCESS__REFRESH_INTERVAL_S", "1")


@pytest.fixture
def access_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replay_venv: Path
) -> Iterator[settings_mod.Settings]:
    """Settings with a per-test data directory and the replay service on free ports."""
    replay_env(monkeypatch, tmp_path / "data")
    settings_mod.reset()
    yield settings_mod.get_settings()
    settings_mod.reset()


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
