"""What kind of install input a file is, from its content (any name), and the project metadata gate compares with the
target (``requires-python``).

A file is recognised by what it holds, so ``pyproject-cuda.toml``, ``deps.in`` or ``env-gpu.yml`` are read as what
they are; where the content names no kind, the file's name decides (an empty or broken file is read, and its
problem reported, as what its name says), and ``--kind`` overrides both:

* TOML with ``lock-version`` and ``[[packages]]``: a PEP 751 ``pylock``;
* TOML with an integer ``version`` and ``[[package]]``: a ``uv.lock``;
* TOML with ``[project]``, ``[build-system]``, ``[dependency-groups]`` or ``[tool]``: a ``pyproject``;
* a YAML mapping with a top-level ``dependencies:`` (or ``channels:``) key: a conda environment file;
* anything else: a pip requirements file.
"""
from __future__ import annotations

import re
import sys
from typing import Any, Optional, Tuple

from envdoctor.gate.inputs import KINDS, input_kind
from envdoctor.gate.trust import MAX_TOTAL_BYTES

_TOML_TABLE = re.compile(r"^\s*\[{1,2}\s*[A-Za-z0-9_.\-\"']+\s*\]{1,2}\s*(#.*)?$", re.M)
_YAML_TOP = re.compile(r"^(dependencies|channels)\s*:\s*(#.*)?$", re.M)
_REQUIRES_PYTHON = re.compile(r"^[ \t]*requires-python[ \t]*=", re.M)


def _json(text: str) -> bool:
    import json

    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def _toml(text: str) -> Optional[dict]:
    if not _TOML_TABLE.search(text) and not re.search(r"^\s*[A-Za-z0-9_\-]+\s*=", text, re.M):
        return None
    try:
        if sys.version_info >= (3, 11):
            import tomllib
        else:
            import tomli as tomllib
        return tomllib.loads(text)
    except Exception:  # noqa: BLE001 - not TOML (or broken TOML: the name decides, the reader reports it)
        return None


def kind_of(path: str, text: str) -> str:
    """requirements | pyproject | conda | pylock | uv.lock, from the content (the name when the content is silent);
    json for a JSON document (a snapshot or a report handed over by mistake: no install input is JSON)."""
    if len(text) > MAX_TOTAL_BYTES:
        return input_kind(path)  # over the budget of a run: refused by the reader, not parsed here
    if text.lstrip()[:1] in ("{", "[") and _json(text):
        return "json"
    data = _toml(text)
    if data is not None:
        if "lock-version" in data and isinstance(data.get("packages"), list):
            return "pylock"
        if isinstance(data.get("version"), int) and isinstance(data.get("package"), list):
            return "uv.lock"
        if any(k in data for k in ("project", "build-system", "dependency-groups", "tool")):
            return "pyproject"
    if _YAML_TOP.search(text):
        return "conda"
    # the content named no kind: a file named like one kind (environment.yml, pyproject.toml, …) is read as that kind,
    # so its own reader says what is wrong with it, with the line (broken TOML, refused YAML, an empty file)
    return input_kind(path)


def sniff_kinds(paths, kind: Optional[str] = None, read=None) -> dict:
    """{path: kind} for each path (``kind`` forces one; a file that cannot be read keeps its name's kind)."""
    from envdoctor.gate.inputs import read_text_file

    read = read or read_text_file
    out = {}
    for p in paths:
        if kind:
            out[p] = kind
            continue
        try:
            out[p] = kind_of(p, read(p))
        except (OSError, ValueError):
            out[p] = input_kind(p)
    return out


def requires_python(path: str, kind: str, read=None) -> Optional[Tuple[str, int]]:
    """(specifier, line) of a pyproject's ``[project] requires-python`` or a uv.lock / pylock's ``requires-python``."""
    from envdoctor.gate.inputs import read_text_file

    if kind not in ("pyproject", "uv.lock", "pylock"):
        return None
    try:
        text = (read or read_text_file)(path)
    except (OSError, ValueError):
        return None
    data = _toml(text) or {}
    value: Any = (data.get("project") or {}).get("requires-python") if kind == "pyproject" else data.get("requires-python")
    if not isinstance(value, str) or not value.strip():
        return None
    line = 0
    for mm in _REQUIRES_PYTHON.finditer(text):
        line = text.count("\n", 0, mm.start()) + 1
        if kind != "pyproject" or _in_project_table(text, mm.start()):
            break
    return value.strip(), line


def _in_project_table(text: str, pos: int) -> bool:
    heads = [m for m in re.finditer(r"^[ \t]*\[([^\[\]]+)\][ \t]*(#.*)?$", text[:pos], re.M)]
    return bool(heads) and heads[-1].group(1).strip() == "project"


__all__ = ["KINDS", "kind_of", "sniff_kinds", "requires_python"]
