"""Adaptive streams are archived from their manifests (crawler/manifests.py): a page embedding
an HLS master playlist and a DASH MPD, crawled with ``--render html``, gets its manifests, the
lowest and the highest rendition of each kind (template ``media_renditions = "extremes"``, the
default) with their init sections and every segment, the audio renditions, and nothing of the
middle renditions; ``all`` takes every rendition; a hostile playlist cannot queue more than
``MAX_SEGMENTS`` segments per rendition, and an MPD's entities are never expanded; an unknown
``media_renditions`` is refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from crawler.manifests import MAX_SEGMENTS, dash_links, hls_links, manifest_kind
from crawler.rendering.cdp import find_chromium
from harvestflow.contracts.jobspec import JobSpec, JobSpecError
from tests.support import postmediasite


def test_a_pages_hls_and_dash_streams_are_archived_lowest_and_highest_rendition(tmp_path: Path):
    find_chromium()
    # an HLS segment is three embeds from its page (page, master, variant, segment): within
    # the job's hop limit here, as on any page three hops or more above it
    result, site = postmediasite.crawl(tmp_path / "job", b"", seed="/streams.html", max_hops=3)
    archived: dict[str, bytes] = {}
    for warc in result.data_warcs():
        with warc.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                if rec.rec_type == "response":
                    uri = rec.rec_headers.get_header("WARC-Target-URI")
                    archived[uri] = rec.content_stream().read()
    files = postmediasite.stream_files()
    left_out = {p for p in files if "/mid/" in p or "/v2/" in p}
    assert len(left_out) == 9
    for path, (body, _) in files.items():
        url = site.url(path)
        if path in left_out:
            assert url not in archived, path
        else:
            assert archived.get(url) == body, path
    fields = {f[3]: f for f in result.log_fields()}
    segment = fields[site.url("/hls/high/seg2.m4s")]
    assert (segment[1], segment[4][-1:], segment[5]) == (
        "200",
        "E",
        site.url("/hls/high/index.m3u8"),
    )


def test_all_renditions_are_taken_when_the_template_says_all():
    base = "http://s.test/hls/master.m3u8"
    found = {u for u, _, _ in hls_links(postmediasite.HLS_MASTER.decode(), base, "all")}
    assert found == {f"http://s.test/hls/{n}/index.m3u8" for n in ("low", "mid", "high", "audio")}
    mpd = "http://s.test/dash/film.mpd"
    reps = {u.split("/")[4] for u, _, _ in dash_links(postmediasite.DASH_MPD, mpd, "all")}
    assert reps == {"v1", "v2", "v3", "audio"}
    assert manifest_kind("application/octet-stream", mpd) == "dash"
    assert manifest_kind("application/x-mpegURL".lower(), "http://s.test/x") == "hls"


def test_a_hostile_manifest_is_bounded():
    many = "#EXTM3U\n" + "".join(f"#EXTINF:1,\ns{i}.ts\n" for i in range(3 * MAX_SEGMENTS))
    assert len(hls_links(many, "http://s.test/p.m3u8")) == MAX_SEGMENTS
    endless = postmediasite.DASH_MPD.replace(b"PT5S", b"P36500D")
    links = dash_links(endless, "http://s.test/film.mpd", "all")
    assert len([u for u, _, _ in links if "/v1/" in u]) == 1 + MAX_SEGMENTS  # init + bound
    bomb = (
        b'<?xml version="1.0"?><!DOCTYPE MPD [<!ENTITY a "aaaaaaaaaa">'
        b'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>'
        b'<MPD><Period><AdaptationSet><Representation id="&b;" bandwidth="1">'
        b"<BaseURL>x.mp4</BaseURL></Representation></AdaptationSet></Period></MPD>"
    )
    assert [u for u, _, _ in dash_links(bomb, "http://s.test/b.mpd")] == ["http://s.test/x.mp4"]
    assert hls_links("not a playlist\nseg.ts\n", "http://s.test/p.m3u8") == []


def test_a_template_with_an_unknown_rendition_choice_is_refused_by_name():
    job = {"job_id": 1, "seeds": ["http://a.test/"], "template": {"media_renditions": "best"}}
    with pytest.raises(
        JobSpecError, match=r"job\.json: template\.media_renditions must be extremes or all"
    ):
        JobSpec.from_dict(job, "job.json")
