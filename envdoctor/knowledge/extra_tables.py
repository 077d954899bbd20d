"""Typed rows of two curated tables the knowledge layer does not refresh: known-broken releases
(matrices/known_broken.toml) and the system CUDA runtime libraries a build asks the loader for
(matrices/system_runtime.toml).

Each row is frozen and carries ``source`` and ``verified`` like the other tables. A row that does not parse
(a bad specifier, an unknown severity or stage, a missing field) is left out and named in the table's
``problems``; tests require the bundled tables to have none.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from envdoctor.facts.versions import canonical_name  # not packaging.utils: it imports packaging.tags (start-up)
from envdoctor.records import dataclass, field

STAGES = ("run", "install")
SEVERITIES = ("error", "warning")
FAMILIES = ("cudart", "cublas", "cudnn")


@dataclass(frozen=True)
class KnownBroken:
    id: str
    dists: Tuple[str, ...]  # canonical distribution names
    versions: SpecifierSet
    platforms: Tuple[str, ...]  # matrices platform keys; () = every platform
    extra: str  # "" = whatever was installed
    stage: str  # run | install
    gpu_only: bool  # only a machine with a usable NVIDIA GPU is hurt
    severity: str
    symptom: str
    fix: str
    source: str
    verified: str

    def applies_to(self, dist: str, version: Any) -> bool:
        from envdoctor.knowledge.tables import parse_version

        v = parse_version(version)
        if v is None or str(canonical_name(dist)) not in self.dists:
            return False
        public = parse_version(v.public)
        return public is not None and self.versions.contains(public, prereleases=True)


@dataclass(frozen=True)
class SystemLibrary:
    family: str  # cudart | cublas | cudnn
    series: str  # "11" (every 11.x) or "10.1"
    linux: str  # soname; "" = not recorded
    match: str  # version prefix of a real file that provides the soname
    windows: str  # DLL name; "" = not recorded
    source: str
    verified: str

    def serves(self, version: Optional[str]) -> bool:
        """Is this the row for a build made with `version` ("11.2" -> series "11"; "10.1" -> "10.1")?"""
        parts = str(version or "").split(".")
        want = self.series.split(".")
        return bool(version) and parts[:len(want)] == want


@dataclass
class Table:
    rows: List[Any] = field(default_factory=list)
    problems: List[str] = field(default_factory=list)


def _read(name: str, folder: Optional[str] = None) -> Dict[str, Any]:
    from envdoctor.knowledge.load import bundled_dir, parse_toml_cached

    path: Path = (Path(folder) if folder else bundled_dir()) / name
    try:
        return parse_toml_cached(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _text(row: Dict[str, Any], key: str, required: bool = True) -> str:
    value = row.get(key, "")
    if not isinstance(value, str) or (required and not value.strip()):
        raise ValueError(f"{key} missing or not text")
    return value.strip()


def _known_broken_row(row: Dict[str, Any]) -> KnownBroken:
    dists = row.get("dists")
    platforms = row.get("platforms", [])
    if not isinstance(dists, list) or not dists or not all(isinstance(d, str) for d in dists):
        raise ValueError("dists must be a non-empty list of names")
    if not isinstance(platforms, list) or not all(isinstance(p, str) for p in platforms):
        raise ValueError("platforms must be a list of platform keys")
    try:
        versions = SpecifierSet(_text(row, "versions"))
    except InvalidSpecifier as exc:
        raise ValueError(f"versions: {exc}") from None
    stage, severity, gpu_only = _text(row, "stage"), _text(row, "severity"), row.get("gpu_only")
    if not isinstance(gpu_only, bool):
        raise ValueError("gpu_only must be true or false")
    if stage not in STAGES:
        raise ValueError(f"stage {stage!r} is not one of {', '.join(STAGES)}")
    if severity not in SEVERITIES:
        raise ValueError(f"severity {severity!r} is not one of {', '.join(SEVERITIES)}")
    return KnownBroken(id=_text(row, "id"), dists=tuple(str(canonical_name(d)) for d in dists), versions=versions,
                       platforms=tuple(platforms), extra=_text(row, "extra", required=False), stage=stage,
                       gpu_only=gpu_only, severity=severity, symptom=_text(row, "symptom"), fix=_text(row, "fix"),
                       source=_text(row, "source"), verified=_text(row, "verified"))


def _system_library_row(row: Dict[str, Any]) -> SystemLibrary:
    family = _text(row, "family")
    if family not in FAMILIES:
        raise ValueError(f"family {family!r} is not one of {', '.join(FAMILIES)}")
    lib = SystemLibrary(family=family, series=_text(row, "series"), linux=_text(row, "linux", required=False),
                        match=_text(row, "match", required=False), windows=_text(row, "windows", required=False),
                        source=_text(row, "source"), verified=_text(row, "verified"))
    if lib.linux and not lib.match:
        raise ValueError("a Linux soname needs the version prefix (match) of the file that provides it")
    return lib


def _table(name: str, kind: str, build, folder: Optional[str] = None) -> Table:
    out = Table()
    for i, row in enumerate(_read(name, folder).get(kind, [])):
        try:
            if not isinstance(row, dict):
                raise ValueError("not a table")
            out.rows.append(build(row))
        except ValueError as exc:
            out.problems.append(f"{name} [[{kind}]] #{i}: {exc}")
    return out


@functools.lru_cache(maxsize=1)
def known_broken() -> Table:
    return _table("known_broken.toml", "release", _known_broken_row)


@functools.lru_cache(maxsize=1)
def system_libraries() -> Table:
    return _table("system_runtime.toml", "library", _system_library_row)
