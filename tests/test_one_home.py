"""One home per concept: each of these has exactly one implementation in envdoctor/, and the others call it.

A second copy drifts: gate's own marker environment once read a PyPy target as CPython while check read it as
PyPy, so the same requirement line was judged one way by gate and the other by check. Each scan below reads
envdoctor/ with ast (nothing is imported) and fails when a second implementation appears outside its home; each
scanner is first run on a planted source, so a scan that can no longer see what it looks for fails loudly
instead of passing.

- the PEP 508 marker environment: built only in envdoctor/facts/platform.py (marker_env / marker_env_for);
- the platform keys and what each means (system, machine, tags, uv's name, which keys the tables and --platform
  use): listed only in envdoctor/facts/platform.py (platform_facts, BUILD_PLATFORMS, STATED_PLATFORMS ...);
- parsing a version: only envdoctor/facts/versions.py tries Version(...) and catches its failure (parse_version);
"""
from __future__ import annotations

import ast
import json
import subprocess
import sys
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


# --------------------------------------------------------------------------- the platform key

PLATFORM_HOME = "envdoctor/facts/platform.py"


def _platform_keys() -> frozenset:
    from envdoctor.facts import platform

    return frozenset(platform.TABLE_PLATFORMS) | {"linux-ppc64le", "win-arm64"}  # platform_key's others


def platform_tables(path: str, text: str) -> List[str]:
    """Where a module lists platform keys itself (a tuple, list, set or dict literal naming two or more), or spells
    a target in uv's words: a second table of which platforms there are, or of what one of them means."""
    keys = _platform_keys()
    out = []
    for node in ast.walk(ast.parse(text)):
        items: List[ast.expr] = []
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            items = list(node.elts)
        elif isinstance(node, ast.Dict):
            items = [k for k in node.keys if k is not None]
        named = {str(i.value) for i in items if isinstance(i, ast.Constant) and i.value in keys}
        if len(named) >= 2:
            out.append(f"{path}:{getattr(node, 'lineno', 0)}: {sorted(named)}")
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                "-pc-windows-msvc" in node.value or "-apple-darwin" in node.value or "-manylinux_{" in node.value):
            out.append(f"{path}:{node.lineno}: {node.value!r}")
    return out


def test_the_platform_scan_sees_a_planted_second_table():
    planted = ('PLATFORMS = ("linux-x86_64", "win-amd64")\n'
               'def uv(p):\n    return {"win-amd64": "x86_64-pc-windows-msvc", "macos-arm64": "a"}.get(p)\n'
               'def glibc(p):\n    return p in ["linux-aarch64", "wsl2"]\n')
    found = platform_tables("planted.py", planted)
    assert sorted(int(f.split(":")[1]) for f in found) == [1, 3, 3, 5], found
    # one key compared on its own is a rule about that platform, not a table of them
    assert platform_tables("planted.py", 'X = p == "win-amd64"\nY = rel.gpu_on("macos-arm64")\n') == []


def test_one_platform_table():
    found = [hit for path, text in _sources() if path != PLATFORM_HOME for hit in platform_tables(path, text)]
    assert not found, f"take platform keys and their facts from {PLATFORM_HOME}: {found}"
    assert platform_tables(PLATFORM_HOME, (ROOT / PLATFORM_HOME).read_text(encoding="utf-8"))  # the home is seen


def test_the_platform_home_stays_light_for_every_start():
    # target_options (imported by every `envdoctor` start, --help too) takes --platform's choices from the home:
    # the home imports no packaging until a version is read
    code = ("import sys, envdoctor.target_options as t, envdoctor.facts.platform as p\n"
            "assert t.PLATFORM_CHOICES == p.STATED_PLATFORMS\n"
            "print(sorted(m for m in sys.modules if m == 'packaging' or m.startswith('packaging.')))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(ROOT), timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", (proc.stdout, proc.stderr)


# --------------------------------------------------------------------------- the version parser

VERSION_HOME = "envdoctor/facts/versions.py"
_CAUGHT = {"InvalidVersion", "ValueError", "Exception", "BaseException"}


def _handler_names(handler: ast.ExceptHandler) -> set:
    if handler.type is None:
        return {"BaseException"}  # a bare except
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return {t.id if isinstance(t, ast.Name) else t.attr if isinstance(t, ast.Attribute) else "" for t in types}


def _calls_in(body: List[ast.stmt], name: str) -> bool:
    """Whether these statements call `name(...)` themselves (a function defined in them is its own scope)."""
    todo: List[ast.AST] = list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Name) and f.id == name) or (isinstance(f, ast.Attribute) and f.attr == name):
                return True
        todo.extend(ast.iter_child_nodes(node))
    return False


def version_parsers(path: str, text: str) -> List[str]:
    """Where a module parses a version itself: a try that calls Version(...) and catches its failure."""
    return [f"{path}:{node.lineno}" for node in ast.walk(ast.parse(text))
            if isinstance(node, ast.Try) and any(_handler_names(h) & _CAUGHT for h in node.handlers)
            and _calls_in(node.body, "Version")]


def test_the_version_scan_sees_a_planted_second_parser():
    planted = ("from packaging.version import InvalidVersion, Version\n"
               "def a(t):\n    try:\n        return Version(t)\n    except InvalidVersion:\n        return None\n"
               "def b(t):\n    try:\n        return packaging.version.Version(t.strip())\n    except (TypeError, ValueError):\n"
               "        return None\n"
               "def c(t):\n    try:\n        v = Version(t)\n    except:  # noqa: E722\n        v = None\n    return v\n")
    assert version_parsers("planted.py", planted) == ["planted.py:3", "planted.py:8", "planted.py:13"]
    # a try around something else that happens to raise InvalidVersion (a wheel file name) is not a parser
    other = ("def d(f):\n    try:\n        return parse_wheel_filename(f)\n    except (InvalidWheelFilename, "
             "InvalidVersion):\n        return None\n")
    assert version_parsers("planted.py", other) == []


def test_one_version_parser():
    found = [hit for path, text in _sources() if path != VERSION_HOME for hit in version_parsers(path, text)]
    assert not found, f"parse versions with {VERSION_HOME} (parse_version): {found}"
    assert version_parsers(VERSION_HOME, (ROOT / VERSION_HOME).read_text(encoding="utf-8"))  # the home is seen
