"""The vocabularies (job status, stop reasons, fetch status codes, channels) are one enum each,
equal to what is stored (the harvest database's constraints, Heritrix's crawl.log codes), and
no module writes one of their numbers bare."""

from __future__ import annotations

import ast
import datetime as dt
import io
import re
import tokenize
from pathlib import Path

import pytest
import sqlalchemy as sa

from crawler.state import FrontierState
from harvestflow.formats.fetch_status import FetchStatus
from harvestflow.formats.harvest_channels import Channel, ChannelPriority
from harvestflow.formats.job_status import RUNNING, JobStatus
from harvestflow.formats.stop_reasons import LIMITS, StopReason
from harvestflow.settings import PROJECT_ROOT
from tests.support.source_tree import PLATFORM_PACKAGES

# Heritrix 3's org.archive.modules.fetcher.FetchStatusCodes (heritrix3 master), as published:
# the numbers crawl.log readers of the field expect. -404 is not a constant there; Heritrix's
# documentation lists it as "Empty HTTP response interpreted as a 404" (EMPTY_RESPONSE).
HERITRIX_FETCH_STATUS_CODES = {
    "S_UNATTEMPTED": 0,
    "S_DOMAIN_UNRESOLVABLE": -1,
    "S_CONNECT_FAILED": -2,
    "S_CONNECT_LOST": -3,
    "S_TIMEOUT": -4,
    "S_RUNTIME_EXCEPTION": -5,
    "S_DOMAIN_PREREQUISITE_FAILURE": -6,
    "S_UNFETCHABLE_URI": -7,
    "S_TOO_MANY_RETRIES": -8,
    "S_DEFERRED": -50,
    "S_UNQUEUEABLE": -60,
    "S_ROBOTS_PREREQUISITE_FAILURE": -61,
    "S_OTHER_PREREQUISITE_FAILURE": -62,
    "S_PREREQUISITE_UNSCHEDULABLE_FAILURE": -63,
    "S_SERIOUS_ERROR": -3000,
    "S_DEEMED_CHAFF": -4000,
    "S_TOO_MANY_LINK_HOPS": -4001,
    "S_TOO_MANY_EMBED_HOPS": -4002,
    "S_OUT_OF_SCOPE": -5000,
    "S_BLOCKED_BY_USER": -5001,
    "S_BLOCKED_BY_CUSTOM_PROCESSOR": -5002,
    "S_BLOCKED_BY_QUOTA": -5003,
    "S_BLOCKED_BY_RUNTIME_LIMIT": -5004,
    "S_DELETED_BY_USER": -6000,
    "S_PROCESSING_THREAD_KILLED": -7000,
    "S_ROBOTS_PRECLUDED": -9998,
    "S_DNS_SUCCESS": 1,
    "S_GETBYNAME_SUCCESS": 1001,
}
HERITRIX_DOCUMENTED = {"EMPTY_RESPONSE": -404}

# NetarchiveSuite's enumerations (JobStatus, StopReason), by name and number
NAS_JOB_STATUS = ["NEW", "SUBMITTED", "STARTED", "DONE", "FAILED", "RESUBMITTED", "FAILED_REJECTED"]
NAS_STOP_REASON = [
    "DOWNLOAD_COMPLETE",
    "OBJECT_LIMIT",
    "SIZE_LIMIT",
    "CONFIG_SIZE_LIMIT",
    "DOWNLOAD_UNFINISHED",
    "CONFIG_OBJECT_LIMIT",
    "TIME_LIMIT",
]


def test_fetch_status_names_and_numbers_are_heritrix_s() -> None:
    for member in FetchStatus:
        expected = HERITRIX_FETCH_STATUS_CODES.get(f"S_{member.name}")
        if expected is None:
            expected = HERITRIX_DOCUMENTED[member.name]
        assert member.value == expected, member
        assert member.label and member.__doc__  # every code has words for the reports


def test_crawl_log_writes_the_codes_as_heritrix_does() -> None:
    """An enum member in a crawl.log line is the bare number, right-aligned in 5 characters."""
    from crawler.crawllog_writer import LogEntry, format_line

    when = dt.datetime(2026, 11, 22, 10, 15, 2, 123000, tzinfo=dt.UTC)
    entry = LogEntry(FetchStatus.BLOCKED_BY_QUOTA, "http://a.test/", "L", annotations=["Q:k"])
    entry.when = when
    assert format_line(entry).startswith("2026-11-22T10:15:02.123Z -5003          - ")
    entry.status = FetchStatus.ROBOTS_PREREQUISITE_FAILURE
    assert format_line(entry).startswith("2026-11-22T10:15:02.123Z   -61          - ")


def test_netarchivesuite_enumerations() -> None:
    assert [(m.value, m.name) for m in JobStatus] == list(enumerate(NAS_JOB_STATUS))
    assert [(m.value, m.name) for m in StopReason][:7] == list(enumerate(NAS_STOP_REASON))
    assert StopReason.STOPPED_BY_OPERATOR == 7  # harvestflow's own, after NetarchiveSuite's
    assert {JobStatus.SUBMITTED, JobStatus.STARTED} == RUNNING
    assert StopReason.DOWNLOAD_COMPLETE not in LIMITS
    assert StopReason.DOWNLOAD_UNFINISHED not in LIMITS
    assert JobStatus.name_of(9) == "9" and StopReason.name_of(3) == "CONFIG_SIZE_LIMIT"


@pytest.mark.services
def test_enums_match_the_harvest_database(db_engine: sa.Engine) -> None:
    """The migrated schema's CHECK constraints, forward-only trigger and channels."""
    with db_engine.connect() as conn:
        checks: dict[str, str] = dict(
            conn.execute(
                sa.text(
                    "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint"
                    " WHERE conname IN ('jobs_status_check', 'historyinfo_stopreason_check')"
                )
            ).all()
        )
        trigger = conn.execute(
            sa.text("SELECT prosrc FROM pg_proc WHERE proname = 'jobs_status_forward_only'")
        ).scalar_one()
        rows = conn.execute(sa.text("SELECT name, issnapshot FROM harvestchannel")).all()
        channels: dict[str, bool] = {r.name: r.issnapshot for r in rows}

    def bounds(definition: str) -> tuple[int, int]:
        found = re.fullmatch(r"CHECK \(\(\((\w+) >= (\d+)\) AND \(\1 <= (\d+)\)\)\)", definition)
        assert found, definition
        return int(found.group(2)), int(found.group(3))

    assert bounds(checks["jobs_status_check"]) == (min(JobStatus), max(JobStatus))
    assert [int(s) for s in JobStatus] == list(range(len(JobStatus)))  # no gap the CHECK allows
    assert bounds(checks["historyinfo_stopreason_check"]) == (min(StopReason), max(StopReason))
    assert [int(s) for s in StopReason] == list(range(len(StopReason)))
    back = f"OLD.status = {JobStatus.FAILED_REJECTED:d} AND NEW.status = {JobStatus.FAILED:d}"
    assert back in trigger  # the one move back NetarchiveSuite allows
    # the seeded channels route by priority; harvestflow's own names are not among them
    assert channels == {"LARGE": True, "CIBLEE": False}
    assert not set(channels) & {c.value for c in Channel}
    assert [p.value for p in ChannelPriority] == ["high", "low"]


# --- no bare literals ---------------------------------------------------------------------------

SOURCE_DIRS = PLATFORM_PACKAGES
ENUM_HOMES = {
    "harvestflow/formats/fetch_status.py",
    "harvestflow/formats/job_status.py",
    "harvestflow/formats/stop_reasons.py",
    "crawler/state.py",  # the crawler's own frontier states (FrontierState)
}
# a status/stop-reason column compared with a number inside SQL text
SQL_LITERAL = re.compile(
    r"\b(?:status|stopreason|stop_reason)\s*(?:=|<>|!=|\bIN\s*\()\s*-?\d", re.IGNORECASE
)
VOCAB_NAME = re.compile(r"status|stop", re.IGNORECASE)
COMPARE = {"==", "!=", "<", "<=", ">", ">=", "in"}
# the Heritrix codes no other number in the code base is likely to be (-1..-8 are ordinary
# indexes and "unlimited"; comparisons with them are caught by the comparison rule)
DISTINCT_CODES = {m.value for m in FetchStatus if m.value <= -50}


def _is_http_status(value: int) -> bool:
    return 100 <= value <= 599


def bare_literals(path: Path, text: str) -> list[str]:
    """``line: reason`` for every vocabulary number written bare in a Python source."""
    found: list[str] = []
    toks = [
        t
        for t in tokenize.generate_tokens(io.StringIO(text).readline)
        if t.type not in (tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT)
    ]
    for i, tok in enumerate(toks):
        if tok.type == tokenize.STRING and SQL_LITERAL.search(tok.string):
            found.append(f"{tok.start[0]}: SQL {SQL_LITERAL.search(tok.string).group(0)!r}")  # type: ignore[union-attr]
        heritrix = tok.type == tokenize.NUMBER and tok.string.isdigit() and i > 0
        if heritrix and toks[i - 1].string == "-" and -int(tok.string) in DISTINCT_CODES:
            found.append(f"{tok.start[0]}: Heritrix code -{tok.string}")
        if tok.string in COMPARE and tok.type in (tokenize.OP, tokenize.NAME):
            start = i
            while start > max(0, i - 6) and toks[start - 1].type != tokenize.NEWLINE:
                start -= 1
            left = " ".join(t.string for t in toks[start:i])
            j = i + 1
            while j < len(toks) and toks[j].string in ("(", "[", "{", "not"):
                j += 1
            sign = -1 if j < len(toks) and toks[j].string == "-" else 1
            j += sign == -1
            if j >= len(toks) or toks[j].type != tokenize.NUMBER or not VOCAB_NAME.search(left):
                continue
            if not toks[j].string.isdigit():
                continue
            value = sign * int(toks[j].string)
            if _is_http_status(value):
                continue
            if tok.string in ("<", "<=", ">", ">=") and value == 0:
                continue  # a sign test (negative: not an HTTP status), not a code
            found.append(f"{tok.start[0]}: {left} {tok.string} {value}")
    return found


MEMBER_NAMES = {
    m.name for enum in (JobStatus, StopReason, FetchStatus, FrontierState) for m in enum
} | {"COMPLETE", "UNFINISHED", "TRAP", "UNFETCHABLE", "DNS_FAILED", "RUNTIME_ERROR"}


def redefinitions(text: str) -> list[str]:
    """A second home for a vocabulary: module-level constants named like members and bound to
    numbers (``DONE = 3``, ``NEW, ... = range(7)``, ``STOP_COMPLETE = 0``), or a number→name
    table (``{0: "NEW", ...}``), or a default stop reason or status given as a bare number."""
    found: list[str] = []
    tree = ast.parse(text)
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        names = [
            n.id.removeprefix("STOP_")
            for t in node.targets
            for n in ast.walk(t)
            if isinstance(n, ast.Name)
        ]
        numbers = [
            n
            for n in ast.walk(node.value)
            if (isinstance(n, ast.Constant) and type(n.value) is int)
            or (isinstance(n, ast.Call) and getattr(n.func, "id", "") == "range")
        ]
        if set(names) & MEMBER_NAMES and numbers:
            found.append(f"{node.lineno}: constant {', '.join(names)}")
    for sub in ast.walk(tree):
        if isinstance(sub, ast.Dict):
            pairs = [
                (k.value, v.value)
                for k, v in zip(sub.keys, sub.values, strict=True)
                if isinstance(k, ast.Constant) and isinstance(v, ast.Constant)
            ]
            if sum(type(k) is int and v in MEMBER_NAMES for k, v in pairs) >= 2:
                found.append(f"{sub.lineno}: number-to-name table")
        if isinstance(sub, ast.Call) and getattr(sub.func, "attr", "") == "get":
            args = sub.args
            if (
                len(args) == 2
                and isinstance(args[0], ast.Constant)
                and VOCAB_NAME.search(str(args[0].value))
                and isinstance(args[1], ast.Constant)
                and type(args[1].value) is int
                and not _is_http_status(args[1].value)
            ):
                found.append(f"{sub.lineno}: default {args[0].value!r} {args[1].value}")
        if isinstance(sub, ast.Call) and _status_function(sub.func):
            # statuses handed to a function by number (``jobs_with_status(conn, (3, 5))``)
            for arg in [*sub.args, *(k.value for k in sub.keywords)]:
                items = arg.elts if isinstance(arg, ast.Tuple | ast.List | ast.Set) else [arg]
                if any(_bare_code(item) for item in items):
                    found.append(f"{sub.lineno}: status number passed to {ast.unparse(sub.func)}")
                    break
    return found


def _status_function(func: ast.expr) -> bool:
    """A function named for statuses (``jobs_with_status``), not an HTTP one."""
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return bool(re.search(r"(?:^|_)status(?:es)?(?:$|_)", name)) and "http" not in name


def _bare_code(node: ast.expr) -> bool:
    """A bare integer (maybe negative) that is not an HTTP status."""
    sign = 1
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node, sign = node.operand, -1
    return (
        isinstance(node, ast.Constant)
        and type(node.value) is int
        and not _is_http_status(sign * node.value)
    )


TEMPLATE_LITERAL = re.compile(r"status\s*(?:==|!=|\bin\b|=)\s*\(?\s*(-?\d+)")


def test_bare_literal_rule_catches_the_old_forms() -> None:
    """The rule below flags the forms the vocabularies replaced (so its silence means something)."""
    old = (
        'rows = conn.execute(sa.text("SELECT 1 FROM jobs WHERE status IN (3, 5)"))\n'
        'if row["status"] == 2:\n    pass\n'
        "if status not in (1, 2):\n    pass\n"
        "ok = status <= -4000 or status == -7\n"
        "CODES = frozenset({-9998, -61})\n"
        'q = " AND hi.stopreason IN (1, 2)"\n'
        "done = stop_by_domain.get(d) == 0\n"
    )
    flagged = bare_literals(Path("x.py"), old)
    assert {int(f.split(":")[0]) for f in flagged} == {1, 2, 4, 6, 7, 8, 9}, flagged
    assert any("== -7" in f for f in flagged) and any("-61" in f for f in flagged), flagged
    table = (
        "NEW, SUBMITTED, STARTED, DONE = range(4)\nSTOP_COMPLETE = 0\nTRAP = -4000\n"
        'NAMES = {0: "NEW", 1: "SUBMITTED"}\nr = info.get("stop_reason", 4)\n'
        "rows = jobs.jobs_with_status(conn, (3, 5))\n"
    )
    assert [f.split(":")[0] for f in redefinitions(table)] == ["1", "2", "3", "4", "5", "6"]
    fine_calls = (
        "X = FetchStatus.TIMEOUT\nPOLL_S = 0.2\nlimit = d.get('max', -1)\n"
        "rows = jobs_with_status(conn, (JobStatus.DONE, JobStatus.RESUBMITTED))\n"
        "write_status(path, {'idle': True})\nhttp_status(404)\n"
    )
    assert redefinitions(fine_calls) == []
    fine = (
        "if response.status == 304 or status <= 0:\n    pass\n"
        "tail = hops[-1:]\nlimit = -1\n"
        'sql = f"status = {JobStatus.DONE:d}"\n'
    )
    assert bare_literals(Path("x.py"), fine) == []


def test_no_bare_vocabulary_literals_in_the_platform() -> None:
    problems: list[str] = []
    for top in SOURCE_DIRS:
        for path in sorted((PROJECT_ROOT / top).rglob("*")):
            rel = path.relative_to(PROJECT_ROOT).as_posix()
            if rel in ENUM_HOMES or "__pycache__" in rel:
                continue
            if path.suffix == ".py":
                text = path.read_text()
                problems += [f"{rel}:{p}" for p in bare_literals(path, text) + redefinitions(text)]
            elif path.suffix == ".html":
                for n, line in enumerate(path.read_text().splitlines(), 1):
                    codes = [int(m.group(1)) for m in TEMPLATE_LITERAL.finditer(line)]
                    if any(not _is_http_status(c) for c in codes):
                        problems.append(f"{rel}:{n}: template {line.strip()!r}")
    assert problems == [], "\n".join(problems)


def test_dag_files_name_channel_priorities_through_the_enum() -> None:
    """The DAG files route crawls by a channel's priority: ChannelPriority's members, not the
    words "high"/"low" written again (a string literal outside a docstring is a second home)."""
    words = {p.value for p in ChannelPriority}
    problems = []
    for path in sorted((PROJECT_ROOT / "dags").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
        }
        problems += [
            f"dags/{path.name}:{node.lineno}: {node.value!r}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and node.value in words and id(node) not in docstrings
        ]
    assert problems == [], "\n".join(problems)
