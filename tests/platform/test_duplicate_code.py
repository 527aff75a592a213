"""No block of six or more lines is shared between two modules of the tree.

Each shared block is a concept written twice, i.e. a place where two parts of the archive can
come to disagree: shared code belongs in the core (``harvestflow``) or in the stage that owns
it. The check is a small clone detector of our own (no GPL tool imported): every Python file of
the packages is reduced to its meaningful lines, normalised (indentation and runs of spaces
dropped; blank lines, comments, docstrings, import statements and function signatures left
out — a wrapper repeats its callee's parameters — as are lines of brackets alone, which carry
nothing; pylint's similarity checker skips the same by default), and every window of
:data:`WINDOW` consecutive
such lines is hashed. A hash found in two packages is a shared block; overlapping windows are
reported as one block, with both places. Two modules of one package count as much as two
packages: a near-copy inside a package drifts just the same.
"""

from __future__ import annotations

import ast
import hashlib
import io
import re
import tokenize
from collections import defaultdict
from pathlib import Path

from harvestflow.settings import PROJECT_ROOT
from tests.support.source_tree import PLATFORM_PACKAGES, python_files

PACKAGES = PLATFORM_PACKAGES
WINDOW = 6
_BRACKETS_ONLY = re.compile(r"^[\)\]\}\(\[\{,:;\s]*$")
_SPACES = re.compile(r"\s+")


def _docstring_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                end = body[0].end_lineno or body[0].lineno
                lines.update(range(body[0].lineno, end + 1))
    return lines


def _import_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


def _signature_lines(tree: ast.AST) -> set[int]:
    """A function's ``def`` line(s) up to its body: a wrapper repeats its callee's signature."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lines.update(range(node.lineno, node.body[0].lineno))
    return lines


def _comment_free(source: str) -> list[str]:
    """The source's lines with comments removed (by the tokenizer: ``#`` in strings stays)."""
    lines = source.splitlines()
    cuts: dict[int, int] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            cuts[tok.start[0]] = tok.start[1]
    return [line[: cuts[i]] if i in cuts else line for i, line in enumerate(lines, 1)]


def normalised_lines(source: str) -> list[tuple[int, str]]:
    """(line number, normalised text) of the lines that count, in order."""
    tree = ast.parse(source)
    skip = _docstring_lines(tree) | _import_lines(tree) | _signature_lines(tree)
    out = []
    for number, line in enumerate(_comment_free(source), 1):
        text = _SPACES.sub(" ", line).strip()
        if number in skip or not text or _BRACKETS_ONLY.match(text):
            continue
        out.append((number, text))
    return out


def shared_blocks(
    root: Path, packages: tuple[str, ...] = PACKAGES, window: int = WINDOW
) -> list[tuple[str, int, int, str, int, int]]:
    """Blocks of ``window`` or more normalised lines found in two modules.

    Each is (file A, first line, last line, file B, first line, last line), A < B.
    """
    windows: dict[bytes, list[tuple[str, int, int]]] = defaultdict(list)
    for path, rel in python_files(packages, root):
        lines = normalised_lines(path.read_text(encoding="utf-8"))
        for i in range(len(lines) - window + 1):
            chunk = lines[i : i + window]
            digest = hashlib.sha1("\n".join(t for _, t in chunk).encode()).digest()
            windows[digest].append((rel, chunk[0][0], chunk[-1][0]))
    # pairs of places in different modules, each window once
    pairs: dict[tuple[str, str], list[tuple[int, int, int, int]]] = defaultdict(list)
    for places in windows.values():
        for a in places:
            for b in places:
                if a[0] < b[0]:
                    pairs[(a[0], b[0])].append((a[1], a[2], b[1], b[2]))
    blocks = []
    for (file_a, file_b), spans in sorted(pairs.items()):
        spans.sort()
        start_a, end_a, start_b, end_b = spans[0]
        for sa, ea, sb, eb in spans[1:]:
            if sa <= end_a + 1 and sb <= end_b + 1 and sb >= start_b:  # overlapping windows
                end_a, end_b = max(end_a, ea), max(end_b, eb)
                continue
            blocks.append((file_a, start_a, end_a, file_b, start_b, end_b))
            start_a, end_a, start_b, end_b = sa, ea, sb, eb
        blocks.append((file_a, start_a, end_a, file_b, start_b, end_b))
    return blocks


def test_the_detector_finds_a_block_moved_between_packages(tmp_path: Path) -> None:
    body = "\n".join(f"    total = total + {i}  # step {i}" for i in range(7))
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    (tmp_path / "one" / "a.py").write_text(
        f"import os\n\ndef f(total):\n{body}\n    return total\n"
    )
    (tmp_path / "two" / "b.py").write_text(
        f'"""Doc."""\nimport sys\n\n\ndef g(total):\n    # a comment\n{body}\n    return total\n'
    )
    (tmp_path / "two" / "c.py").write_text("def h(x):\n" + body.replace("total", "x") + "\n")
    found = shared_blocks(tmp_path, ("one", "two"))
    assert found == [("one/a.py", 4, 11, "two/b.py", 7, 14)]
    assert shared_blocks(tmp_path, ("one", "two"), window=9) == []


def test_no_block_of_six_lines_is_shared_between_packages() -> None:
    found = shared_blocks(PROJECT_ROOT)
    assert not found, (
        f"{len(found)} block(s) of {WINDOW}+ lines shared between packages; move the code to "
        "the core (harvestflow) or to the stage that owns it:\n"
        + "\n".join(f"{a}:{sa}-{ea} = {b}:{sb}-{eb}" for a, sa, ea, b, sb, eb in found)
    )
