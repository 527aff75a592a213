"""The polars parse of crawl.log lines into the packed table: the reference both engines share.

Why its own module: qa.crawllog_aggregate (the entry point, which picks an engine) and
qa.crawlscan (the compiled scanner, whose odd lines come back here) both build on these pieces;
kept apart, the two modules do not import each other. The field rule and the fixed layout are described in
qa.crawllog_aggregate.
"""

from __future__ import annotations

import mmap
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from qa.crawlline import parse_line_slow
from qa.crawltable import pack

MAX_BAD_LINES_KEPT = 20


@dataclass
class BadLine:
    """One unparseable line: where it is and why, for the curators' report."""

    line: int
    reason: str
    excerpt: str


@dataclass
class LogAggregate:
    """The result of one crawl.log pass: the grouped table plus what went wrong."""

    path: Path
    groups: pl.DataFrame
    lines: int = 0
    bad_lines: int = 0
    bad_examples: list[BadLine] = field(default_factory=list)
    first_ts: str | None = None
    last_ts: str | None = None
    elapsed_s: float = 0.0
    # groups already in the crawltable.GROUP_KEYS layout (the C scanner's table when there were
    # no odd lines), not packed as (k, code)
    unpacked: bool = False

    @property
    def valid_lines(self) -> int:
        return self.lines - self.bad_lines


def piece_bounds(
    mm: mmap.mmap, start: int, end: int, chunk_bytes: int
) -> Iterator[tuple[int, int]]:
    """[pos, stop) pieces of about ``chunk_bytes`` that end on a line boundary (the last may not)."""
    pos = start
    while pos < end:
        stop = min(pos + chunk_bytes, end)
        if stop < end:
            cut = mm.rfind(b"\n", pos, stop)
            stop = cut + 1 if cut >= pos else (mm.find(b"\n", stop, end) + 1 or end)
        yield pos, stop
        pos = stop


# what Python's str.split() (the slow path's, and every reader's, field rule) takes as
# whitespace, besides the space; 0x1f never reaches polars (see _aggregate_chunk)
_OTHER_WHITESPACE = (
    "[\t\n\x0b\x0c\r\x1c-\x1e\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
)


def _parse_fixed(df: pl.DataFrame) -> pl.DataFrame:
    """Vectorised parse of the rows in Heritrix's fixed layout; adds ``ok`` per row."""
    line = pl.col("l")
    size_raw = line.str.slice(31, 10).str.strip_chars_start(" ")
    fixed = df.select(
        pl.col("i"),
        (
            (line.str.slice(24, 1) == " ")
            & (line.str.slice(30, 1) == " ")
            & (line.str.slice(41, 1) == " ")
            & (line.str.slice(42, 1) != " ")
        ).alias("layout"),
        line.str.slice(0, 24).alias("ts"),
        line.str.slice(25, 5)
        .str.strip_chars_start(" ")
        .cast(pl.Int32, strict=False)
        .alias("status"),
        size_raw.cast(pl.Int64, strict=False).alias("size"),
        (size_raw == "-").alias("nosize"),
        line.str.slice(42).alias("rest"),
        (
            line.str.contains(_OTHER_WHITESPACE)
            | line.str.slice(0, 24).str.contains(" ", literal=True)
            | line.str.slice(42).str.contains("  ", literal=True)
        ).alias("odd_space"),
    )
    # Splitting the materialised remainder is ~3x faster than splitting a slice expression
    # (measured); splitn keeps whatever follows the 12th field (Heritrix's extra info, or the
    # fields of a shifted or forged line) in field_9.
    parsed = fixed.with_columns(pl.col("rest").str.splitn(" ", 10).alias("f")).unnest("f")
    uri = pl.col("field_0")
    ann = pl.col("field_8")
    extra = pl.col("field_9")
    return parsed.select(
        "i",
        "ts",
        "status",
        pl.col("size").fill_null(0).alias("size"),
        (
            pl.col("layout")
            & (pl.col("ts").str.slice(4, 1) == "-")
            & (pl.col("ts").str.slice(10, 1) == "T")
            & pl.col("status").is_not_null()
            & (pl.col("size").is_not_null() | pl.col("nosize"))
            & ann.is_not_null()
            & (ann != "")
            # exactly 12 fields as str.split() sees them (the slow path decides the rest): no
            # whitespace but single spaces, a 13th field only as a {...} extra-info object
            & ~pl.col("odd_space")
            & (
                extra.is_null()
                | (
                    extra.str.starts_with("{")
                    & extra.str.ends_with("}")
                    & ~extra.str.contains(" ", literal=True)
                )
            )
        ).alias("ok"),
        # scheme://authority/... ; "dns:host" lines have no slash and keep the whole URI,
        # cleaned later on the distinct values (see hosts.host_of)
        uri.str.split_exact("/", 2)
        .struct.field("field_2")
        .fill_null(uri)
        .fill_null("")
        .alias("auth"),
        pl.col("field_3").alias("mime"),
        ann.str.contains("duplicate:", literal=True).fill_null(False).alias("dup"),
        (pl.col("field_1") == "-").fill_null(False).alias("seed"),
        ann.str.contains("Q:", literal=True).fill_null(False).alias("quota"),
    )


def _line_numbers(chunk: bytes, first_line: int, rows: int) -> list[int] | None:
    """Row index → line number, when polars skipped blank lines (None when 1:1)."""
    pieces = chunk.split(b"\n")
    if pieces and pieces[-1] == b"":
        pieces.pop()
    if len(pieces) == rows:
        return None
    return [first_line + n for n, p in enumerate(pieces) if p.strip(b"\r")]


def _aggregate_chunk(
    chunk: bytes, first_line: int, result: LogAggregate, line_map: list[int] | None = None
) -> pl.DataFrame | None:
    """Parse one chunk; ``line_map`` (row → line number) when its lines are not contiguous."""
    if b"\x1f" in chunk:
        # the one-column read splits on 0x1f; polars refuses a chunk whose first line has it
        chunk = chunk.replace(b"\x1f", b"?")
    raw = pl.read_csv(
        chunk,
        has_header=False,
        separator="\x1f",
        quote_char=None,
        new_columns=["l"],
        schema={"l": pl.String},
        encoding="utf8-lossy",
        truncate_ragged_lines=True,
        raise_if_empty=False,
        comment_prefix=None,
        row_index_name="i",
    )
    if raw.height == 0:
        return None
    parsed = _parse_fixed(raw)
    n_ok = int(parsed["ok"].sum())
    good = parsed if n_ok == parsed.height else parsed.filter(pl.col("ok"))
    frames = [good.drop("i", "ok")] if good.height else []
    if n_ok < parsed.height:
        rownums = _line_numbers(chunk, first_line, raw.height)
        odd = raw.join(parsed.filter(~pl.col("ok")).select("i"), on="i", how="semi")
        slow_rows = []
        for idx, text in odd.iter_rows():
            row, why = parse_line_slow(text or "")
            if row is not None:
                slow_rows.append(row)
                continue
            result.bad_lines += 1
            if len(result.bad_examples) < MAX_BAD_LINES_KEPT:
                lineno = rownums[idx] if rownums is not None else first_line + idx
                if line_map is not None:
                    lineno = line_map[lineno - first_line]
                result.bad_examples.append(BadLine(lineno, why, (text or "")[:120]))
        if slow_rows:
            frames.append(
                pl.DataFrame(
                    slow_rows,
                    schema={
                        "ts": pl.String,
                        "status": pl.Int32,
                        "size": pl.Int64,
                        "auth": pl.String,
                        "mime": pl.String,
                        "dup": pl.Boolean,
                        "seed": pl.Boolean,
                        "quota": pl.Boolean,
                    },
                ).select(good.drop("i", "ok").columns)
            )
    if not frames:
        return None
    rows = pl.concat(frames, how="vertical") if len(frames) > 1 else frames[0]
    first, last = rows.select(pl.col("ts").min().alias("a"), pl.col("ts").max().alias("b")).row(0)
    if first is not None and (result.first_ts is None or first < result.first_ts):
        result.first_ts = first
    if last is not None and (result.last_ts is None or last > result.last_ts):
        result.last_ts = last
    return pack(rows)
