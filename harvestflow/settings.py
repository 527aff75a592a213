"""Settings: one TOML file with every default, overridable by environment variables.

Why: the same code runs embedded on one laptop and in production against external PostgreSQL
and S3; the only thing that changes is settings. ``HARVESTFLOW_<SECTION>__<KEY>`` overrides a key
(values are parsed as TOML scalars, so ``15433`` is an int and ``true`` a bool),
``HARVESTFLOW_DATA_DIR`` the data directory and ``HARVESTFLOW_CONFIG`` the file itself. The
default file ships in the ``config`` package (read through :mod:`importlib.resources`); a relative
path in it is relative to :func:`base_dir`, never to where the code is installed.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from harvestflow.errors import HarvestflowError
from harvestflow.package_data import data_path

# The folder above the packages: the checkout when run from one (./run, the tests, an editable
# install), site-packages when installed from a wheel. Shipped files are found with
# harvestflow.package_data.data_path, deployment data below base_dir(): never through this.
PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CONFIG = data_path("config", "harvestflow.toml")
ENV_PREFIX = "HARVESTFLOW_"
# [airflow] executor values and the Airflow executor each one runs
EXECUTORS = {"local": "LocalExecutor", "celery": "CeleryExecutor"}


class SettingsError(HarvestflowError, ValueError):
    """A settings file or override that cannot be used, with what and where."""


def source_checkout() -> Path | None:
    """The checkout the packages are imported from, or None when they are installed."""
    return PROJECT_ROOT if (PROJECT_ROOT / "pyproject.toml").is_file() else None


def base_dir(environ: dict[str, str] | None = None) -> Path:
    """What a relative path of the settings (``[paths] data_dir``, ``[access] venv``) is under.

    Why two answers: from a checkout, the deployment's data lives beside the code (``var/``,
    ``.replay-venv``: what ``./run`` sets up and the manual shows); installed from a wheel, the
    code is in site-packages, which is no place for a database, so the base is
    ``$XDG_DATA_HOME/harvestflow`` (default ``~/.local/share/harvestflow``). A deployment sets
    ``HARVESTFLOW_DATA_DIR`` or an absolute ``data_dir`` and never depends on either.
    """
    checkout = source_checkout()
    if checkout is not None:
        return checkout
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(xdg) / "harvestflow"


def _parse_scalar(raw: str) -> Any:
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def _apply_env(data: dict[str, Any], environ: dict[str, str]) -> None:
    for name, raw in environ.items():
        if not name.startswith(ENV_PREFIX) or "__" not in name:
            continue
        section, _, key = name[len(ENV_PREFIX) :].partition("__")
        section, key = section.lower(), key.lower()
        if section not in data:
            raise SettingsError(f"{name}: unknown settings section [{section}]")
        data[section][key] = _parse_scalar(raw)


@dataclass(frozen=True)
class S3Settings:
    """Where the object store is and how to reach it."""

    endpoint_url: str
    access_key: str
    secret_key: str
    region: str
    bucket: str


class Settings:
    """Loaded settings; sections are dicts, common derived values are properties."""

    def __init__(self, data: dict[str, Any], source: Path) -> None:
        self.data = data
        self.source = source

    def __getitem__(self, section: str) -> dict[str, Any]:
        return self.data[section]

    def get(self, section: str, key: str, default: Any = None) -> Any:
        return self.data.get(section, {}).get(key, default)

    @cached_property
    def data_dir(self) -> Path:
        raw = os.environ.get(ENV_PREFIX + "DATA_DIR") or self.data["paths"]["data_dir"]
        path = Path(raw)
        if not path.is_absolute():
            path = base_dir() / path
        return path.resolve()

    def path(self, *parts: str) -> Path:
        """A path below the data directory."""
        return self.data_dir.joinpath(*parts)

    # --- PostgreSQL ---------------------------------------------------------------------------
    @property
    def postgres_embedded(self) -> bool:
        return not self.data["postgres"].get("url")

    @property
    def postgres_server_url(self) -> str:
        """Server URL without a database name."""
        pg = self.data["postgres"]
        if pg.get("url"):
            return str(pg["url"]).rstrip("/")
        return f"postgresql+psycopg2://{pg['user']}@{pg['host']}:{pg['port']}"

    @property
    def harvest_db_url(self) -> str:
        return f"{self.postgres_server_url}/{self.data['postgres']['harvest_db']}"

    @property
    def airflow_db_url(self) -> str:
        return f"{self.postgres_server_url}/{self.data['postgres']['airflow_db']}"

    # --- S3 -----------------------------------------------------------------------------------
    @property
    def s3_embedded(self) -> bool:
        return not self.data["s3"].get("endpoint_url")

    @property
    def s3(self) -> S3Settings:
        s3 = self.data["s3"]
        endpoint = s3.get("endpoint_url") or f"http://{s3['host']}:{s3['s3_port']}"
        return S3Settings(
            endpoint_url=endpoint,
            access_key=s3["access_key"],
            secret_key=s3["secret_key"],
            region=s3["region"],
            bucket=s3["bucket"],
        )

    # --- Airflow ------------------------------------------------------------------------------
    @property
    def airflow_home(self) -> Path:
        return self.path(self.data["airflow"]["home_subdir"])

    @property
    def crawl_pools(self) -> tuple[str, str]:
        """(high, low) priority pool names of the crawl tasks, each also its Celery queue."""
        af = self.data["airflow"]
        return str(af["high_priority_pool"]), str(af["low_priority_pool"])

    @property
    def continuous_pool(self) -> tuple[str, int]:
        """(name, slots) of the continuous crawl's own pool, also its Celery queue.

        Why its own: its runs follow each other all day; on the high-priority pool they would
        keep one of the selective harvests' slots nearly all the time."""
        af = self.data["airflow"]
        return str(af.get("continuous_pool", "crawl_continuous")), int(
            af.get("continuous_slots", 1)
        )

    @property
    def executor(self) -> str:
        """ "local" or "celery" ([airflow] executor); anything else is refused with its name."""
        value = str(self.data["airflow"].get("executor", "local")).strip().lower()
        if value not in EXECUTORS:
            raise SettingsError(
                f"{self.source}: [airflow] executor = {value!r}: expected one of {sorted(EXECUTORS)}"
            )
        return value

    @property
    def triggerer(self) -> bool:
        """Whether ``up`` runs Airflow's triggerer ([airflow] triggerer, a TOML bool): only a
        deferred task needs it (app.runtime.airflow_runtime.components says why it is off)."""
        value = self.data["airflow"].get("triggerer", False)
        if not isinstance(value, bool):
            raise SettingsError(
                f"{self.source}: [airflow] triggerer = {value!r}: expected true or false"
            )
        return value

    # --- Celery broker ------------------------------------------------------------------------
    @property
    def broker_embedded(self) -> bool:
        return not self.data.get("broker", {}).get("url")

    @property
    def broker_url(self) -> str:
        broker = self.data.get("broker", {})
        if broker.get("url"):
            return str(broker["url"])
        return f"redis://{broker.get('host', '127.0.0.1')}:{int(broker.get('port', 16379))}/0"


def load(config_path: Path | None = None, environ: dict[str, str] | None = None) -> Settings:
    """Read the settings file and apply environment overrides."""
    env = dict(os.environ if environ is None else environ)
    path = Path(config_path or env.get(ENV_PREFIX + "CONFIG") or DEFAULT_CONFIG)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise SettingsError(f"settings file not found: {path}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path}: invalid TOML: {exc}") from exc
    _apply_env(data, env)
    return Settings(data, path)


_cached: Settings | None = None


def get_settings() -> Settings:
    """Process-wide settings (loaded once); tests reset with :func:`reset`."""
    global _cached
    if _cached is None:
        _cached = load()
    return _cached


def reset() -> None:
    global _cached
    _cached = None
