"""Fixtures of the access tests: the replay virtualenv, settings with free loopback ports, CDX
API queries, and pywb from the oracle venv serving a flat CDXJ file (the reference)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from harvestflow import settings as settings_mod
from harvestflow.settings import PROJECT_ROOT
from tests.support.replay import replay_env


@pytest.fixture(scope="session")
def replay_venv() -> Path:
    """The replay service's virtualenv, made by access/setup-replay.sh if missing."""
    venv = PROJECT_ROOT / ".replay-venv"
    if not (venv / "bin" / "wayback").exists():
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
