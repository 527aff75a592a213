"""The lookup key of a POST or PUT capture: its request body appended to the URL as a query.

Why: a POST API answers differently for each body, so pywb and ``cdxj-indexer -p`` (the
reference, a test oracle only) index a POST/PUT response under
``URL?__wb_method=post&<body as a query>``, and pywb builds the same key when it replays. Our CDX
lines must carry exactly that key, so the body is turned into a query here the way the
reference does it (form, multipart, JSON, else base64), cut at 4,096 characters.
"""

from __future__ import annotations

import base64
import json
from urllib.parse import unquote_plus, urlencode

__all__ = ["MAX_QUERY_LENGTH", "NO_LENGTH_READ", "appended_url", "body_query", "keyed"]

MAX_QUERY_LENGTH = 4096
# bytes of the body the reference reads when the request has no Content-Length header
NO_LENGTH_READ = 8192
KEYED_METHODS = ("POST", "PUT")


def _binary(data: bytes) -> str:
    return "__wb_post_data=" + base64.b64encode(data).decode("ascii")


def _json_query(data: bytes) -> str:
    """Every scalar of the JSON document(s) as ``name=value`` (first name wins, then
    ``name.2_``, ``name.3_``…), in document order; raises ValueError when it does not parse."""
    fields: dict[str, str] = {}
    dupes: dict[str, int] = {}

    def key(name: str) -> str:
        if name not in fields:
            return name
        dupes[name] = dupes.get(name, 1) + 1
        return f"{name}.{dupes[name]}_"

    def walk(obj: object, name: str = "") -> None:
        if isinstance(obj, dict):
            for n, v in obj.items():
                walk(v, n)
        elif isinstance(obj, list):
            for v in obj:
                walk(v, name)
        elif name:
            fields[key(name)] = _py_str(obj)

    try:
        walk(json.loads(data))
    except json.JSONDecodeError:
        if b"\n" not in data:
            raise
        for line in data.split(b"\n"):
            walk(json.loads(line))
    return urlencode(fields)


def _py_str(value: object) -> str:
    """``str()`` of a JSON scalar as the reference (Python) writes it: True, None, 1.5."""
    return str(value)


def _multipart_query(data: bytes, content_type: str) -> str:
    if "boundary=" not in content_type:
        return _binary(data)
    # imported here: the email package costs the indexer's start more than all its other
    # imports, and only multipart POST bodies need it
    from email import message_from_bytes
    from email.message import Message

    msg = message_from_bytes(
        b"Content-Type: " + content_type.encode("latin-1") + b"\r\n\r\n" + data
    )
    values: list[tuple[str, str | bytes]] = []
    parts = msg.get_payload() if msg.is_multipart() else []
    for part in parts if isinstance(parts, list) else []:
        if not isinstance(part, Message):
            continue
        name = part.get_param("name", header="content-disposition")
        if not isinstance(name, str):
            continue
        raw = part.get_payload(decode=True)
        raw = raw if isinstance(raw, bytes) else b""
        if part.get_filename():
            values.append((name, raw))
        else:
            values.append((name, raw.decode("utf-8", "replace")))
    return urlencode(values, True)


def body_query(content_type: str | None, content_length: str | None, body: bytes) -> str | None:
    """The query the reference makes of a POST/PUT body (None: a Content-Length that is not a
    number — the reference then appends the method alone and writes ``requestBody: null``)."""
    if content_length is None:
        length = NO_LENGTH_READ
    else:
        try:
            length = int(content_length)
        except ValueError:
            return None
    data = body[: max(length, 0)]
    mime = content_type or ""
    if mime.startswith("application/x-www-form-urlencoded"):
        try:
            query = unquote_plus(data.decode("utf-8"))
        except UnicodeDecodeError:
            query = _binary(data)
    elif mime.startswith("multipart/"):
        query = _multipart_query(data, mime)
    elif mime.startswith("application/json"):
        try:
            query = _json_query(data)
        except ValueError:
            query = ""
    elif mime.startswith("text/plain"):
        try:
            query = _json_query(data)
        except ValueError:
            query = _binary(data)
    else:
        query = _binary(data)
    return query[:MAX_QUERY_LENGTH] if query else query


def appended_url(url: str, method: str, query: str | None) -> str:
    """``url`` with ``__wb_method=<METHOD>`` and the body's query appended (the URL whose SURT
    is the capture's key)."""
    sep = "&" if "?" in url else "?"
    tail = f"{url}{sep}__wb_method={method}"
    return f"{tail}&{query}" if query else tail


def keyed(method: str) -> bool:
    """Whether a request of ``method`` is indexed under its body (POST and PUT, any case)."""
    return method.upper() in KEYED_METHODS
