"""``pip install`` of the wheel, not editable, with the dependencies it declares and nothing
else, gives a working ``harvestflow``.

The wheel is built once per session from a copy of the checkout (``pip wheel --no-deps``, the
build backend from the package index like any pip build) and installed into an empty virtualenv
with its declared dependencies, so a module the platform imports but does not declare fails here
(tests/platform/test_declared_dependencies.py names it without installing anything). The
dependencies come from a wheelhouse under the user's cache folder (``wheelhouse()``), filled from
the package index the first time and whenever the declared list asks for something it lacks, and
installed from it alone (``--no-index``): a warm cache installs without the network in about half
a minute. Versions are held to the ones of the development environment the suite ran with
(``-c``): the install is the tested set, and pip does not backtrack through Airflow's releases.
Every command runs without ``PYTHONPATH``, from a folder outside the source tree, and the second
test shows the modules and the data files come from the virtualenv's site-packages.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from packaging.requirements import Requirement

from app.demo.samplesite import start
from harvestflow.settings import Settings
from tests.support.environment import data_root

logger = logging.getLogger(__name__)

SRC = Path(__file__).resolve().parents[2]
# not needed to build the wheel: runtime state, virtualenvs, caches, tests, benchmarks
SKIP_TOP = {
    ".git",
    ".venv",
    ".oracle-venv",
    ".replay-venv",
    "var",
    "build",
    "dist",
    "tests",
    "bench",
    "docs",
}
SKIP_ANY = shutil.ignore_patterns(
    "__pycache__", "*.egg-info", "*.so", ".mypy_cache", ".ruff_cache", ".pytest_cache"
)
# shipped files: (package, pattern) as found in the checkout, each must be in the wheel
DATA = [
    ("sql", "*.sql"),
    ("config", "**/*.toml"),
    ("config", "**/*.txt"),
    ("dags", "*.py"),
    ("dags", ".airflowignore"),
    ("plugins", "*.py"),
    ("access", "*.html"),
    ("access", "*.sh"),
    ("app/curator", "templates/*"),
    ("search", "templates/*"),
    ("app/demo/samplesite", "sites/**/*.*"),
]


@dataclass
class Installed:
    wheel: Path
    venv: Path
    site_packages: Path
    workdir: Path  # outside the source tree: the cwd of every command

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def harvestflow(self) -> Path:
        return self.venv / "bin" / "harvestflow"

    def env(self, **extra: str) -> dict[str, str]:
        """os.environ (the session's HARVESTFLOW_* settings) without any path to the checkout,
        and with bytecode written as a user's install does: the install skips compiling
        (``--no-compile``), so the first command compiles what it imports and the later ones
        reuse it; under the session's PYTHONDONTWRITEBYTECODE each command compiled Airflow's,
        Scrapy's and SQLAlchemy's modules from source again (~6 CPU-s a command)."""
        dropped = {"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV"}
        dropped.add("PYTHONDONTWRITEBYTECODE")
        env = {k: v for k, v in os.environ.items() if k not in dropped}
        env["PATH"] = f"{self.venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env["XDG_DATA_HOME"] = str(self.workdir / "xdg")
        env.update(extra)
        return env

    def run(
        self, *args: str, env: dict[str, str] | None = None, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(args),
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=self.workdir,
            env=env or self.env(),
        )


def _ignore(directory: str, names: list[str]) -> set[str]:
    skipped = set(SKIP_ANY(directory, names))
    if Path(directory) == SRC:
        skipped |= SKIP_TOP & set(names)
    return skipped


def wheelhouse() -> Path:
    """The wheels of the declared dependencies, kept between sessions (CI may cache the folder:
    ``$XDG_CACHE_HOME``, else ``~/.cache``)."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "harvestflow" / "test-wheelhouse"


@contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """One session at a time fills and reads the wheelhouse (two sessions may run side by side)."""
    import fcntl

    folder.mkdir(parents=True, exist_ok=True)
    with (folder / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def declared_requirements(wheel: Path) -> list[str]:
    """The wheel's own Requires-Dist, without the extras' (``dev``): what ``pip install`` of the
    wheel installs."""
    with zipfile.ZipFile(wheel) as zf:
        (name,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = zf.read(name).decode()
    reqs = [
        ln.split(":", 1)[1].strip()
        for ln in metadata.splitlines()
        if ln.startswith("Requires-Dist:")
    ]
    return [r for r in reqs if Requirement(r).marker is None]


def versions_tested() -> list[str]:
    """``name==version`` of every distribution of this environment but harvestflow itself."""
    import importlib.metadata as md

    pins = {
        f"{d.metadata['Name']}=={d.version}"
        for d in md.distributions()
        if d.metadata["Name"] and d.metadata["Name"].lower() != "harvestflow"
    }
    return sorted(pins)


def _pip(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pip", *args],
        capture_output=True,
        text=True,
        timeout=1500,
        cwd=cwd,
        env=env,
    )


def install_with_dependencies(wheel: Path, venv: Path, base: Path, env: dict[str, str]) -> None:
    """The wheel and its declared dependencies into ``venv``, from the wheelhouse alone; the
    wheelhouse is filled from the package index first when it lacks a wheel."""
    reqs, constraints = base / "requirements.txt", base / "constraints.txt"
    reqs.write_text("".join(f"{r}\n" for r in declared_requirements(wheel)))
    constraints.write_text("".join(f"{c}\n" for c in versions_tested()))
    house = wheelhouse()
    # no byte-compiling: Airflow's thousands of modules take a minute more; the commands'
    # imports compile, once (Installed.env)
    install = ("install", "-q", "--no-compile", "--no-index", "--find-links", str(house))
    python = ("--python", str(venv / "bin" / "python"))
    target = ("-c", str(constraints), str(wheel))
    with _locked(house):
        done = _pip(*python, *install, *target, cwd=base, env=env)
        if done.returncode != 0:
            fill = _pip(
                *("wheel", "-q", "-w", str(house), "--find-links", str(house)),
                *("-c", str(constraints), "-r", str(reqs)),
                cwd=base,
                env=env,
            )
            assert fill.returncode == 0, fill.stdout[-3000:] + fill.stderr[-3000:]
            done = _pip(*python, *install, *target, cwd=base, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    shutil.copytree(SRC, src, ignore=_ignore, symlinks=True)
    dist = base / "dist"
    # nothing of the checkout on the build's or the install's path either
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    build = _pip("wheel", "--no-deps", "-q", "-w", str(dist), str(src), cwd=base, env=clean)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    (wheel,) = dist.glob("harvestflow-*.whl")

    # the virtualenv (about 1 GB, 30,000 files, written once and removed with the session) in
    # RAM when there is room, as the session's services (tests.support.environment.data_root):
    # on a disk, its unpacking and its removal cost system CPU (the file system's journal and
    # block I/O) and wait behind other jobs' writes
    ram = Path(tempfile.mkdtemp(prefix="hf-wheel-venv-", dir=data_root()))
    try:
        yield _install(wheel, ram / "venv", base, clean)
    finally:
        shutil.rmtree(ram, ignore_errors=True)  # not under pytest's tmp dirs: never kept


def _install(wheel: Path, venv: Path, base: Path, env: dict[str, str]) -> Installed:
    """``wheel`` installed with its dependencies into a new virtualenv ``venv``."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    started = time.monotonic()
    install_with_dependencies(wheel, venv, base, env)
    logger.info("wheel and its dependencies installed in %.0f s", time.monotonic() - started)
    site = Path(
        subprocess.check_output(
            [
                str(venv / "bin" / "python"),
                "-c",
                "import sysconfig; print(sysconfig.get_paths()['purelib'])",
            ],
            text=True,
        ).strip()
    )
    workdir = base / "elsewhere"
    workdir.mkdir()
    return Installed(wheel=wheel, venv=venv, site_packages=site, workdir=workdir)


def test_the_wheel_ships_every_data_file_and_the_built_c_extension(installed: Installed) -> None:
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    missing = []
    for package, pattern in DATA:
        found = [
            p for p in (SRC / package).glob(pattern) if p.is_file() and "__pycache__" not in p.parts
        ]
        assert found, f"nothing in {package}/{pattern} of the checkout"
        missing += [str(p.relative_to(SRC)) for p in found if str(p.relative_to(SRC)) not in names]
    assert missing == []
    for ext in ("qa/_crawlscan.", "indexing/_gzmember."):
        assert [n for n in names if n.startswith(ext) and n.endswith(".so")], ext


PROBE = """
import json, sys
import harvestflow, sql, config, dags, plugins, crawler, qa._crawlscan, indexing._gzmember
import crawler.rendering.cdp, crawler.inflate, websockets, brotli, scrapy, airflow.sdk
from harvestflow import db, settings
from app.runtime.airflow_config import airflow_env
from app.curator import webapp
from access.config import AccessConfig
from access.service import SETUP_SCRIPT
from crawler.scope import global_traps_file
from harvest.templates import TEMPLATES_DIR
s = settings.get_settings()
env = airflow_env(s)
found = {
    "modules": [m.__file__ for m in (harvestflow, sql, config, dags, plugins, crawler, qa._crawlscan,
                                     indexing._gzmember, websockets, brotli, scrapy, airflow.sdk)],
    "data": [str(p) for p in (db.SQL_DIR, settings.DEFAULT_CONFIG, global_traps_file(),
             TEMPLATES_DIR, webapp.HERE, SETUP_SCRIPT, env["AIRFLOW__CORE__DAGS_FOLDER"],
             env["AIRFLOW__CORE__PLUGINS_FOLDER"])],
    "migrations": [m.version for m in db.discover_migrations()],
    "data_dir": str(s.data_dir),
    "replay_venv": str(AccessConfig.from_settings(s).venv),
    "editable_finder": [m for m in sys.modules if m.startswith("__editable__")],
    "sys_path": list(sys.path),  # before the DagBag adds its folders
}
# then Airflow's DagBag over the dags folder the installed package points Airflow at
from airflow.dag_processing.dagbag import BundleDagBag
folder = env["AIRFLOW__CORE__DAGS_FOLDER"]
bag = BundleDagBag(dag_folder=folder, bundle_path=folder, safe_mode=True)
found["dagbag"] = {"folder": folder, "errors": {str(k): v for k, v in bag.import_errors.items()},
                   "dags": sorted(bag.dag_ids)}
print(json.dumps(found))
"""


@pytest.fixture(scope="module")
def probed(installed: Installed) -> dict[str, Any]:
    """What the installed package's interpreter finds: PROBE's modules, data and paths, then
    the DagBag it parses. One interpreter for both tests (Airflow's import and the compiling of
    what the probe imports paid once, ~5 CPU-s), without the session's data directory (its
    default must be the user's) and with an Airflow home of its own (not the user's)."""
    env = installed.env(AIRFLOW_HOME=str(installed.workdir / "airflow-home"))
    env.pop("HARVESTFLOW_DATA_DIR", None)
    proc = installed.run(str(installed.python), "-c", PROBE, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_the_installed_package_runs_from_site_packages_not_the_checkout(
    installed: Installed, probed: dict[str, Any]
) -> None:
    found = probed
    site = str(installed.site_packages)
    for path in found["modules"] + found["data"]:
        assert path.startswith(site + os.sep), f"{path} is not the installed package's"
        assert Path(path).exists(), path
    # the only folder on sys.path holding harvestflow's packages is the virtualenv's
    for top in ("harvestflow", "crawler", "sql", "config"):
        on_path = [Path(p) if p else installed.workdir for p in found["sys_path"]]
        holding = [str(p) for p in on_path if (p / top / "__init__.py").exists()]
        assert holding == [site], top
    assert found["editable_finder"] == []
    # nothing of the checkout nor of the development environment is on sys.path
    dev = {sys.prefix, str(SRC)}
    assert [p for p in found["sys_path"] if any(p.startswith(d) for d in dev)] == []
    assert found["migrations"] == sorted(p.name[:3] for p in (SRC / "sql").glob("*.sql"))
    # deployment data is never put into site-packages: relative paths go under XDG_DATA_HOME
    xdg = installed.workdir / "xdg" / "harvestflow"
    assert found["data_dir"] == str(xdg / "var")
    assert found["replay_venv"] == str(xdg / ".replay-venv")

    helped = installed.run(str(installed.harvestflow), "--help")
    assert helped.returncode == 0, helped.stderr[-3000:]
    for command in ("services", "db", "crawl", "index", "qa", "access"):
        assert command in helped.stdout


def test_the_installed_dags_folder_parses_in_airflow(
    installed: Installed, probed: dict[str, Any]
) -> None:
    """Airflow's DagBag over the dags folder the installed package points Airflow at."""
    found = probed["dagbag"]
    assert found["folder"].startswith(str(installed.site_packages))
    assert found["errors"] == {}
    expected = {p.stem for p in (SRC / "dags").glob("*.py")}
    expected -= {"__init__", "hf_common", "hf_selective", "hf_harvest_tasks"}
    assert set(found["dags"]) >= expected


def test_installed_cli_migrates_a_fresh_database(installed: Installed, services: Settings) -> None:
    name = f"wheel_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(
        f"{services.postgres_server_url}/postgres", isolation_level="AUTOCOMMIT"
    )
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        proc = installed.run(
            str(installed.harvestflow),
            "db",
            "migrate",
            env=installed.env(HARVESTFLOW_POSTGRES__HARVEST_DB=name),
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        expected = sorted(p.name[:3] for p in (SRC / "sql").glob("*.sql"))
        assert proc.stdout.strip() == "applied: " + ", ".join(expected)
        engine = sa.create_engine(f"{services.postgres_server_url}/{name}")
        with engine.connect() as conn:
            rows = conn.execute(sa.text("SELECT version, filename FROM schema_versions"))
            applied = {r.version: r.filename for r in rows}
            # the schema is there: a table of the first migration and one of the last
            assert sa.inspect(conn).has_table("jobs") and sa.inspect(conn).has_table("job_actions")
        engine.dispose()
        assert sorted(applied) == expected
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def test_installed_cli_crawls_a_loopback_site(installed: Installed) -> None:
    from warcio.archiveiterator import ArchiveIterator

    site = start()
    try:
        seed = site.url("www.example-a.test", "/")
        out = installed.workdir / "crawl"
        proc = installed.run(
            str(installed.harvestflow),
            "crawl",
            "--seed",
            seed,
            "--out",
            str(out),
            "--template",
            "host_only",
            "--max-hops",
            "1",
            "--no-politeness",
            "--render",
            "none",
            "--resolve",
            f"www.example-a.test:{site.host}",
            "--resolve",
            f"static.example-a.test:{site.host}",
        )
    finally:
        site.stop()
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "complete"
    # the template comes from the installed config package
    frozen = json.loads((out / "job.json").read_text())
    assert frozen["template"]["name"] == "host_only" and frozen["template"]["scope"] == "host"
    lines = [ln.split() for ln in (out / "logs" / "crawl.log").read_text().splitlines()]
    assert [f[1] for f in lines if f[3] == seed] == ["200"]
    section = site.url("www.example-a.test", "/section/")
    assert [f[1] for f in lines if f[3] == section] == ["200"]
    warcs = sorted(p for p in (out / "warcs").glob("*.warc.gz") if "metadata" not in p.name)
    assert warcs
    targets = set()
    for warc in warcs:
        with warc.open("rb") as fh:
            targets |= {
                r.rec_headers.get_header("WARC-Target-URI")
                for r in ArchiveIterator(fh)
                if r.rec_type == "response"
            }
    assert seed in targets


def test_a_package_the_install_does_not_know_is_named_with_the_fix() -> None:
    """An editable install older than the data packages maps none of them: say what to run."""
    from harvestflow.package_data import PackageDataError, data_path

    with pytest.raises(PackageDataError, match=r"'hf_no_such_data'.*pip install -e \."):
        data_path("hf_no_such_data", "x.toml")
