"""No version tables or version literals in code. What a framework, CUDA, cuDNN or a driver release
supports is knowledge: it lives in matrices/*.toml with a source and a verified note, and code reads it.

The scan walks envdoctor/**/*.py with ast and fails on
- a string constant shaped like a version ("12.4", "2.14.0", "535.104.05", "8.9.2.26"), a specifier on one
  (">=2.14", "==2.5.1,<3"), a CUDA local label ("cu121", "+cu118") or a GPU target ("sm_80", "compute_90a");
- a tuple, list or set of two or more int constants (a version table such as `for major in (13, 12)` or
  `(v.major, v.minor) <= (0, 15)`);
- a comparison of a version part (`.major`, `.minor`, `.micro`, `.cuda_major`, `["major"]`, `.release[i]`) with an
  int constant (`tv.major < 2`, `ref["major"] == 8`),
outside docstrings (prose, examples) and outside envdoctor/smoke/programs/ (those run in other interpreters).
Structural exemptions: int tuples on either side of `+` (padding a release: `v.release + (0, 0)`) and the value of a
tuple-unpacking assignment (`size, start = 0, 1`). Everything else needs an entry in ALLOWED with its reason.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Dict, List, Set, Tuple

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from tests.test_knowledge_read import _docstring_ids

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "envdoctor"
SKIP_DIRS = ("smoke/programs",)

VERSION_SHAPED = re.compile(r"^(\+?cu\d{2,3}|sm_\d{2,3}[af]?|compute_\d{2,3}[af]?"
                            r"|(v|==|>=|<=|~=|!=|<|>)?\s*\d{1,3}\.\d{1,3}(\.\d{1,3}){0,2}(\s*,.*)?)$")

# (path under envdoctor/, the literal as ast.unparse writes it) -> why it is not knowledge
ALLOWED: Dict[Tuple[str, str], str] = {
    ("__init__.py", "'0.1.0'"): "envdoctor's own version",
    ("target_options.py", "'2.35'"): "the documented default glibc of a stated Linux target (docs/target.md, 'glibc'): "
                                     "an assumption the user overrides with --glibc, not a compatibility fact",
    ("formats/sarif.py", "'2.1.0'"): "the SARIF format version the output declares (OASIS SARIF 2.1.0)",
    ("report.py", "'1.0'"): "envdoctor's report JSON schema version (docs/report.md)",
    ("snapshot.py", "'1.0'"): "envdoctor's snapshot JSON schema version (docs/snapshot.md)",
    ("facts/platform.py", "'3.0.0'"): "placeholder python_full_version of a PEP 508 marker environment when the "
                                      "target names no Python (markers are then evaluated for 'some Python 3')",
    ("knowledge/index.py", "'3.12'"): "the Python at which a py3-none wheel's Requires-Dist markers are read when no "
                                      "target Python is given: an evaluation point, not a compatibility claim",
    # lock's --help: examples of the three SPEC forms (exact, series, specifier), each spec's lock_examples. They decide nothing; loading the
    # matrices to render --help would slow every start. test_lock_help_examples_are_releases_the_data_knows keeps
    # each one a release (or a range) the data knows.
    ("frameworks/torch.py", "'2.5.1'"): "--torch help example", ("frameworks/torch.py", "'2.5'"): "--torch help example",
    ("frameworks/torch.py", "'>=2.4,<2.6'"): "--torch help example",
    ("frameworks/tensorflow.py", "'2.16.1'"): "--tensorflow help example", ("frameworks/tensorflow.py", "'2.16'"): "--tensorflow help example",
    ("frameworks/tensorflow.py", "'>=2.15,<2.18'"): "--tensorflow help example",
    ("frameworks/jax.py", "'0.4.30'"): "--jax help example", ("frameworks/jax.py", "'0.4'"): "--jax help example",
    ("frameworks/jax.py", "'>=0.4.26,<0.5'"): "--jax help example",
    ("frameworks/onnxruntime.py", "'1.22.0'"): "--onnxruntime help example", ("frameworks/onnxruntime.py", "'1.22'"): "--onnxruntime help example",
    ("frameworks/onnxruntime.py", "'>=1.20,<1.24'"): "--onnxruntime help example",
    ("frameworks/paddle.py", "'2.6.2'"): "--paddlepaddle help example", ("frameworks/paddle.py", "'2.6'"): "--paddlepaddle help example",
    ("frameworks/paddle.py", "'>=2.5,<2.7'"): "--paddlepaddle help example",
    # int tuples that are not versions
    ("binaries/elf.py", "(1, 2)"): "ELF EI_CLASS / EI_DATA values (32/64-bit, little/big endian)",
    ("outfile.py", "(1, 2)"): "the stdout and stderr file descriptors",
    ("knowledge/index.py", "(404, 410)"): "HTTP statuses that mean 'no such project' on a simple index",
    ("knowledge/index.py", "(99, 99)"): "sort key that puts a wheel without a CPython tag last",
    ("gate/inputs/toml_lines.py", "(3, 11)"): "sys.version_info check for tomllib (the interpreter, not a target)",
    ("gate/sniff.py", "(3, 11)"): "sys.version_info check for tomllib (the interpreter, not a target)",
    ("knowledge/load.py", "(3, 11)"): "sys.version_info check for tomllib (the interpreter, not a target)",
    ("rules/intent.py", "(3, 11)"): "sys.version_info check for tomllib (the interpreter, not a target)",
    ("facts/platform.py", "(17, 28, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40)"):
        "the manylinux_2_N glibc tags uv's --python-platform accepts (the resolver tool's option values, "
        "not a framework or CUDA fact)",
    # comparisons of a version part that are not knowledge about a release
    ("lock/resolve.py", "pv.major != 3"): "input check: --python-version must be a Python 3 version",
    ("rules/hostfacts.py", "nv.major < 2"): "NumPy 2's ABI is ED671's subject; which framework releases are built "
                                            "against it is data (runtime_env.toml [[numpy2]])",
    ("knowledge/matrices.py", "Version(r.version).release[2] <= 9"):
        "reading CUDA's version numbers: an X.Y.Z with Z > 9 is a build number (10.1.243), not an update",
    ("frameworks/jax.py", "plugin.cuda_major == 12"):
        "names CUDA 12's runtime wheel (nvidia-cuda-runtime-cu12) for the plugin row's cuda_runtime pin; the pin "
        "itself is data (jax.toml [[plugin]])",
}


_PARTS = {"major", "minor", "micro", "cuda_major"}


def _version_part(node: ast.AST) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr in _PARTS
    if isinstance(node, ast.Subscript):
        key = node.slice
        return (isinstance(key, ast.Constant) and key.value in _PARTS) or \
            (isinstance(node.value, ast.Attribute) and node.value.attr == "release")
    return False


def _part_compare(node: ast.AST) -> bool:
    if not isinstance(node, ast.Compare):
        return False
    sides = [node.left, *node.comparators]
    return any(_version_part(x) for x in sides) and \
        any(isinstance(x, ast.Constant) and type(x.value) is int for x in sides)


def _int_seq(node: ast.AST) -> bool:
    return (isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(node.elts) >= 2
            and all(isinstance(e, ast.Constant) and type(e.value) is int for e in node.elts))


def literals(pkg: Path = PKG) -> List[Tuple[str, int, str]]:
    """(path under pkg, line, literal) for every version-shaped string and int table outside the exemptions."""
    out: List[Tuple[str, int, str]] = []
    for path in sorted(pkg.rglob("*.py")):
        rel = path.relative_to(pkg).as_posix()
        if any(rel.startswith(d + "/") for d in SKIP_DIRS):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        docs = _docstring_ids(tree)
        exempt: Set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
                exempt.update(id(x) for x in (node.left, node.right) if _int_seq(x))
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Tuple) for t in node.targets):
                exempt.add(id(node.value))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs \
                    and VERSION_SHAPED.match(node.value.strip()):
                out.append((rel, node.lineno, repr(node.value)))
            elif (_int_seq(node) and id(node) not in exempt) or _part_compare(node):
                out.append((rel, getattr(node, "lineno", 0), ast.unparse(node)))
    return out


@pytest.fixture(scope="module")
def found() -> List[Tuple[str, int, str]]:
    return literals()


def test_no_version_literals_in_code(found: List[Tuple[str, int, str]]) -> None:
    bad = [f"envdoctor/{p}:{line}: {lit}" for p, line, lit in found if (p, lit) not in ALLOWED]
    assert not bad, ("version literals / version tables in code: move the knowledge to matrices/*.toml (with source "
                     "and verified) and read it, or add an ALLOWED entry with the reason it is not knowledge:\n"
                     + "\n".join(bad))


def test_every_allowed_entry_is_still_there(found: List[Tuple[str, int, str]]) -> None:
    seen = {(p, lit) for p, _line, lit in found}
    stale = sorted(k for k in ALLOWED if k not in seen)
    assert not stale, f"ALLOWED entries that no longer occur (remove them): {stale}"


def test_the_scan_catches_versions_and_tables(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "smoke" / "programs").mkdir(parents=True)
    (pkg / "a.py").write_text(
        '"""Docstring: CUDA "12.4" and (13, 12) are prose here."""\n'
        'CUDA = "12.4"\nTORCH = "2.14.0"\nDRIVER = "535.104.05"\nCUDNN = "8.9.2.26"\nSPEC = ">=2.14,<3"\n'
        'LABEL = "cu121"\nARCH = "sm_90a"\nWORD = "v"\nTAG = "v2.5.1"\n'
        'def f(v):\n    """(0, 15) in a docstring"""\n    for major in (13, 12):\n        pass\n'
        '    pad = v.release + (0, 0)\n    a, b = 0, 1\n    return (v.major, v.minor) <= (0, 15), f"CUDA {v}.0"\n'
        'def g(v, ref, n):\n    return v.major < 2 or ref["major"] == 8 or v.release[0] >= 12 or len(n) > 2\n',
        encoding="utf-8")
    (pkg / "smoke" / "programs" / "p.py").write_text('X = "12.4"\n', encoding="utf-8")
    got = {lit for _p, _line, lit in literals(pkg)}
    assert got == {"'12.4'", "'2.14.0'", "'535.104.05'", "'8.9.2.26'", "'>=2.14,<3'", "'cu121'", "'sm_90a'",
                   "'v2.5.1'", "(13, 12)", "(0, 15)", "v.major < 2",
                   "ref['major'] == 8", "v.release[0] >= 12"}, got


def test_lock_help_examples_are_releases_the_data_knows() -> None:
    """The allowed help examples stay true: each exact one is a release the data knows, each series and range
    matches one."""
    from envdoctor.frameworks import registry
    from envdoctor.knowledge import load_matrices
    from envdoctor.lock.cli import FW_EXAMPLES

    m = load_matrices()
    for name, (full, short, spec) in FW_EXAMPLES.items():
        known = [Version(v) for v in registry.get(name).known_versions(m)]
        assert Version(full) in known, (name, full)
        assert any(v.release[:2] == Version(short).release[:2] for v in known), (name, short)
        assert any(v in SpecifierSet(spec) for v in known), (name, spec)
