"""Selection records from the UK Web Archive's JSON crawl feed (a list of targets, or JSON lines).

Why a module apart from the CSV reader: a feed item is nested JSON whose every value must be
type-checked before use (a string where a list is expected, an object where a string is),
and an undecodable byte must refuse only the item holding it, not the whole file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harvest.jobgen.model import is_limit
from harvest.selection.annotations import AnnotationError, parse_feed
from harvest.selection.mapping import SelectionMapping
from harvest.selection.records import (
    RecordError,
    SelectionRecord,
    check_fields,
    normalise_url,
    optional_url,
    parse_feed_date,
    url_scheme,
)
from harvestflow.formats.seeds import SeedError, check_text
from harvestflow.job_actions import past_limit_max


def _check_strings(value: Any, where: str, name: str = "record") -> None:
    """Every string of a JSON value (keys too) checked with :func:`check_text`."""
    if isinstance(value, str):
        try:
            check_text(value, name)
        except SeedError as exc:
            raise RecordError(where, str(exc)) from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_strings(key, where, f"{name} key")
            _check_strings(item, where, str(key))
    elif isinstance(value, list):
        for item in value:
            _check_strings(item, where, name)


def _string_list(item: dict[str, Any], key: str, where: str) -> list[str]:
    value = item.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RecordError(where, f"{key} must be a list of strings")
    return value


def _limit(item: dict[str, Any], key: str, where: str) -> int | None:
    value = item.get(key)
    if value is None:
        return None
    if not is_limit(value):
        raise RecordError(where, f"{key} must be a positive integer or -1 (no limit)")
    too_large = past_limit_max("max_objects" if key == "maxObjects" else "max_bytes", value)
    if too_large:
        raise RecordError(where, too_large)
    return value


def _annotations(item: dict[str, Any], where: str) -> dict[str, Any] | None:
    if item.get("annotations") is None:
        return None
    try:
        return parse_feed(item["annotations"])
    except AnnotationError as exc:
        raise RecordError(where, str(exc)) from None


def _watched(item: dict[str, Any], where: str) -> bool:
    value = item.get("watched")
    if value is None:
        return False
    if not isinstance(value, bool):
        raise RecordError(where, "watched must be true or false")
    return value


def read_ukwa_feed(
    path: Path,
    mapping: SelectionMapping,
    *,
    collection: str = "ukwa",
    theme: str | None = None,
) -> Iterator[SelectionRecord | RecordError]:
    """Records of a UK Web Archive crawl feed (a JSON list of targets, or JSON lines).

    Bytes that are not UTF-8 are kept as lone surrogates while parsing, so that only the
    targets holding them are refused (by :func:`_check_strings`), not the whole file.
    """
    text = path.read_bytes().decode("utf-8-sig", errors="surrogateescape")
    items: list[tuple[str, Any]] = []  # (where, item)
    try:
        data = json.loads(text)
        listed = data if isinstance(data, list) else data.get("targets", [data])
        if not isinstance(listed, list):
            listed = [listed]
        items = [(f"{path.name} item {i}", item) for i, item in enumerate(listed, 1)]
    except json.JSONDecodeError:
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                items.append((f"{path.name} line {lineno}", json.loads(line)))
            except json.JSONDecodeError as exc:
                yield RecordError(f"{path.name} line {lineno}", f"invalid JSON ({exc.msg})", line)
    for where, item in items:
        raw = json.dumps(item, ensure_ascii=True)[:2000] if item is not None else ""
        try:
            yield _feed_record(item, where, raw, mapping, collection, theme)
        except RecordError as exc:
            exc.text = raw
            yield exc


def _feed_record(
    item: Any,
    where: str,
    raw: str,
    mapping: SelectionMapping,
    collection: str,
    theme: str | None,
) -> SelectionRecord:
    if not isinstance(item, dict):
        raise RecordError(where, "not a JSON object")
    where = f"{where} (id {str(item.get('id'))[:40]})"
    _check_strings(item, where)
    seeds = _string_list(item, "seeds", where)
    if not seeds:
        raise RecordError(where, "no seeds")
    schedules = item.get("schedules") or []
    if not isinstance(schedules, list) or not all(isinstance(s, dict) for s in schedules):
        raise RecordError(where, "schedules must be a list of objects")
    if not schedules:
        raise RecordError(where, "no schedules")
    # DOMAINCRAWL schedules belong to the broad crawl; every other one is harvested
    schedules = [s for s in schedules if str(s.get("frequency") or "").upper() != "DOMAINCRAWL"]
    if not schedules:
        raise RecordError(where, "DOMAINCRAWL targets are harvested by the broad crawl")
    freq = str(schedules[0].get("frequency") or "")
    for number, sched in enumerate(schedules, 1):
        start = parse_feed_date(sched.get("startDate"), where, f"schedule {number} startDate")
        end = parse_feed_date(sched.get("endDate"), where, f"schedule {number} endDate")
        if start is not None and end is not None and end < start:
            raise RecordError(where, f"schedule {number}: endDate is before startDate")
    scope = str(item.get("scope") or "subdomains")
    depth_word = str(item.get("depth") or "CAPPED")
    if scope not in mapping.ukwa_scope:
        raise RecordError(where, f"unknown scope {scope!r}")
    if depth_word not in mapping.ukwa_depth:
        raise RecordError(where, f"unknown depth {depth_word!r}")
    title = item.get("title")
    rec = SelectionRecord(
        where=where,
        external_id=f"ukwa:{item.get('id')}",
        collection=str(item.get("collection") or collection),
        title=None if title is None else str(title),
        seed_url=normalise_url(seeds[0], where),
        supplementary_urls=[normalise_url(u, where) for u in seeds[1:]],
        budget=mapping.ukwa_depth[depth_word],
        frequency=freq,
        depth=mapping.ukwa_scope[scope],
        active=not item.get("inactive", False),
        theme=str(item.get("theme") or theme or ""),
        keywords=[str(k) for k in _string_list(item, "keywords", where)],
        scope=scope,
        ignore_robots=bool(item.get("ignoreRobotsTxt", False)),
        schedules=[dict(s) for s in schedules],
        technical_notes=f"UKWA depth {depth_word}, scope {scope}",
        text=raw,
        login_page_url=optional_url(item.get("loginPageUrl"), where, "loginPageUrl"),
        logout_url=optional_url(item.get("logoutUrl"), where, "logoutUrl"),
        secret_id=str(item["secretId"]) if item.get("secretId") not in (None, "") else None,
        max_objects=_limit(item, "maxObjects", where),
        max_bytes=_limit(item, "maxBytes", where),
        annotations=_annotations(item, where),
        watched=_watched(item, where),
        document_url_scheme=url_scheme(item.get("documentUrlScheme"), where),
    )
    rec = check_fields(rec, mapping)
    for number, sched in enumerate(schedules[1:], 2):
        try:
            other = mapping.normalise_frequency(str(sched.get("frequency") or ""))
        except ValueError as exc:
            raise RecordError(where, f"schedule {number}: {exc}") from None
        refused = mapping.check(rec.budget, other, rec.depth)
        if refused:
            raise RecordError(where, f"schedule {number} ({other}): {refused}")
    return rec
