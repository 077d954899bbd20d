"""Knowledge lives in matrices/ and is read by code. A data file, a kind of row in it ([[release]],
[[fact]] ...) or a single fact (an incompatibilities.toml [[fact]] key) that no code under envdoctor/ names is
either dead data or knowledge that only docs need: it belongs in docs/, not in matrices/.

"Names" means: the string appears as a string constant in envdoctor's code (docstrings and comments do not count,
since a comment that mentions a key does not read it)."""
from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Dict, Iterator, List, Set, Tuple

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "envdoctor"
DATA = PKG / "matrices" if (PKG / "matrices").is_dir() else ROOT / "matrices"


def _docstring_ids(tree: ast.AST) -> Set[int]:
    ids: Set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def code_strings(pkg: Path = PKG) -> Set[str]:
    """Every string constant in the package's code (f-string parts included), docstrings left out."""
    out: Set[str] = set()
    for path in sorted(pkg.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        docs = _docstring_ids(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                out.add(node.value)
    return out


def _data_files() -> List[Path]:
    files = sorted(DATA.glob("*.toml"))
    assert files, f"no matrices in {DATA}"
    return files


def _tables() -> Iterator[Tuple[str, str, List[dict]]]:
    for path in _data_files():
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        for kind, rows in data.items():
            if isinstance(rows, list) and rows and all(isinstance(r, dict) for r in rows):
                yield path.stem, kind, rows


@pytest.fixture(scope="module")
def strings() -> Set[str]:
    return code_strings()


def _named(name: str, strings: Set[str]) -> bool:
    return name in strings or any(s.startswith(name + ".") or s.endswith("/" + name) for s in strings)


def test_every_data_file_is_named_by_code(strings: Set[str]) -> None:
    unread = [p.name for p in _data_files() if not _named(p.stem, strings)]
    assert not unread, f"matrices files that no code under envdoctor/ names: {unread}"


def test_every_kind_of_row_is_named_by_code(strings: Set[str]) -> None:
    unread = [f"{table}.toml [[{kind}]]" for table, kind, _rows in _tables() if kind not in strings]
    assert not unread, f"kinds of rows that no code under envdoctor/ names: {unread}"


def test_every_single_fact_is_read_by_code(strings: Set[str]) -> None:
    keys: Dict[str, str] = {}
    for table, kind, rows in _tables():
        if kind == "fact":
            keys.update({r["key"]: table for r in rows})
    assert keys, "no [[fact]] rows found"
    unread = sorted(k for k in keys if k not in strings)
    assert not unread, ("[[fact]] keys that no code reads (use them with Matrices.incompatibility(key) or move "
                        f"them to docs/matrices.md with their source): {unread}")


def test_the_scan_sees_code_not_docstrings(tmp_path: Path) -> None:
    """The check itself: a key in a docstring or a comment is not read; a key in a call is."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "a.py").write_text('"""mentions doc-only-key"""\n# comment-key\n'
                              'def f(m):\n    """also-doc-key"""\n'
                              '    return m.incompatibility("read-key"), f"x{m}y-key"\n')
    found = code_strings(pkg)
    assert "read-key" in found
    assert not {"doc-only-key", "also-doc-key", "comment-key"} & found
