"""Files that appear under their final name complete, or not at all.

Why: any process of the platform may be killed at any instruction (a worker lost, a power cut, a
full disk). A reader — the next stage, pywb, the curator pages, a restarted crawler — must never
see half a file. Every writer therefore writes a temporary name in the same directory (so the
rename is one atomic step on one file system), flushes and fsyncs it, renames it over the final
name, and fsyncs the directory so that the rename itself survives a crash.

This is the one implementation; stage code calls it rather than repeating the steps. Writers
that stream a large file under a temporary name of their own (WARCs, merged indexes) call
:func:`commit` when done. ``durable=False`` keeps the atomic rename without the fsyncs, for
status files rewritten several times a second that are worthless after a crash.
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Literal, overload

__all__ = [
    "atomic_open",
    "atomic_write_bytes",
    "atomic_write_text",
    "commit",
    "fsync_dir",
    "fsync_file",
    "place",
    "stale_tmp_paths",
    "tmp_path",
]


_TMP_TAIL = re.compile(r"\d+\.[0-9a-f]{8}\.tmp")  # after ".<name>.": tmp_path's pid, id, suffix


def tmp_path(dest: Path) -> Path:
    """A fresh hidden temporary name beside ``dest`` (unique across processes and threads)."""
    return dest.with_name(f".{dest.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")


def stale_tmp_paths(dest: Path) -> list[Path]:
    """The temporary names of ``dest`` that writers left in its directory (:func:`tmp_path`'s).

    Why: a writer killed between writing its temporary name and the rename leaves it behind,
    and the next writer takes a fresh name. Only the owner of ``dest``'s life cycle knows when
    no writer of it can still be running, and removes these then.
    """
    if not dest.parent.is_dir():
        return []
    prefix = f".{dest.name}."
    return [
        p
        for p in dest.parent.iterdir()
        if p.name.startswith(prefix) and _TMP_TAIL.fullmatch(p.name[len(prefix) :])
    ]


def fsync_dir(path: Path) -> None:
    """fsync a directory, so that a rename or a new entry in it survives a crash."""
    fsync_file(path)


def fsync_file(path: Path) -> None:
    """fsync a file already written and closed (e.g. by a subprocess or a library).

    Opened read-only: Linux fsyncs through any descriptor, and archived files may be 0444.
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def commit(tmp: Path, dest: Path, *, durable: bool = True) -> Path:
    """Rename the complete file ``tmp`` over ``dest`` (fsync'd before, directory after)."""
    if durable:
        fsync_file(tmp)
    os.replace(tmp, dest)
    if durable:
        fsync_dir(dest.parent)
    return dest


@overload
@contextmanager
def atomic_open(
    dest: Path,
    mode: Literal["w"] = ...,
    *,
    durable: bool = ...,
    encoding: str = ...,
    newline: str | None = ...,
    chmod: int | None = ...,
) -> Iterator[IO[str]]: ...


@overload
@contextmanager
def atomic_open(
    dest: Path,
    mode: Literal["wb"],
    *,
    durable: bool = ...,
    encoding: str = ...,
    newline: str | None = ...,
    chmod: int | None = ...,
) -> Iterator[IO[bytes]]: ...


@contextmanager
def atomic_open(
    dest: Path,
    mode: str = "w",
    *,
    durable: bool = True,
    encoding: str = "utf-8",
    newline: str | None = None,
    chmod: int | None = None,
) -> Iterator[IO[Any]]:
    """Open a temporary file beside ``dest``; on a clean exit it becomes ``dest``.

    On an exception the temporary file is removed (e.g. ENOSPC: a partial copy must not keep
    taking room) and ``dest`` is left as it was. ``chmod`` sets the mode before the rename, so
    a secret is never readable under its final name.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open: mode {mode!r} (only 'w' or 'wb': a new file each time)")
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = tmp_path(dest)
    try:
        text = mode == "w"
        with open(
            tmp,
            "x" if text else "xb",
            encoding=encoding if text else None,
            newline=newline if text else None,
        ) as fh:
            yield fh
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        if chmod is not None:
            os.chmod(tmp, chmod)
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if durable:
        fsync_dir(dest.parent)


def atomic_write_text(
    path: Path,
    text: str,
    *,
    durable: bool = True,
    encoding: str = "utf-8",
    chmod: int | None = None,
) -> Path:
    """Write ``text`` to ``path`` atomically (see the module docstring)."""
    with atomic_open(path, "w", durable=durable, encoding=encoding, chmod=chmod) as fh:
        fh.write(text)
    return Path(path)


def atomic_write_bytes(path: Path, data: bytes, *, durable: bool = True) -> Path:
    """Write ``data`` to ``path`` atomically (see the module docstring)."""
    with atomic_open(path, "wb", durable=durable) as fh:
        fh.write(data)
    return Path(path)


def place(src: Path, dest: Path, *, durable: bool = True) -> Path:
    """Make ``dest`` a complete copy of ``src``: a hard link when possible, else a copy.

    Why a link: WARCs are immutable and large; a link on one file system costs nothing. Both go
    through a temporary name, so ``dest`` never exists half-copied.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    if dest.exists() and os.path.samefile(src, dest):
        return dest
    tmp = tmp_path(dest)
    try:
        try:
            os.link(src, tmp)
        except OSError:
            shutil.copyfile(src, tmp)
            commit(tmp, dest, durable=durable)
        else:
            # a link shares the source's inode, whose data is on disk already: only the new
            # name needs syncing (and the step between link and rename stays as short as can be)
            os.replace(tmp, dest)
            if durable:
                fsync_dir(dest.parent)
    finally:
        # rename() between two links of one file does nothing: never leave the temporary name
        tmp.unlink(missing_ok=True)
    return dest
