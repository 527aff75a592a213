"""The grouped table a crawl.log pass produces, and its packed working form.

Why a module of its own: two scanners build this table (the polars path in qa.crawllog_aggregate
and the C scanner in qa.crawlscan) and the daily QA reads it, so its columns, the packed (k, code)
layout both scanners group on, and the functions that pack, merge and expand it live in one
place rather than in one scanner that the other reaches into.
"""

from __future__ import annotations

import polars as pl

# The grouped table's columns: authority (raw host[:port] part of the URI), HTTP or Heritrix
# status, MIME as logged, and three flags; then counts and byte sums.
GROUP_KEYS = ["auth", "status", "mime", "dup", "seed", "quota"]
SCHEMA = {
    "auth": pl.String,
    "status": pl.Int32,
    "mime": pl.String,
    "dup": pl.Boolean,
    "seed": pl.Boolean,
    "quota": pl.Boolean,
    "lines": pl.Int64,
    "bytes": pl.Int64,
}


def empty_groups() -> pl.DataFrame:
    return pl.DataFrame(schema=SCHEMA)


# Internally rows are grouped on two columns only: "authority MIME" (neither contains a space)
# and status*8 + flags; polars groups one string + one integer key about 3x faster than six
# keys (measured). The result is expanded back to GROUP_KEYS once, on the grouped rows.
PACKED = {"k": pl.String, "code": pl.Int64, "lines": pl.Int64, "bytes": pl.Int64}


def pack(rows: pl.DataFrame) -> pl.DataFrame:
    code = (
        pl.col("status").cast(pl.Int64) * 8
        + pl.col("dup").cast(pl.Int64) * 4
        + pl.col("seed").cast(pl.Int64) * 2
        + pl.col("quota").cast(pl.Int64)
    )
    return rows.group_by(
        pl.concat_str([pl.col("auth"), pl.col("mime").fill_null("-")], separator=" ").alias("k"),
        code.alias("code"),
    ).agg(pl.len().cast(pl.Int64).alias("lines"), pl.col("size").sum().alias("bytes"))


def unpack(packed: pl.DataFrame) -> pl.DataFrame:
    parts = pl.col("k").str.splitn(" ", 2)
    return expand(packed, parts.struct.field("field_0"), parts.struct.field("field_1"))


def expand(df: pl.DataFrame, auth: pl.Expr, mime: pl.Expr) -> pl.DataFrame:
    """The GROUP_KEYS table from ``df``'s code/lines/bytes and the given auth/MIME columns."""
    status = pl.col("code").floordiv(8)
    flags = pl.col("code") - status * 8
    return df.select(
        auth.alias("auth"),
        status.cast(pl.Int32).alias("status"),
        mime.alias("mime"),
        (flags.floordiv(4) % 2 == 1).alias("dup"),
        (flags.floordiv(2) % 2 == 1).alias("seed"),
        (flags % 2 == 1).alias("quota"),
        "lines",
        "bytes",
    )


def merge(parts: list[pl.DataFrame]) -> pl.DataFrame:
    """Sum packed (k, code) partial results."""
    return (
        pl.concat(parts, how="vertical")
        .group_by(["k", "code"])
        .agg(pl.col("lines").sum(), pl.col("bytes").sum())
    )
