"""Merges give what ``LC_ALL=C sort -m -u`` gives, check byte order, and are idempotent."""

from __future__ import annotations

import multiprocessing
import os
import random
import subprocess
import threading
import time
from datetime import date, timedelta
from pathlib import Path

import pytest

from harvestflow import settings as settings_mod
from indexing.files import Lock, single_instance
from indexing.layout import Layout
from indexing.merge import UnsortedIndexError, bigmerge, check_sorted, daily_merge, merge_sorted


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


def test_a_second_bigmerge_waits_for_the_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # bigmerge is single: two at once would each rename their own result over the big file
    monkeypatch.setenv("HARVESTFLOW_DATA_DIR", str(tmp_path / "data"))
    settings_mod.reset()
    cfg = settings_mod.get_settings()
    layout = Layout.from_settings(cfg)
    layout.cdx_merged().mkdir(parents=True)
    (layout.cdx_merged() / "2026-11-20.cdxj").write_bytes(b"a 1 {}\n")
    done = threading.Event()

    def run() -> None:
        bigmerge(cfg)
        done.set()

    with single_instance(layout.lock_dir(), Lock.BIGMERGE):
        thread = threading.Thread(target=run)
        thread.start()
        assert not done.wait(1.0), "bigmerge ran while another held the lock"
        assert not layout.big_cdx("cdxj").exists()
    thread.join(60)
    assert done.is_set() and layout.big_cdx("cdxj").read_bytes() == b"a 1 {}\n"
    settings_mod.reset()


def test_the_lock_of_a_killed_holder_is_free(tmp_path: Path):
    def hold_and_die() -> None:
        with single_instance(tmp_path, Lock.BIGMERGE):
            os._exit(0)  # like kill -9: no release

    child = multiprocessing.get_context("fork").Process(target=hold_and_die)
    child.start()
    child.join(30)
    assert child.exitcode == 0
    started = time.monotonic()
    with single_instance(tmp_path, Lock.BIGMERGE):
        assert time.monotonic() - started < 5


def test_daily_merge_remerges_an_earlier_day_that_got_files_after_its_merge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("HARVESTFLOW_DATA_DIR", str(tmp_path / "data"))
    settings_mod.reset()
    cfg = settings_mod.get_settings()
    layout = Layout.from_settings(cfg)
    day = date(2026, 11, 20)
    daily = layout.cdx_daily(day)
    daily.mkdir(parents=True)
    merged = layout.cdx_merged() / "2026-11-20.cdxj"

    def age_dir() -> None:  # as if the day's files arrived long ago
        past = time.time() - 3600
        os.utime(daily, (past, past))

    (daily / "a.warc.gz.cdxj").write_bytes(b"a 1 {}\n")
    daily_merge(day, cfg)
    assert merged.read_bytes() == b"a 1 {}\n"
    age_dir()
    assert daily_merge(day + timedelta(days=1), cfg)["caught_up"] == []  # unchanged: listed once
    assert daily_merge(day + timedelta(days=1), cfg)["caught_up"] == []  # now by the mtime alone
    (daily / "b.warc.gz.cdxj").write_bytes(b"b 2 {}\n")  # a late file
    assert daily_merge(day + timedelta(days=2), cfg)["caught_up"] == ["2026-11-20"]
    assert merged.read_bytes() == b"a 1 {}\nb 2 {}\n"
    age_dir()
    assert daily_merge(day + timedelta(days=3), cfg)["caught_up"] == []
    settings_mod.reset()
