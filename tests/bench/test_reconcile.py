"""The day's access check (bench/scale/reconcile.check_replay) on CDX11 lines as the indexer
writes them: pywb's own rule for a redirect within one CDX key is expected, nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.scale import reconcile

CDX = (
    " CDX N b a m s k r M S V g\n"
    "fr,site1)/robots.txt 20261129072634 http://site1.fr/robots.txt text/html 301 REDIRECT"
    " - - 559 1046547 a.warc.gz\n"
    "fr,site1)/robots.txt 20261129072651 http://www.site1.fr/robots.txt text/plain 200 ROBOTS"
    " - - 542 2633044 a.warc.gz\n"
    "fr,site2)/ 20261129072700 http://site2.fr/ text/html 301 MOVED - - 500 3000000 a.warc.gz\n"
)


def _replay(url: str, ts: str, status: int, digest: str, got: tuple[int, str]) -> dict:
    return {"url": url, "timestamp": ts, "status": status, "digest": digest,
            "replayed_status": got[0], "replayed_digest": got[1]}  # fmt: skip


def test_a_redirect_within_its_key_replays_as_the_keys_other_capture(tmp_path: Path) -> None:
    cdx = tmp_path / "a.cdx"
    cdx.write_text(CDX)
    replay = [
        _replay("http://site1.fr/robots.txt", "20261129072634", 301, "REDIRECT", (200, "ROBOTS")),
        _replay("http://www.site1.fr/robots.txt", "20261129072651", 200, "ROBOTS", (200, "ROBOTS")),
    ]
    assert reconcile.check_replay(replay, [cdx]) == 1


def test_a_redirect_replayed_as_anything_else_fails_the_access(tmp_path: Path) -> None:
    cdx = tmp_path / "a.cdx"
    cdx.write_text(CDX)
    other_key = _replay("http://site2.fr/", "20261129072700", 301, "MOVED", (200, "ROBOTS"))
    with pytest.raises(reconcile.ReconcileError, match=r"^access: http://site2.fr/ at"):
        reconcile.check_replay([other_key], [cdx])
    a_page = _replay("http://www.site1.fr/robots.txt", "20261129072651", 200, "ROBOTS",
                     (301, "REDIRECT"))  # fmt: skip
    with pytest.raises(reconcile.ReconcileError, match=r"^access: http://www.site1.fr/robots"):
        reconcile.check_replay([a_page], [cdx])
