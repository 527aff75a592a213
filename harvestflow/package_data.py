"""Files shipped with the code: SQL migrations, default settings, templates, DAGs, web assets.

Why one helper: the same code runs from a checkout (``./run``, the tests, an editable install)
and from a wheel installed into a virtualenv, where nothing of the source tree exists. Every
reviewed file the code reads is package data of a package (``sql``, ``config``, ``dags``,
``plugins`` are packages for that reason) and is found through :mod:`importlib.resources`, never
relative to the source tree. Data that belongs to a deployment (the data directory, Airflow's
home, the replay virtualenv) is not package data: see :func:`harvestflow.settings.base_dir`.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from harvestflow.errors import HarvestflowError


class PackageDataError(HarvestflowError, RuntimeError):
    """A shipped file that cannot be reached as a file on disk, with what and where."""


def data_path(package: str, *parts: str) -> Path:
    """The file or folder ``parts`` inside ``package``, as a path on disk.

    Paths, not :class:`importlib.resources.abc.Traversable`, because Airflow (dags folder),
    PostgreSQL migrations and subprocesses need real files; a wheel installed by pip is always
    unpacked, so the package's resources are files. A package imported from a zip archive is
    refused by name rather than giving a path that does not exist.
    """
    try:
        root = resources.files(package)
    except ModuleNotFoundError as exc:
        # an editable install made before sql/config/dags/plugins became packages maps only
        # the packages it knew: say how to fix it rather than fail somewhere later
        raise PackageDataError(
            f"package {package!r} not found: the harvestflow install predates it;"
            " run `pip install -e .` (or `./run`, which does) in the checkout"
        ) from exc
    if not isinstance(root, Path):
        raise PackageDataError(
            f"package {package!r} is not installed as files on disk ({root!r}):"
            " install harvestflow unpacked (pip install), not from a zip archive"
        )
    return root.joinpath(*parts)
