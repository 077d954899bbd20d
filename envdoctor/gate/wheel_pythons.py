"""Compiled packages besides the frameworks, judged offline by the Pythons their wheels cover
(matrices/gate_wheel_pythons.toml, read from the index's own file names).

A line such as ``numpy==1.24.3`` on Python 3.12 installs nothing: no release it allows has a cp312 wheel, and
numpy's source build of that release fails on 3.12. pip then stops the whole install, so the offline planner says so
once (ED803) instead of judging the frameworks the file would have installed. Where a source build might stand in,
nothing is claimed: gate builds nothing, so the line is listed as not judged. Pure: no network, no subprocess.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envdoctor.facts.versions import parse_specifier, parse_version


@dataclass(frozen=True)
class Series:
    package: str
    series: str
    releases: Tuple[Version, ...]
    pythons: Tuple[str, ...]
    abi3_from: Optional[Version]
    pure: bool
    sdist: bool
    sdist_requires_python: Optional[SpecifierSet]
    sdist_builds: Optional[SpecifierSet]  # the Pythons its source build is known to succeed on (a sourced fact)
    source: str
    sdist_builds_source: str

    def wheel_for(self, py: Version) -> bool:
        xy = f"{py.major}.{py.minor}"
        return self.pure or xy in self.pythons or (self.abi3_from is not None and Version(xy) >= self.abi3_from)

    def sdist_may_build(self, py: Version) -> bool:
        """Whether a source build may stand in on ``py``: there is an sdist, its Requires-Python admits ``py`` and no
        sourced fact says its build fails there."""
        if not self.sdist:
            return False
        if self.sdist_requires_python is not None and not self.sdist_requires_python.contains(py, prereleases=True):
            return False
        return self.sdist_builds is None or self.sdist_builds.contains(py, prereleases=True)


def _specifier(text: Any) -> Optional[SpecifierSet]:
    """A row's specifier; None where the row states none (a blank one states nothing either)."""
    return parse_specifier(text) if isinstance(text, str) and text.strip() else None


@functools.lru_cache(maxsize=1)
def table() -> Dict[str, Tuple[Series, ...]]:
    """The table's series by canonical package name (empty when the file is missing or unreadable)."""
    from envdoctor.knowledge.load import parse_toml_cached
    from envdoctor.resources import data_dir

    try:
        text = (data_dir("matrices") / "gate_wheel_pythons.toml").read_text(encoding="utf-8")
        rows = parse_toml_cached(text).get("series", [])
    except (OSError, ValueError):
        return {}
    out: Dict[str, List[Series]] = {}
    for r in rows:
        if not isinstance(r, dict) or not isinstance(r.get("package"), str):
            continue
        releases = tuple(v for v in (parse_version(x) for x in r.get("releases", [])) if v is not None)
        abi3 = parse_version(r["abi3_from"]) if isinstance(r.get("abi3_from"), str) else None
        out.setdefault(r["package"], []).append(Series(
            r["package"], str(r.get("series", "")), releases, tuple(str(p) for p in r.get("pythons", [])), abi3,
            bool(r.get("pure")), bool(r.get("sdist")), _specifier(r.get("sdist_requires_python")),
            _specifier(r.get("sdist_builds")), str(r.get("source", "")), str(r.get("sdist_builds_source", ""))))
    return {k: tuple(v) for k, v in out.items()}


@dataclass(frozen=True)
class Verdict:
    """What the table says of one line on one Python: ``fails`` (no wheel, no source build can stand in: ED803),
    else ``sdist_only`` (only a source build could install it: not judged)."""

    fails: bool
    version: str  # the newest release the line allows
    covered: str  # the Pythons the allowed releases' wheels cover, e.g. "3.8, 3.9, 3.10, 3.11"
    alternative: Optional[str]  # the nearest release with a wheel for the Python, when there is one
    source: str
    sdist: bool  # a source distribution exists (its build is what fails)


def _key(xy: str) -> Tuple[int, ...]:
    return tuple(int(x) for x in xy.split(".") if x.isdigit())


def judge_line(package: str, spec: SpecifierSet, py: Optional[Version], pre: bool = False) -> Optional[Verdict]:
    """The table's verdict on a line naming ``package`` with ``spec`` for Python ``py``; None when the table has no
    row for it, no release of its rows matches, or some allowed release has a wheel for ``py``."""
    rows = table().get(package)
    if not rows or py is None:
        return None
    matching = [(v, s) for s in rows for v in s.releases if spec.contains(v, prereleases=True if pre else None)]
    if not matching:
        return None
    series = list({id(s): s for _, s in matching}.values())
    if any(s.wheel_for(py) for s in series):
        return None
    best, row = max(matching, key=lambda x: x[0])
    covered = sorted({p for s in series for p in s.pythons}, key=_key)
    abi3 = [s.abi3_from for s in series if s.abi3_from is not None]
    text = ", ".join(covered) + (f"; abi3 from {min(abi3)}" if abi3 else "")
    fails = not any(s.sdist_may_build(py) for s in series)
    later = [v for s in rows if s.wheel_for(py) for v in s.releases if v > best]
    alt = str(min(later)) if later else None
    src = row.source + (f"; source build: {row.sdist_builds_source}" if row.sdist_builds_source and fails else "")
    return Verdict(fails, str(best), text or "none", alt, src, any(s.sdist for s in series))


def judged_packages() -> Sequence[str]:
    return tuple(table())
