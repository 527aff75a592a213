"""bench/run ingest's output check: every WARC a side stored is read back from the store and
checked by hash against its source file.

Why: a peer checked by sizes only could have stored anything of the right length. The check
(``IngestBenchmark.figures``) lists the side's bucket, reads every stored WARC back and
hashes it; a WARC of the right size but other bytes must fail it. On the session's store
(left running by the check); tiny files; nothing here is timed.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from bench.ingest.spec import IngestBenchmark
from harvestflow import settings as settings_mod


def _side(tmp_path: Path, s3_client: Any, name: str, bodies: dict[str, bytes]) -> Path:
    """A side's output folder naming the bucket it stored ``bodies`` in (and a tag file)."""
    bucket = f"ingest-check-{name}"
    s3_client.create_bucket(Bucket=bucket)
    for key, body in {**bodies, "bag/manifest-sha256.txt": b"tag file"}.items():
        s3_client.put_object(Bucket=bucket, Key=key, Body=body)
    out = tmp_path / name
    out.mkdir()
    (out / "bucket.txt").write_text(bucket + "\n")
    return out


def test_a_stored_warc_of_the_right_size_but_other_bytes_fails_the_check(
    tmp_path: Path, services: settings_mod.Settings, s3_client: Any
) -> None:
    sources = {f"src-{n}.warc.gz": os.urandom(200_000) for n in range(3)}
    bench = IngestBenchmark()
    bench.files = [tmp_path / name for name in sources]
    bench.expected = sorted(hashlib.sha256(body).hexdigest() for body in sources.values())
    good = _side(tmp_path, s3_client, "good", {f"peer/{k}": v for k, v in sources.items()})
    figures = bench.figures(None, good)  # type: ignore[arg-type]
    assert figures["objects"] == 3 and bench.problems(figures) == []
    altered = {f"data/{k}": v for k, v in sources.items()}
    altered["data/src-1.warc.gz"] = os.urandom(200_000)  # same size: sizes would still match
    bad = bench.figures(None, _side(tmp_path, s3_client, "bad", altered))  # type: ignore[arg-type]
    assert bad["objects"] == 3
    assert bench.problems(bad) == ["the 3 stored WARCs are not the 3 sources"]
