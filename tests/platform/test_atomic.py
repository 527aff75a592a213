"""harvestflow.atomic: the one way files appear under their final name, and no copies of it.

The unit tests check the helper's promise (complete or absent, temporary file removed on an
error, the directory fsync'd after the rename, secrets never readable under their final name).
The tree test fails when a module renames a temporary file itself instead of calling the helper;
the few renames that are not "write a file" (moves, directories, symbolic links) are listed.
"""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from harvestflow import atomic
from tests.support.source_tree import python_files

# renames that are not the atomic write of one file, each with why the helper does not fit
ALLOWED = {
    ("harvestflow/atomic.py", "os.replace(tmp, dest)"): "the helper itself",
    (
        "crawler/partitioned_run.py",
        "os.replace(p, warc_dir / p.name)",
    ): "moves a closed WARC",
    ("indexing/files.py", "os.replace(src, dest)"): "moves a complete file between folders",
    ("preservation/staging.py", "tmp.rename(final)"): "renames a whole bag directory",
    ("qa/report.py", "report_dir.rename(old)"): "swaps a whole report directory",
    ("qa/report.py", "tmp.rename(report_dir)"): "swaps a whole report directory",
    ("access/index.py", "os.replace(tmp, link)"): "replaces a symbolic link",
}
RENAME = re.compile(
    r"os\.replace\([^)]*\)|os\.rename\([^)]*\)"
    r"|\b\w+\.(?:rename|replace)\((?:tmp|part|[a-z_]*tmp|[a-z_]+_dir|dst|dest|final|path|target)\b[^)]*\)"
)


def test_write_text_and_bytes_land_whole(tmp_path: Path) -> None:
    dest = tmp_path / "a" / "b.txt"
    atomic.atomic_write_text(dest, "one\n")
    atomic.atomic_write_text(dest, "two\n")
    assert dest.read_text() == "two\n"
    atomic.atomic_write_bytes(tmp_path / "c.bin", b"\x00\xff")
    assert (tmp_path / "c.bin").read_bytes() == b"\x00\xff"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a", "b.txt", "c.bin"]


def test_an_error_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    dest = tmp_path / "state.json"
    dest.write_text("old")
    with pytest.raises(OSError, match="disk full"), atomic.atomic_open(dest, "w") as fh:
        fh.write("half")
        raise OSError(28, "disk full")
    assert dest.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]


def test_a_process_killed_mid_write_leaves_the_old_file(tmp_path: Path) -> None:
    dest = tmp_path / "summary.json"
    dest.write_text('{"old": true}')
    code = (
        "import os, signal, sys\n"
        "from pathlib import Path\n"
        "from harvestflow.atomic import atomic_open\n"
        "with atomic_open(Path(sys.argv[1]), 'w') as fh:\n"
        "    fh.write('{\"new\": ')\n"
        "    fh.flush()\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(dest)], check=False)
    assert proc.returncode == -signal.SIGKILL
    assert dest.read_text() == '{"old": true}'
    # the half-written temporary stays hidden beside it, never under the final name
    assert [p.name.startswith(".summary.json.") for p in tmp_path.iterdir() if p != dest] == [True]


def test_the_rename_and_the_directory_are_fsynced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real_fsync(fd)

    monkeypatch.setattr(atomic.os, "fsync", fsync)
    atomic.atomic_write_text(tmp_path / "x", "x")
    assert synced == ["file", "dir"]
    synced.clear()
    atomic.atomic_write_text(tmp_path / "y", "y", durable=False)
    assert synced == []
    synced.clear()
    tmp = atomic.tmp_path(tmp_path / "z")
    tmp.write_text("z")
    atomic.commit(tmp, tmp_path / "z")
    assert synced == ["file", "dir"] and (tmp_path / "z").read_text() == "z"


def test_chmod_applies_before_the_final_name(tmp_path: Path) -> None:
    dest = atomic.atomic_write_text(tmp_path / "secret", "pw", chmod=0o600)
    assert stat.S_IMODE(dest.stat().st_mode) == 0o600


def test_place_links_or_copies_and_keeps_read_only_files(tmp_path: Path) -> None:
    src = tmp_path / "a.warc.gz"
    src.write_bytes(b"warc")
    src.chmod(0o444)  # archived files may be read-only: fsync must not need write access
    dest = atomic.place(src, tmp_path / "out" / "a.warc.gz")
    assert dest.read_bytes() == b"warc" and os.path.samefile(src, dest)
    atomic.place(src, dest)  # already there: nothing to do, no temporary left
    assert [p.name for p in dest.parent.iterdir()] == ["a.warc.gz"]


def test_no_module_renames_its_own_temporary_files() -> None:
    found = []
    for path, rel in python_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in RENAME.finditer(line):
                if (rel, match.group(0)) not in ALLOWED:
                    found.append(f"{rel}:{number}: {match.group(0)}")
    assert not found, (
        "files renamed into place by hand; use harvestflow.atomic (atomic_write_text, "
        "atomic_open, commit) or add the case to ALLOWED with why the helper does not fit:\n"
        + "\n".join(found)
    )
