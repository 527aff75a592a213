"""Crafted captures for the full-text tests, written into WARCs with warcio.

French and English articles with navigation and footers, a PDF (written by hand: one page, one
text object), a latin-1 page, a page whose only text sits in navigation and footer, the same
payload at two URLs plus a revisit of it, an error page, an image, and (optionally) a record cut
short at the end of the file.
"""

from __future__ import annotations

import gzip
import io
from dataclasses import dataclass
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

NAV = "".join(f'<li><a href="/rubrique{i}">Rubrique {i}</a></li>' for i in range(12))
FOOT = "<footer><p>Mentions légales · Plan du site · Cookies · Contact</p></footer>"

FR_ARTICLE = f"""<!doctype html><html lang="fr"><head><meta charset="utf-8">
<title>Le dépôt légal de l'internet</title></head><body><header><nav><ul>{NAV}</ul></nav></header>
<main><article><h1>Le dépôt légal de l'internet</h1>
<p>La Bibliothèque nationale collecte chaque année les sites français au titre du dépôt légal.
Les archives de l'internet sont consultables dans les salles de recherche de la bibliothèque.</p>
<p>Les collectes ciblées complètent la grande collecte annuelle du domaine national, et les
chercheurs y retrouvent des pages disparues depuis longtemps du web vivant.</p></article></main>
{FOOT}</body></html>"""

EN_ARTICLE = f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>Preserving the national web</title></head><body><header><nav><ul>{NAV}</ul></nav></header>
<div class="cookie-banner">We use cookies to improve your experience.</div>
<main><article><h1>Preserving the national web</h1>
<p>The national library harvests websites every year under legal deposit legislation. Curators
select the sites, and crawlers capture millions of pages in a broad snapshot of the domain.</p>
<p>Researchers later search the web archive by keyword to find pages that vanished from the
live web, such as election campaigns and local newspapers.</p></article></main>
<footer><p>Copyright 2026 Example Library. Privacy policy.</p></footer></body></html>"""

LATIN1_PAGE = """<html><head><title>Bibliothèque municipale</title></head><body>
<p>Horaires de la bibliothèque municipale de Sèvres : ouverte du mardi au samedi, fermée en
août. Les lecteurs empruntent jusqu'à douze documents à la fois, à rendre sous trois semaines,
et la médiathèque prête aussi des partitions de musique ancienne.</p></body></html>"""

BOILERPLATE_ONLY = """<html><head><title>Contact</title></head><body>
<nav><a href="/">Home</a> <a href="/hours">Reading room quetzalcoatl hours</a></nav>
<footer>Archive office, 5 rue Quetzalcoatl, Paris</footer></body></html>"""

SHARED_PAGE = f"""<html lang="en"><head><title>Harvest calendar</title></head><body>
<article><p>The harvest calendar lists every selective harvest planned this year, with the
frequency of each crawl of the zeppelin collection and its budget in pages.</p></article>
{FOOT}</body></html>"""


def tiny_pdf(text: str, title: str) -> bytes:
    """A one-page PDF showing ``text`` (ASCII) in Helvetica, with ``title`` in its Info."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode("ascii")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        f"<< /Title ({title}) >>".encode("ascii"),
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info 6 0 R >>\n" % (len(objects) + 1)
    out += b"startxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


PDF = tiny_pdf("Annual report on the dirigible preservation programme", "Dirigible annual report")


@dataclass(frozen=True)
class Page:
    url: str
    body: bytes
    content_type: str
    status: str = "200 OK"
    date: str = "2026-11-22T03:15:00Z"


def pages(host_fr: str = "www.bnf-test.fr", host_en: str = "news.example.org") -> list[Page]:
    return [
        Page(f"http://{host_fr}/depot-legal.html", FR_ARTICLE.encode(), "text/html; charset=utf-8"),
        Page(f"https://{host_en}/web/preserving.html", EN_ARTICLE.encode(), "text/html"),
        Page(
            f"http://{host_fr}/sevres.html",
            LATIN1_PAGE.encode("latin-1"),
            "text/html; charset=iso-8859-1",
            date="2025-06-01T10:00:00Z",
        ),
        Page(f"http://{host_en}/contact", BOILERPLATE_ONLY.encode(), "text/html"),
        Page(f"http://{host_en}/report.pdf", PDF, "application/pdf"),
        Page(f"http://{host_en}/calendar", SHARED_PAGE.encode(), "text/html"),
        Page("http://mirror.example.net/calendar", SHARED_PAGE.encode(), "text/html"),
        Page(
            f"http://{host_en}/missing",
            b"<html><title>Not found</title>zeppelin</html>",
            "text/html",
            status="404 Not Found",
        ),
        Page(f"http://{host_en}/logo.png", b"\x89PNG\r\n\x1a\nzeppelin", "image/png"),
    ]


def write_pages(
    path: Path,
    items: list[Page],
    *,
    revisit_of: Page | None = None,
    revisit_date: str = "2026-11-23T03:15:00Z",
    cut_last: bool = False,
) -> Path:
    """A WARC of ``items`` (response + request each); a revisit record; the last record cut."""
    buf = io.BytesIO()
    w = WARCWriter(buf, gzip=True)
    w.write_record(w.create_warcinfo_record(path.name, {"software": "harvestflow-test"}))
    members: list[int] = []
    digests: dict[str, str] = {}
    for page in items:
        http = StatusAndHeaders(
            page.status,
            [("Content-Type", page.content_type), ("Content-Length", str(len(page.body)))],
            protocol="HTTP/1.1",
        )
        rec = w.create_warc_record(
            page.url,
            "response",
            payload=io.BytesIO(page.body),
            http_headers=http,
            warc_headers_dict={"WARC-Date": page.date},
        )
        members.append(buf.tell())
        w.write_record(rec)
        digests[page.url] = rec.rec_headers.get_header("WARC-Payload-Digest")
    if revisit_of is not None and revisit_of.url in digests:
        http = StatusAndHeaders(
            "200 OK", [("Content-Type", revisit_of.content_type)], protocol="HTTP/1.1"
        )
        members.append(buf.tell())
        w.write_record(
            w.create_revisit_record(
                revisit_of.url,
                digest=digests[revisit_of.url],
                refers_to_uri=revisit_of.url,
                refers_to_date=revisit_of.date,
                http_headers=http,
                warc_headers_dict={"WARC-Date": revisit_date},
            )
        )
    data = buf.getvalue()
    if cut_last:
        data = data[: members[-1] + (len(data) - members[-1]) // 2]
    path.write_bytes(data)
    return path


def gz_member_count(path: Path) -> int:
    return path.read_bytes().count(b"\x1f\x8b\x08")


__all__ = ["PDF", "Page", "gzip", "pages", "tiny_pdf", "write_pages"]


def chain_job(
    engine,
    data_dir: Path,
    name: str,
    files: list[list[Page]],
    cut: tuple[int, ...] = (),
    run: bool = True,
    **kw,
) -> list[str]:  # type: ignore[no-untyped-def]
    """A finished job whose WARCs hold ``files``, run through the indexing chain; file names."""
    import json

    import sqlalchemy as sa

    from indexing.chain import run_chain

    with engine.begin() as conn:
        hid = int(
            conn.execute(
                sa.text(
                    "INSERT INTO harvestdefinitions (name, kind) VALUES (:n, 'partial') RETURNING harvest_id"
                ),
                {"n": name},
            ).scalar_one()
        )
        job_id = int(
            conn.execute(
                sa.text(
                    "INSERT INTO jobs (harvest_id, harvest_num, job_index, status, channel, template_name,"
                    " template, seedlist) VALUES (:h, 1, 0, 3, 'CIBLEE', 'default', CAST(:t AS jsonb),"
                    " 'http://example.com/') RETURNING job_id"
                ),
                {"h": hid, "t": json.dumps({})},
            ).scalar_one()
        )
        job_dir = data_dir / "jobs" / str(hid) / str(job_id) / "20261122031500"
        conn.execute(
            sa.text("UPDATE jobs SET job_dir = :d WHERE job_id = :j"),
            {"d": str(job_dir), "j": job_id},
        )
    (job_dir / "warcs").mkdir(parents=True)
    names = []
    for serial, items in enumerate(files):
        name = f"{job_id}-{hid}-20261122031500{serial:03d}-{serial:05d}-crawler.warc.gz"
        write_pages(job_dir / "warcs" / name, items, cut_last=serial in cut, **kw)
        names.append(name)
    if run:
        run_chain()
    return names
