"""URL forms: canonical keys for the seen-set, hosts, fragments.

Why one home: the crawler keys its seen-set, dedup index, scope and reports by these forms, and
the continuous crawl and the selection importer key their URL state by the same hosts; written
per stage, the same URL could get two hosts. Registrable domains are in
:mod:`harvestflow.formats.domains`.

Why these keys: the seen-set must treat ``http://Example.com:80/a?b=2&a=1#top`` and
``http://example.com/a?a=1&b=2`` as one URL, and session ids that change on every link
(``;jsessionid=…``, ``?sid=…``) must not make every page look new — that is how session-id
explosions are bounded. w3lib does the heavy lifting; we add host case, default ports and
session parameters. These keys are the crawler's own and never written to an index: the SURT
keys of CDX lines are the reference ones of :mod:`harvestflow.formats.surt`.
"""

from __future__ import annotations

import re
from functools import lru_cache
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from w3lib.url import canonicalize_url

SESSION_PARAMS = frozenset(
    {"jsessionid", "phpsessid", "sid", "sessionid", "session_id", "cfid", "cftoken", "sessid"}
)
_PATH_SESSION = re.compile(r";(jsessionid|phpsessid|sid)=[^/?#]*", re.IGNORECASE)
_ASP_SESSION = re.compile(r"^aspsessionid[a-z]{8}$", re.IGNORECASE)
DEFAULT_PORTS = {"http": 80, "https": 443}


def host_of(url: str) -> str:
    """Lower-case host name of a URL, '' when there is none."""
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


def strip_session_ids(url: str) -> str:
    """Remove session identifiers from the path (``;jsessionid=``) and the query."""
    url = _PATH_SESSION.sub("", url)
    parts = urlsplit(url)
    if not parts.query:
        return url
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    kept = [
        (k, v) for k, v in pairs if k.lower() not in SESSION_PARAMS and not _ASP_SESSION.match(k)
    ]
    if len(kept) == len(pairs):
        return url
    return urlunsplit(parts._replace(query=urlencode(kept)))


@lru_cache(maxsize=1 << 17)  # pages repeat the same links (menus, images, CSS): w3lib is slow
def canonical_key(url: str, *, sessions: bool = True) -> str:
    """The seen-set key of a URL: w3lib canonical form, lower-case host, no default port,
    no fragment, no session ids (unless ``sessions=False``); an invalid URL unchanged."""
    try:
        if sessions:
            url = strip_session_ids(url)
        canon = canonicalize_url(url, keep_fragments=False)
        parts = urlsplit(canon)
        port = parts.port
    except ValueError:
        # an invalid URL (``http://[bad/``, a port out of range) is its own key: it is refused
        # with -7 by the scope rules, and nothing that keys URLs may fail on it
        return url
    netloc = (parts.hostname or "").lower()
    if port and port != DEFAULT_PORTS.get(parts.scheme):
        netloc += f":{port}"
    if parts.username:
        netloc = f"{parts.username}@{netloc}"
    return urlunsplit((parts.scheme.lower(), netloc, parts.path or "/", parts.query, ""))


def without_fragment(url: str) -> str:
    """``url`` as a server is asked for it: everything before the first ``#``.

    Why: a fragment is never sent, so a capture is stored (WARC-Target-URI, crawl.log, CDX) and
    replayed under the URL without it, and ``/a#x`` and ``/a#y`` are one fetch. Nothing else of
    the URL changes: the query string stays as linked, in its order (a ``#`` cannot appear before
    the fragment unescaped, so the first one starts it).
    """
    return url.partition("#")[0]
