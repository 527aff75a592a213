"""The search interface: what is stored, what is asked, what comes back, and access rules.

Why this narrow: a backend implements :class:`SearchBackend` (five methods) over these plain
records, so the PostgreSQL default (:mod:`search.pg`) and an OpenSearch or Solr backend for
billions of documents (docs/scaling.md) are interchangeable modules; the chain, the CLI and the
pages never see SQL.

Access rules arrive as data (:class:`AccessRules`: blocked SURT prefixes and embargoes), not as
a callback, so each backend can apply them inside its query: a blocked capture is then never
counted, never a hit and never a snippet, and paging and facet counts stay exact.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Protocol

FACETS = ("year", "host", "domain", "mime", "collection", "lang")
HIT_START = "\x02"  # snippet highlight markers: never in extracted text, escaped apart from it
HIT_END = "\x03"


@dataclass(frozen=True)
class Document:
    """One extracted payload (identified by its payload digest)."""

    digest: str
    title: str
    text: str
    lang: str
    outlinks: int


@dataclass(frozen=True)
class CaptureRecord:
    """One capture (a response or revisit record) whose payload is a :class:`Document`."""

    file_name: str
    offset: int
    url: str
    surt: str
    host: str
    domain: str
    captured_at: datetime
    status: int | None
    mime: str
    digest: str
    record_type: str
    collection: str = ""
    harvest_id: int | None = None
    job_id: int | None = None


@dataclass
class FileProgress:
    """Where the extraction of one WARC stands: its checkpoint, stored with the documents.

    ``resume_offset`` is the offset of the last record taken into account (-1: none), so a
    restarted extraction skips every record up to it; the counts and errors cover exactly those
    records, because the backend stores them in the same write as the batch they describe.
    """

    file_name: str
    resume_offset: int = -1
    extracted: int = 0
    duplicates: int = 0
    skipped: int = 0
    failed: int = 0
    errors: list[dict[str, object]] = field(default_factory=list)
    done: bool = False


@dataclass(frozen=True)
class AccessRules:
    """What may not be shown: SURT prefixes blocked outright, and embargoes after capture.

    Built from the access rules in force (:func:`access.rules.search_rules`, the same rules pywb
    applies to replay) by the CLI and the search page, or passed explicitly. A SURT prefix
    ``org,example)/private`` covers that path and
    below; ``org,example,`` covers every subdomain; an embargo with the prefix ``""`` covers all.
    """

    blocked: tuple[str, ...] = ()
    embargoes: tuple[tuple[str, timedelta], ...] = ()
    now: datetime | None = None
    # prefix of a blocked or embargoed rule → the longer rule prefixes under it, which decide
    # for their own captures (the longest prefix decides, as in pywb's ACL)
    exceptions: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @classmethod
    def from_rules(cls, rules: Iterable[tuple[str, str, int | None]]) -> AccessRules:
        """From (SURT prefix, allow|block|exclude, embargo days or None) rules, pywb's way:
        block and exclude both hide a capture from search; an embargo only younger captures."""
        rules = list(rules)
        blocked: list[str] = []
        embargoes: list[tuple[str, timedelta]] = []
        exceptions = []
        for prefix, policy, days in rules:
            if policy == "allow":
                continue
            if days:
                embargoes.append((prefix, timedelta(days=days)))
            else:
                blocked.append(prefix)
            longer = tuple(p for p, _, _ in rules if len(p) > len(prefix) and p.startswith(prefix))
            if longer:
                exceptions.append((prefix, longer))
        return cls(tuple(blocked), tuple(embargoes), None, tuple(exceptions))


@dataclass(frozen=True)
class Query:
    text: str  # words, "phrases", -exclusion, OR (websearch syntax); site:/domain: parsed apart
    sites: tuple[str, ...] = ()  # host[/path] prefixes
    domains: tuple[str, ...] = ()  # registrable domains
    years: tuple[int, ...] = ()
    mimes: tuple[str, ...] = ()
    collections: tuple[str, ...] = ()
    langs: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()
    page: int = 1
    per_page: int = 10
    access: AccessRules = field(default_factory=AccessRules)


@dataclass(frozen=True)
class Hit:
    """One result: a payload, shown through its most recent visible capture."""

    digest: str
    title: str
    url: str
    captured_at: datetime
    mime: str
    collection: str
    lang: str
    snippet: str  # plain text with HIT_START/HIT_END around matches
    other_captures: int  # other visible captures of the same payload
    score: float

    def snippet_html(self) -> str:
        escaped = html.escape(self.snippet)
        return escaped.replace(HIT_START, "<mark>").replace(HIT_END, "</mark>")

    def snippet_text(self, start: str = "[", end: str = "]") -> str:
        return self.snippet.replace(HIT_START, start).replace(HIT_END, end)


@dataclass(frozen=True)
class SearchResult:
    query: Query
    total: int  # collapsed hits (payloads) in all pages; an estimate when not ``exact``
    hits: list[Hit]
    facets: dict[str, list[tuple[str, int]]]  # facet -> (value, payloads) by count
    # False when more captures match than a search reads (the backend's count limit): then
    # ``total`` is an estimate, and the ranking, the pages and the facets cover the ``counted``
    # payloads of the captures read
    exact: bool = True
    counted: int | None = None

    @property
    def pageable(self) -> int:
        """The payloads the pages can show."""
        return self.total if self.exact or self.counted is None else self.counted

    def approximation(self) -> str:
        """What an approximate result's count means, said on the page ("" when exact)."""
        if self.exact:
            return ""
        return (
            f"about {self.total:,} results: too many to count, so the ranking, the pages and the"
            f" facets cover the {self.counted or 0:,} first found"
        )


class SearchBackend(Protocol):
    """What the chain and the pages need from a search backend."""

    def known_digests(self, digests: list[str]) -> set[str]:
        """The digests among ``digests`` whose text is already stored (not extracted again)."""

    def add(
        self, documents: list[Document], captures: list[CaptureRecord], progress: FileProgress
    ) -> None:
        """Store documents, captures and the file's checkpoint at once; idempotent."""

    def progress(self, file_name: str) -> FileProgress | None:
        """The stored checkpoint of a WARC (None: never started)."""

    def files_done(self, file_names: list[str]) -> set[str]:
        """The WARCs among ``file_names`` whose extraction finished."""

    def day_counts(self, day: date) -> dict[str, int]:
        """Files finished on ``day`` and their extracted/duplicates/skipped/failed counts (QA)."""

    def delete_files(self, file_names: list[str]) -> int:
        """Forget these WARCs: captures, checkpoints, texts no capture uses any more."""

    def search(self, query: Query) -> SearchResult:
        """One page of collapsed hits with snippets, and the facets of all hits."""

    def count(self) -> tuple[int, int]:
        """(documents, captures) stored."""
