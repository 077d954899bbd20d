"""uv.lock: the registry packages of a uv lock (the project itself and directory / git sources are not wheels)."""
from __future__ import annotations

from typing import Any, Dict, List

from envdoctor.gate.inputs.interface import InputProblem, InputUnit, Location
from envdoctor.gate.inputs.pylock import _block_lines, _locked
from envdoctor.gate.inputs.toml_lines import _LineFinder, _toml_loads


def parse_uv_lock(text: str, display: str, unit: InputUnit, problems: List[InputProblem]) -> None:
    data = _toml_loads(text, display, problems)
    if data is None:
        return
    pkgs = data.get("package", [])
    if not isinstance(data.get("version"), int) or not isinstance(pkgs, list):
        problems.append(InputProblem(Location(display, 1), "not a uv.lock file (no integer version / [[package]] array)"))
        return
    heads = _block_lines(text, "package")
    lf = _LineFinder(text)
    unit.strategy = "first-index"
    for i, p in enumerate(pkgs):
        if not isinstance(p, dict):
            continue
        head = heads[i] if i < len(heads) else 0
        line = lf.key("name", head) if head else 0
        src: Dict[str, Any] = p["source"] if isinstance(p.get("source"), dict) else {}
        if not isinstance(p.get("version"), str) or not src.get("registry") and not src.get("url"):
            continue  # the project itself, an editable / directory / git source: not a wheel from an index
        markers = p.get("resolution-markers")
        marker = None
        if isinstance(markers, list) and markers and all(isinstance(x, str) for x in markers):
            marker = " or ".join(f"({x})" for x in markers)
        req, problem = _locked(p.get("name"), p.get("version"), Location(display, line), marker=marker,
                               index=src.get("registry") if isinstance(src.get("registry"), str) else None,
                               wheels=p.get("wheels", []))
        if problem:
            problems.append(InputProblem(Location(display, line), problem))
            continue
        if req is None:
            problems.append(InputProblem(Location(display, line), "a [[package]] entry needs string name and version"))
            continue
        unit.requirements.append(req)
