"""Merges give what ``LC_ALL=C sort -m -u`` gives, check byte order, and are idempotent."""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

import pytest

from indexing.merge import UnsortedIndexError, check_sorted, merge_sorted


def _sorted_file(path: Path, lines: list[bytes]) -> Path:
    # byte order of the lines without their newline, as LC_ALL=C sort(1) orders them
    path.write_bytes(b"".join(sorted(set(lines), key=lambda s: s.removesuffix(b"\n"))))
    return path


def _random_lines(rnd: random.Random, n: int) -> list[bytes]:
    alphabet = "abcXYZ,)/?=&- 0189éß\t"
    return [
        ("".join(rnd.choice(alphabet) for _ in range(rnd.randint(1, 30))) + "\n").encode()
        for _ in range(n)
    ]


@pytest.mark.parametrize("engine", ["sort", "python"])
def test_merge_equals_c_locale_sort_merge(tmp_path: Path, engine: str):
    rnd = random.Random(5)
    shared = _random_lines(rnd, 50)
    inputs = [
        _sorted_file(tmp_path / f"in{i}.cdx", _random_lines(rnd, 400) + shared) for i in range(7)
    ]
    out = merge_sorted(inputs, tmp_path / "out.cdx", engine=engine, count_duplicates=True)
    env = {**os.environ, "LC_ALL": "C"}
    expected = subprocess.run(
        ["sort", "-m", "-u", *map(str, inputs)], env=env, capture_output=True, check=True
    ).stdout
    assert (tmp_path / "out.cdx").read_bytes() == expected
    assert out.lines == expected.count(b"\n")
    total_in = sum(p.read_bytes().count(b"\n") for p in inputs)
    assert out.duplicates == total_in - out.lines >= 6 * len(set(shared))
    assert check_sorted(tmp_path / "out.cdx") == out.lines


def test_merging_the_same_file_twice_adds_nothing(tmp_path: Path):
    a = _sorted_file(tmp_path / "a", [b"b\n", b"a\n", b"c\n"])
    merge_sorted([a, a, a], tmp_path / "m")
    assert (tmp_path / "m").read_bytes() == b"a\nb\nc\n"


@pytest.mark.parametrize("engine", ["sort", "python"])
def test_unsorted_input_is_refused_and_named(tmp_path: Path, engine: str):
    good = _sorted_file(tmp_path / "good", [b"a\n", b"c\n"])
    bad = tmp_path / "bad"
    bad.write_bytes(b"b\na\n")
    with pytest.raises(UnsortedIndexError, match="bad: line 2"):
        merge_sorted([good, bad], tmp_path / "out", engine=engine)
    assert not (tmp_path / "out").exists()
    assert not list(tmp_path.glob(".out*"))


def test_byte_order_not_locale_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("LC_ALL", "en_US.UTF-8")  # ignored: merges always run in the C locale
    # in a UTF-8 locale "B" and "a" collate the other way round; byte order puts "B" first
    a = _sorted_file(tmp_path / "a", [b"a\n"])
    b = _sorted_file(tmp_path / "b", [b"B\n", b"\xc3\xa9\n"])
    merge_sorted([a, b], tmp_path / "m")
    assert (tmp_path / "m").read_bytes() == b"B\na\n\xc3\xa9\n"
