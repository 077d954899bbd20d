"""One home per concept: each of these has exactly one implementation in envdoctor/, and the others call it.

A second copy drifts: gate's own marker environment once read a PyPy target as CPython while check read it as
PyPy, so the same requirement line was judged one way by gate and the other by check. Each scan below reads
envdoctor/ with ast (nothing is imported) and fails when a second implementation appears outside its home; each
scanner is first run on a planted source, so a scan that can no longer see what it looks for fails loudly
instead of passing.

- the PEP 508 marker environment: built only in envdoctor/facts/platform.py (marker_env / marker_env_for);
"""
from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Iterator, List, Tuple

import pytest

from envdoctor.snapshot import Framework
from tests.cli_run import run
from tests.snapfactory import machine, torch

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "envdoctor"


def _sources() -> Iterator[Tuple[str, str]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8")


def _constants(tree: ast.AST) -> Iterator[ast.Constant]:
    """The string constants of a module that are values, not docstrings."""
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node


# --------------------------------------------------------------------------- the marker environment

MARKER_HOME = "envdoctor/facts/platform.py"
# the keys only a marker environment spells as whole strings (platform_system and python_version have other uses)
MARKER_KEYS = {"implementation_name", "platform_python_implementation", "implementation_version",
               "python_full_version", "sys_platform", "platform_machine", "os_name", "platform_release"}


def marker_env_builders(path: str, text: str) -> List[str]:
    """Where a module keys a mapping by a marker-environment name (a dict literal's key, a subscript): building or
    filling an environment. A marker text, or a test whether one names a key, is not one."""
    keys: List[ast.expr] = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Dict):
            keys.extend(k for k in node.keys if k is not None)
        elif isinstance(node, ast.Subscript):
            keys.append(node.slice)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
            keys.extend(ast.Constant(kw.arg, lineno=kw.value.lineno) for kw in node.keywords if kw.arg)
    return [f"{path}:{k.lineno}: {k.value!r}" for k in keys
            if isinstance(k, ast.Constant) and isinstance(k.value, str) and k.value in MARKER_KEYS]


def test_the_marker_scan_sees_a_planted_second_environment():
    planted = 'def env(snap):\n    """implementation_name"""\n    return {"implementation_name": "cpython"}\n'
    assert marker_env_builders("planted.py", planted) == ["planted.py:3: 'implementation_name'"]
    assert marker_env_builders("planted.py", 'env = {}\nenv["sys_platform"] = "linux"\n') == ["planted.py:2: 'sys_platform'"]
    assert marker_env_builders("planted.py", 'env = dict(os_name="nt")\n') == ["planted.py:1: 'os_name'"]
    # a marker *text* naming the keys, or a test whether one does, is not an environment
    assert marker_env_builders("planted.py", 'M = \'sys_platform == "linux"\'\nX = "os_name" in M\n') == []


def test_one_marker_environment():
    found = [hit for path, text in _sources() if path != MARKER_HOME for hit in marker_env_builders(path, text)]
    assert not found, f"build marker environments with {MARKER_HOME} (marker_env / marker_env_for): {found}"
    assert marker_env_builders(MARKER_HOME, (ROOT / MARKER_HOME).read_text(encoding="utf-8"))  # the home is seen


def _pypy_or_cpython_snapshot(tmp_path: Path, implementation: str) -> Path:
    # torchvision asks for another torch only on PyPy: check's ED520 fires exactly where the marker holds
    vision = Framework(name="torchvision", distribution="torchvision", version="0.16.2",
                       requires=['torch==2.0.1; implementation_name == "pypy"'])
    snap = machine(driver="535.104.05", driver_cuda="12.2", gpus=["NVIDIA A100-SXM4-80GB:8.0"],
                   frameworks=[torch("2.1.2+cu121", cuda="12.1", cudnn="8.9.2"), vision])
    snap.python.implementation = implementation
    path = tmp_path / f"{implementation}.json"
    path.write_text(json.dumps(snap.to_dict()), encoding="utf-8")
    return path


@pytest.mark.parametrize("implementation, holds", [("pypy", True), ("cpython", False)])
def test_gate_and_check_read_a_markers_implementation_alike(tmp_path, implementation, holds):
    snap = _pypy_or_cpython_snapshot(tmp_path, implementation)
    req = tmp_path / "requirements.txt"
    req.write_text('torch==2.0.1 ; implementation_name == "pypy"\n', encoding="utf-8")
    gate = run("gate", "--offline", "--fresh", "--format", "json", "--snapshot", str(snap), str(req))
    check = run("check", "--format", "json", "--snapshot", str(snap))
    assert gate.returncode in (0, 1) and check.returncode in (0, 1), (gate.stderr, check.stderr)
    planned = [(p["name"], p["version"]) for p in json.loads(gate.stdout)["inputs"][0]["packages"]]
    gate_holds = ("torch", "2.0.1") in planned
    check_holds = "ED520" in [f["id"] for f in json.loads(check.stdout)["findings"]]
    assert gate_holds == check_holds == holds, (implementation, planned, check.stdout[-2000:])


def test_a_stated_target_is_cpython_in_every_command():
    # stated facts name no implementation: gate's target and check's marker environment both say CPython
    from envdoctor.facts.platform import marker_env
    from envdoctor.gate.plan import stated_snapshot, target_of

    snap = stated_snapshot(None, python="3.12", platform="linux-aarch64", cpu=True)
    assert target_of(snap).env == marker_env(snap)
    assert target_of(snap).env["implementation_name"] == "cpython"
