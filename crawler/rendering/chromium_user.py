"""Who the crawl's Chromium runs as, and where its profiles live, so that it keeps its sandbox.

Why: Chromium refuses its sandbox as root, and ``--no-sandbox`` would leave the crawler's root
privileges one renderer bug away from any page. So a root crawler starts Chromium as the system
user ``harvestflow_chromium``, with profiles under a temporary folder that user may reach (a
digest of the job's state directory, stable across a resume).
``HARVESTFLOW_CHROMIUM_NO_SANDBOX=1`` is the escape for a kernel without user namespaces.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

from crawler import CrawlerError

log = logging.getLogger(__name__)

SANDBOX_USER = "harvestflow_chromium"
NO_SANDBOX_ENV = "HARVESTFLOW_CHROMIUM_NO_SANDBOX"


class ChromiumUserError(CrawlerError, RuntimeError):
    """The system user for Chromium could not be made (a root crawler without ``useradd``)."""


def sandbox_disabled() -> bool:
    """Whether the operator turned Chromium's sandbox off (a host without user namespaces)."""
    return os.environ.get(NO_SANDBOX_ENV, "") not in ("", "0")


@functools.cache
def browser_user() -> pwd.struct_passwd | None:
    """The user Chromium runs as when the crawler is root (None: as the crawler itself)."""
    if os.geteuid() != 0 or sandbox_disabled():
        return None
    try:
        return pwd.getpwnam(SANDBOX_USER)
    except KeyError:
        pass
    cmd = ["useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent"]
    cmd += ["--shell", "/usr/sbin/nologin", SANDBOX_USER]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=60)
    except OSError as exc:
        raise ChromiumUserError(f"cannot create system user {SANDBOX_USER!r}: {exc}") from exc
    try:  # another crawler may have made it meanwhile (useradd then exits 9)
        entry = pwd.getpwnam(SANDBOX_USER)
    except KeyError:
        raise ChromiumUserError(
            f"cannot create system user {SANDBOX_USER!r} for Chromium's sandbox:"
            f" {proc.stderr.strip() or proc.returncode}"
        ) from None
    log.info("created system user %s: Chromium runs as it (sandboxed)", SANDBOX_USER)
    return entry


def profiles_dir(state_dir: Path) -> Path:
    """Where a job's Chromium profiles are made: ``state/chromium`` unless the crawler is
    root, then a folder of the system's temporary directory the browser's user can reach."""
    if os.geteuid() != 0 or sandbox_disabled():
        return state_dir / "chromium"
    digest = hashlib.sha1(str(Path(state_dir).resolve()).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / "harvestflow-chromium" / digest


def make_profile(root: Path | None) -> Path:
    """A new, empty profile directory under ``root`` (the system's temporary directory when
    None), writable by the browser's user."""
    user = browser_user()
    if root is not None:
        root.mkdir(parents=True, exist_ok=True)
        if user is not None:  # root's folders: the browser's user may pass, not list
            root.chmod(0o711)
            if root.parent.name == "harvestflow-chromium":
                root.parent.chmod(0o711)
    profile = Path(tempfile.mkdtemp(prefix="hf-chromium-", dir=root))
    if user is not None:
        shutil.chown(profile, user.pw_uid, user.pw_gid)
    return profile
