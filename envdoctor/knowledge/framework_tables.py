"""Typed rows of the tables of frameworks that are one module each (envdoctor/frameworks/onnxruntime.py,
paddle.py): matrices/onnxruntime.toml and matrices/paddle.toml, read once, the way extra_tables reads its tables.

A row groups releases built alike (same CUDA, cuDNN, Python tags, platforms). A row that does not parse is left
out and named in the table's ``problems``; tests require the bundled tables to have none.
"""
from __future__ import annotations

import functools
from typing import Any, Dict, List, Optional, Tuple

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from envdoctor.facts.platform import BUILD_PLATFORMS
from envdoctor.facts.versions import parse_version
from envdoctor.knowledge.extra_tables import Table, _table, _text
from envdoctor.records import dataclass

PLATFORM_KEYS = BUILD_PLATFORMS  # the keys a row's platforms may name (envdoctor.facts.platform owns them)


@dataclass(frozen=True)
class BuildRow:
    """Releases of one GPU distribution built alike (one ``[[release]]`` row)."""

    versions: Tuple[str, ...]
    cuda: str  # CUDA X.Y the build was made with
    cudnn: str  # exact cuDNN version ("8.6.0"), "" when only the major is stated
    cudnn_major: int
    requires_python: str
    python_tags: Tuple[str, ...]
    platforms: Tuple[str, ...]
    platforms_from: Tuple[Tuple[str, str], ...]  # (platform, first version with wheels for it)
    python_by_version: Tuple[Tuple[str, str], ...]  # (version, Requires-Python) where it differs from the row's
    extras: Tuple[str, ...]
    cudnn_pin: str  # Requires-Dist of the cudnn extra, "" = none
    cc_min: str  # the vendor's stated GPU floor, "" = none stated
    source: str
    verified: str

    @property
    def unverified(self) -> bool:
        return self.verified.upper().startswith("UNVERIFIED")

    def python_for(self, version: str) -> str:
        """The Pythons ``version`` installs on: its Requires-Python, raised to the lowest cpXY tag of its wheels
        (a release whose metadata still allows a Python it ships no wheel for cannot be installed there)."""
        spec = dict(self.python_by_version).get(version, self.requires_python)
        tags = [(int(t[2]), int(t[3:])) for t in self.python_tags if t[:2] == "cp" and t[2:].isdigit() and len(t) > 3]
        if not tags:
            return spec
        low = min(tags)
        floor = f">={low[0]}.{low[1]}"
        if spec and SpecifierSet(spec).contains(f"{low[0]}.{low[1] - 1}") and low[1] > 0:
            return f"{spec},{floor}"
        return spec or floor

    def platforms_for(self, version: str) -> List[str]:
        out = list(self.platforms)
        for plat, first in self.platforms_from:
            if Version(version) >= Version(first) and plat not in out:
                out.append(plat)
        return out


def _spec(value: str, what: str) -> str:
    try:
        SpecifierSet(value)
    except InvalidSpecifier as exc:
        raise ValueError(f"{what}: {exc}") from None
    return value


def _strings(row: Dict[str, Any], key: str, required: bool = True) -> Tuple[str, ...]:
    value = row.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value) or (required and not value):
        raise ValueError(f"{key} must be a {'non-empty ' if required else ''}list of strings")
    return tuple(value)


def _pairs(row: Dict[str, Any], key: str) -> Tuple[Tuple[str, str], ...]:
    value = row.get(key, {})
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ValueError(f"{key} must be a table of strings")
    return tuple(sorted(value.items()))


def _build_row(row: Dict[str, Any]) -> BuildRow:
    versions = _strings(row, "versions")
    bad = next((v for v in (*versions, _text(row, "cuda")) if parse_version(v) is None), None)
    if bad is not None:
        raise ValueError(f"Invalid version: {bad!r}")
    platforms = _strings(row, "platforms")
    platforms_from = _pairs(row, "platforms_from")
    unknown = [p for p in platforms + tuple(p for p, _ in platforms_from) if p not in PLATFORM_KEYS]
    if unknown:
        raise ValueError(f"unknown platform keys {unknown}")
    cudnn = _text(row, "cudnn", required=False)
    major = row.get("cudnn_major", int(cudnn.split(".")[0]) if cudnn else None)
    if not isinstance(major, int):
        raise ValueError("cudnn_major (or cudnn) is required")
    by_version = _pairs(row, "python_by_version")
    for _, spec in by_version:
        _spec(spec, "python_by_version")
    return BuildRow(versions=versions, cuda=_text(row, "cuda"), cudnn=cudnn, cudnn_major=major,
                    requires_python=_spec(_text(row, "requires_python"), "requires_python"),
                    python_tags=_strings(row, "python_tags"), platforms=platforms, platforms_from=platforms_from,
                    python_by_version=by_version, extras=_strings(row, "extras", required=False),
                    cudnn_pin=_text(row, "cudnn_pin", required=False), cc_min=_text(row, "cc_min", required=False),
                    source=_text(row, "source"), verified=_text(row, "verified"))


@functools.lru_cache(maxsize=None)
def build_table(name: str, folder: Optional[str] = None) -> Table:
    """The ``[[release]]`` rows of matrices/``name`` ("onnxruntime.toml", "paddle.toml"), or of ``folder``/``name``
    for a framework registered from outside envdoctor (its table lives beside its module)."""
    return _table(name, "release", _build_row, folder)


def row_for(name: str, version: Any, folder: Optional[str] = None) -> Optional[BuildRow]:
    """The row of ``name`` that lists ``version`` (its public part: "2.6.1.post120" is not 2.6.1)."""
    for row in build_table(name, folder).rows:
        if str(version) in row.versions:
            return row
    return None


def all_versions(name: str, folder: Optional[str] = None) -> List[str]:
    return sorted({v for r in build_table(name, folder).rows for v in r.versions}, key=Version)
