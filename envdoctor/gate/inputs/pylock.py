"""PEP 751 pylock.toml (and the locked-package reading uv.lock shares): exact versions, markers, the index, the
wheel tags."""
from __future__ import annotations

import re
from typing import Any, List, Optional, Tuple

from packaging.utils import canonicalize_name

from envdoctor.gate.inputs.interface import InputProblem, InputRequirement, InputUnit, Location, long_number
from envdoctor.gate.inputs.requirements import wheel_info
from envdoctor.gate.inputs.toml_lines import _LineFinder, _toml_loads

# --------------------------------------------------------------------------- pylock.toml (PEP 751) and uv.lock


def _block_lines(text: str, header: str) -> List[int]:
    rx = re.compile(r"^\s*\[\[\s*" + re.escape(header) + r"\s*\]\]\s*(#.*)?$")
    return [i + 1 for i, line in enumerate(text.splitlines()) if rx.match(line)]


def _locked(name: Any, version: Any, loc: Location, *, marker: Optional[str], index: Optional[str],
            wheels: Any) -> Tuple[Optional[InputRequirement], Optional[str]]:
    """A locked package -> (requirement, None), or (None, the problem)."""
    if not isinstance(name, str) or not isinstance(version, str):
        return None, None
    if not isinstance(wheels, list):
        return None, f"{name}: wheels must be an array of tables, not {type(wheels).__name__}"
    problem = long_number(version) or long_number(marker or "")
    if problem:
        return None, problem
    tags: List[str] = []
    for w in wheels:
        if isinstance(w, dict):
            try:
                info = wheel_info(str(w.get("name") or w.get("url") or w.get("path") or ""))
            except ValueError as exc:
                return None, f"{name}: a wheel's URL or file name cannot be read: {exc}"
            if info is not None:
                tags.extend(info[2])
    return InputRequirement(name=canonicalize_name(name), raw=f"{name} {version}", loc=loc, specifier=f"=={version}",
                            version=version, marker=marker, index=index, wheel_tags=tuple(sorted(set(tags)))), None


def parse_pylock(text: str, display: str, unit: InputUnit, problems: List[InputProblem]) -> None:
    data = _toml_loads(text, display, problems)
    if data is None:
        return
    lv = data.get("lock-version")
    if not isinstance(lv, str) or not lv.startswith("1."):
        problems.append(InputProblem(Location(display, _LineFinder(text).key("lock-version", 1) or 1),
                                     f"not a PEP 751 lock file (lock-version {lv!r}; envdoctor reads 1.x)"))
        return
    pkgs = data.get("packages", [])
    if not isinstance(pkgs, list):
        problems.append(InputProblem(Location(display, 1), "packages must be an array of tables"))
        return
    heads = _block_lines(text, "packages")
    lf = _LineFinder(text)
    for i, p in enumerate(pkgs):
        if not isinstance(p, dict):
            continue
        head = heads[i] if i < len(heads) else 0
        line = lf.key("name", head) if head else lf.literal(str(p.get("name", "")), 0)
        marker = p.get("marker") if isinstance(p.get("marker"), str) else None
        index = p.get("index") if isinstance(p.get("index"), str) else None
        req, problem = _locked(p.get("name"), p.get("version"), Location(display, line), marker=marker, index=index,
                               wheels=p.get("wheels", []))
        if problem:
            problems.append(InputProblem(Location(display, line), problem))
            continue
        if req is None:
            if isinstance(p.get("name"), str) and "version" not in p:
                unit.notes.append(f"{Location(display, line)}: {p['name']} has no version (a directory or VCS entry): "
                                  f"not judged")
                continue
            problems.append(InputProblem(Location(display, line), "a [[packages]] entry needs string name and version"))
            continue
        unit.requirements.append(req)
