"""``pip install`` of the wheel, not editable, gives a working ``harvestflow``.

The wheel is built once per session from a copy of the checkout (``pip wheel --no-deps``, the
build backend from the package index like any pip build) and installed with ``--no-deps`` into
a fresh virtualenv. That virtualenv gets the dependencies from this interpreter's site-packages
through a ``.pth`` line: the site-packages of a ``.pth`` line is added to ``sys.path`` but its own
``.pth`` files are not run, so the editable install of the checkout stays inactive. Every command
runs without ``PYTHONPATH``, from a folder outside the source tree, and the first test shows the
modules and the data files come from the virtualenv's site-packages.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import uuid
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import sqlalchemy as sa

from harvestflow.samplesite import start
from harvestflow.settings import Settings

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
    ("harvestflow/curator", "templates/*"),
    ("search", "templates/*"),
    ("harvestflow/samplesite", "sites/**/*.*"),
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
        """os.environ (the session's HARVESTFLOW_* settings) without any path to the checkout."""
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV")
        }
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


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    shutil.copytree(SRC, src, ignore=_ignore, symlinks=True)
    dist = base / "dist"
    # nothing of the checkout on the build's or the install's path either
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(src)],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=base,
        env=clean,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    (wheel,) = dist.glob("harvestflow-*.whl")

    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    install = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(venv / "bin" / "python"),
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=base,
        env=clean,
    )
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
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
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "_harvestflow_test_deps.pth").write_text("".join(f"{p}\n" for p in sorted(deps)))
    workdir = base / "elsewhere"
    workdir.mkdir()
    yield Installed(wheel=wheel, venv=venv, site_packages=site, workdir=workdir)


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
    assert [n for n in names if n.startswith("qa/_crawlscan.") and n.endswith(".so")]


PROBE = """
import json, sys
import harvestflow, sql, config, dags, plugins, crawler, qa._crawlscan
from harvestflow import db, settings
from harvestflow.airflow_runtime import airflow_env
from harvestflow.curator import webapp
from access.config import AccessConfig
from access.service import SETUP_SCRIPT
from crawler.scope import global_traps_file
from harvest.templates import TEMPLATES_DIR
s = settings.get_settings()
env = airflow_env(s)
print(json.dumps({
    "modules": [m.__file__ for m in (harvestflow, sql, config, dags, plugins, crawler, qa._crawlscan)],
    "data": [str(p) for p in (db.SQL_DIR, settings.DEFAULT_CONFIG, global_traps_file(),
             TEMPLATES_DIR, webapp.HERE, SETUP_SCRIPT, env["AIRFLOW__CORE__DAGS_FOLDER"],
             env["AIRFLOW__CORE__PLUGINS_FOLDER"])],
    "migrations": [m.version for m in db.discover_migrations()],
    "data_dir": str(s.data_dir),
    "replay_venv": str(AccessConfig.from_settings(s).venv),
    "editable_finder": [m for m in sys.modules if m.startswith("__editable__")],
    "sys_path": sys.path,
}))
"""


def test_the_installed_package_runs_from_site_packages_not_the_checkout(
    installed: Installed,
) -> None:
    env = installed.env()
    env.pop("HARVESTFLOW_DATA_DIR", None)
    proc = installed.run(str(installed.python), "-c", PROBE, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(proc.stdout)
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
    assert found["migrations"] == sorted(p.name[:3] for p in (SRC / "sql").glob("*.sql"))
    # deployment data is never put into site-packages: relative paths go under XDG_DATA_HOME
    xdg = installed.workdir / "xdg" / "harvestflow"
    assert found["data_dir"] == str(xdg / "var")
    assert found["replay_venv"] == str(xdg / ".replay-venv")

    helped = installed.run(str(installed.harvestflow), "--help")
    assert helped.returncode == 0, helped.stderr[-3000:]
    for command in ("services", "db", "crawl", "index", "qa", "access"):
        assert command in helped.stdout


def test_the_installed_dags_folder_parses_in_airflow(installed: Installed) -> None:
    """Airflow's DagBag over the dags folder the installed package points Airflow at."""
    probe = """
import json, os
from harvestflow.airflow_runtime import airflow_env
from harvestflow.settings import get_settings
folder = airflow_env(get_settings())["AIRFLOW__CORE__DAGS_FOLDER"]
from airflow.dag_processing.dagbag import BundleDagBag
bag = BundleDagBag(dag_folder=folder, bundle_path=folder, safe_mode=True)
print(json.dumps({"folder": folder, "errors": {str(k): v for k, v in bag.import_errors.items()},
                  "dags": sorted(bag.dag_ids)}))
"""
    env = installed.env(AIRFLOW_HOME=str(installed.workdir / "airflow-home"))
    proc = installed.run(str(installed.python), "-c", probe, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    assert found["folder"].startswith(str(installed.site_packages))
    assert found["errors"] == {}
    expected = {p.stem for p in (SRC / "dags").glob("*.py")}
    expected -= {"__init__", "hf_common", "selective_harvest_common", "harvest_tasks"}
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
