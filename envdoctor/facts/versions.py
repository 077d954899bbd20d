"""Versions, version series, compute capabilities and specifier floors: the one parser of each.

Owns: `parse_version` (a version-like string -> packaging Version, or None), `major_minor` /
`major_minor_version` (the X.Y series of a version: "12.4.1" -> "12.4", "12" -> "12.0"), `normalize_cc` /
`cc_tuple` (a compute capability from "8.6", "86", "sm_86", "compute_90a", (8, 6)), `public` / `local_label` (a
version without / only its local label), `lower_bound` (the floor a specifier sets), and `canonical_name` (a
distribution's PEP 503 name, which the matrices key their rows by). Everything else (matrices, rules, lock, gate,
parsers) imports these: this module is the data layer's leaf.
Pure: no I/O, no envdoctor imports.
"""
from __future__ import annotations

import re
from typing import Optional, Tuple, Union, overload

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from envdoctor.lazyre import lazy_re

__all__ = [
    "canonical_name", "cc_tuple", "local_label", "lower_bound", "major_minor", "major_minor_version", "normalize_cc",
    "parse_version", "public",
]

_SEPARATORS = lazy_re(r"[-_.]+")


def canonical_name(name: Optional[str]) -> str:
    """The PEP 503 normalized name (what packaging.utils.canonicalize_name computes, without importing
    packaging.tags and sysconfig behind it); "" for None."""
    return _SEPARATORS.sub("-", str(name or "").strip()).lower()


def parse_version(value: object) -> Optional[Version]:
    """``Version`` of a version-like string (a local label such as ``+cu121`` is kept); None if unparsable."""
    if value is None:
        return None
    if isinstance(value, Version):
        return value
    text = str(value).strip()
    if not text:
        return None
    try:
        return Version(text)
    except InvalidVersion:
        return None


def parse_specifier(value: object) -> Optional[SpecifierSet]:
    """``SpecifierSet`` of a specifier string (``""``: the empty set, which admits everything); None if unparsable
    or not a string."""
    if not isinstance(value, str):
        return None
    try:
        return SpecifierSet(value)
    except InvalidSpecifier:
        return None


def public(value: object) -> Optional[Version]:
    """The version without its local label ('2.1.2+cu121' -> 2.1.2); None if unparsable."""
    v = parse_version(value)
    return Version(v.public) if v is not None else None


def local_label(value: object) -> Optional[str]:
    """The local label of a version ('2.1.2+cu121' -> 'cu121'); None when it has none or is unparsable."""
    v = parse_version(value)
    return v.local if v is not None and v.local else None


@overload
def major_minor_version(value: Version) -> Version: ...
@overload
def major_minor_version(value: object) -> Optional[Version]: ...


def major_minor_version(value: object) -> Optional[Version]:
    """``Version("12.4")`` for "12.4.1" / "12.4" / "12.4+local"; ``Version("12.0")`` for "12"; None if unparsable."""
    v = parse_version(value)
    if v is None:
        return None
    rel = v.release + (0,)
    return Version(f"{rel[0]}.{rel[1]}")


@overload
def major_minor(value: Version) -> str: ...
@overload
def major_minor(value: object) -> Optional[str]: ...


def major_minor(value: object) -> Optional[str]:
    """``"12.4"`` for "12.4.1" / "12.4" / "2.1.2+cu121"-like versions; "12.0" for "12"; None if unparsable."""
    v = major_minor_version(value)
    return f"{v.major}.{v.minor}" if v is not None else None


_CC_DOTTED = lazy_re(r"^\s*(\d+)\.(\d+)\s*$")
_CC_SM = lazy_re(r"^\s*(?:sm|compute|lto)?_?(\d+?)(\d)[af]?\s*$", re.IGNORECASE)


def normalize_cc(value: object) -> Optional[str]:
    """Compute capability as ``"8.6"`` from ``"8.6"``, ``"86"``, ``"sm_86"``, ``"compute_90a"``, ``(8, 6)``."""
    if value is None:
        return None
    if isinstance(value, (tuple, list)) and len(value) == 2:
        try:
            return f"{int(value[0])}.{int(value[1])}"
        except (TypeError, ValueError):
            return None
    text = str(value).strip()
    m = _CC_DOTTED.match(text)
    if m:
        return f"{int(m.group(1))}.{int(m.group(2))}"
    m = _CC_SM.match(text)
    if m and m.group(1):
        return f"{int(m.group(1))}.{int(m.group(2))}"
    return None


def cc_tuple(value: object) -> Optional[Tuple[int, int]]:
    """(8, 6) for any spelling `normalize_cc` reads; None otherwise."""
    cc = normalize_cc(value)
    if cc is None:
        return None
    a, b = cc.split(".")
    return int(a), int(b)


_FLOOR_OPERATORS = ("==", "===", ">=", "~=", ">")


def lower_bound(specifier: Union[SpecifierSet, str, None]) -> Optional[Version]:
    """The floor a specifier sets: the highest version among its ==, ===, >=, ~= and > clauses (a `>X` clause
    counts as floor X); None when it has none, or for an unparsable specifier."""
    if specifier is None:
        return None
    if not isinstance(specifier, SpecifierSet):
        try:
            specifier = SpecifierSet(str(specifier))
        except InvalidSpecifier:
            return None
    best: Optional[Version] = None
    for s in specifier:
        if s.operator in _FLOOR_OPERATORS and "*" not in s.version:
            v = parse_version(s.version)
            if v is not None and (best is None or v > best):
                best = v
    return best
