"""House rules a reader of the code relies on, checked over the whole tree.

Comments and docstrings say why; they never cite a tracker's issue number (the word and a number, with or without "#"): the tracker is
not part of the code and no reader of it can follow the reference. The scan reads comments with tokenize and
docstrings with ast (nothing is imported), the documentation and the data files as text; it is tested on planted
sources first, so a scanner that reads nothing fails instead of passing.
"""
from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path
from typing import Iterator, List, Tuple

ROOT = Path(__file__).resolve().parents[1]

# The word (singular or plural, any case) then a number, with or without a space or "#" between -- not a URL's
# "/issues/<number>" (an upstream report, which is a source) and not the word followed by another word.
CITATION = re.compile(r"(?<![/\w])issues?\s?#?\d+\b", re.IGNORECASE)

PY_TREES = ("envdoctor", "tests", "benchmarks", "dev")
TEXT_SUFFIXES = {".md", ".toml", ".yml", ".yaml", ".txt", ".cfg"}
TEXT_TREES = ("docs", "matrices", "templates", ".ci")
TEXT_FILES = ("README.md", "pyproject.toml", "action.yml")
SKIP = ("tests/fixtures/",)  # verbatim copies of other people's files


def _docstrings(tree: ast.AST) -> Iterator[Tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                yield body[0].lineno, body[0].value.value


def citations_in_python(source: str) -> List[Tuple[int, str]]:
    """(line, text) of every comment or docstring in `source` that cites an issue number."""
    found: List[Tuple[int, str]] = []
    block: List[Tuple[int, str]] = []  # comments on consecutive lines: a citation may be split across two

    def end_block() -> None:
        joined = " ".join(text.lstrip("#").strip() for _, text in block)
        if block and CITATION.search(joined):
            found.append((block[0][0], joined))
        block.clear()

    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            if block and tok.start[0] != block[-1][0] + 1:
                end_block()
            block.append((tok.start[0], tok.string))
    end_block()
    for line, text in _docstrings(ast.parse(source)):
        joined = " ".join(part.strip() for part in text.splitlines())
        if CITATION.search(joined):
            found.append((line, joined[:200]))
    return found


def citations_in_text(text: str) -> List[Tuple[int, str]]:
    return [(i, line.strip()) for i, line in enumerate(text.splitlines(), 1) if CITATION.search(line)]


def _tracked(trees: Tuple[str, ...], suffixes: Tuple[str, ...]) -> Iterator[Path]:
    for tree in trees:
        base = ROOT / tree
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            rel = path.relative_to(ROOT).as_posix()
            if path.is_file() and (path.suffix in suffixes or (tree == ".ci" and not path.suffix)) \
                    and not rel.startswith(SKIP) and ".ci-venv" not in rel and "__pycache__" not in rel:
                yield path


def test_the_scanner_finds_planted_citations():
    planted = (
        '"""Module docstring (issue 18)."""\n'
        "x = 1  # kept for Issue #13\n"
        "def f():\n"
        '    """Line one.\n\n    See ISSUE16 for why."""\n'
        "# https://github.com/pytorch/pytorch/issues/30532 is a source, not a citation\n"
        "y = 'issue 5 in a plain string is data'\n"
        "z = 2  # a cost measured in the tracker's (issue\n"
        "# 18) thread\n"
        "# 18 lines\n"
    )
    lines = [line for line, _ in citations_in_python(planted)]
    assert lines == [2, 9, 1, 4], citations_in_python(planted)
    assert citations_in_text("ok\nsee issues 11 and 13\n") == [(2, "see issues 11 and 13")]
    assert citations_in_text("an issue with the driver, /issues/283\n") == []


def test_no_comment_or_docstring_cites_an_issue_number():
    bad = []
    scanned = 0
    for path in _tracked(PY_TREES, (".py",)):
        scanned += 1
        for line, text in citations_in_python(path.read_text(encoding="utf-8")):
            bad.append(f"{path.relative_to(ROOT)}:{line}: {text}")
    assert scanned > 200, scanned  # the tree was really read
    assert not bad, "say why instead of citing the tracker:\n" + "\n".join(bad)


def test_no_document_or_data_file_cites_an_issue_number():
    bad = []
    paths = list(_tracked(TEXT_TREES, tuple(TEXT_SUFFIXES))) + [ROOT / f for f in TEXT_FILES if (ROOT / f).is_file()]
    assert len(paths) > 20, len(paths)
    for path in paths:
        for line, text in citations_in_text(path.read_text(encoding="utf-8", errors="replace")):
            bad.append(f"{path.relative_to(ROOT)}:{line}: {text}")
    assert not bad, "\n".join(bad)
