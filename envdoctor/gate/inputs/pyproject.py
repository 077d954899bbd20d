"""pyproject.toml: [project] dependencies, [project.optional-dependencies], PEP 735 [dependency-groups], and uv's
[tool.uv.sources] / [[tool.uv.index]] / [tool.uv] conflicts."""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

from packaging.utils import canonicalize_name

from envdoctor.gate.inputs.interface import MAX_INCLUDE_DEPTH, IndexOption, InputProblem, InputUnit, Location
from envdoctor.gate.inputs.requirements import parse_requirement_text
from envdoctor.gate.inputs.toml_lines import _LineFinder, _str_list, _toml_loads
from envdoctor.gate.trust import quote_token

# --------------------------------------------------------------------------- pyproject.toml


def parse_pyproject(text: str, display: str, unit: InputUnit, problems: List[InputProblem]) -> None:
    data = _toml_loads(text, display, problems)
    if data is None:
        return
    lf = _LineFinder(text)
    project = data.get("project", {})
    if not isinstance(project, dict):
        problems.append(InputProblem(Location(display, lf.header(r"^\s*\[\s*project\s*\]")), "[project] is not a table"))
        return
    head = lf.header(r"^\s*\[\s*project\s*\]")
    deps = project.get("dependencies", [])
    if _str_list(deps) is None:
        problems.append(InputProblem(Location(display, lf.key("dependencies", head)),
                                     "[project] dependencies must be a list of requirement strings"))
        deps = []
    dep_line = lf.key("dependencies", head) if deps else head
    for dep in deps:
        _add_pep508(dep, Location(display, lf.literal(dep, dep_line)), None, unit, problems)
    opt = project.get("optional-dependencies", {})
    opt_head = lf.header(r"^\s*\[\s*project\.optional-dependencies\s*\]") or lf.key("optional-dependencies", head)
    if not isinstance(opt, dict):
        problems.append(InputProblem(Location(display, opt_head), "[project.optional-dependencies] is not a table"))
        opt = {}
    for extra, items in opt.items():
        eline = lf.key(extra, opt_head)
        if _str_list(items) is None:
            problems.append(InputProblem(Location(display, eline),
                                         f"optional dependency group {extra!r} must be a list of strings"))
            continue
        unit.extras.append(canonicalize_name(extra))
        for dep in items:
            _add_pep508(dep, Location(display, lf.literal(dep, eline)), ("extra", canonicalize_name(extra)), unit, problems)
    groups = data.get("dependency-groups", {})
    g_head = lf.header(r"^\s*\[\s*dependency-groups\s*\]")
    if not isinstance(groups, dict):
        problems.append(InputProblem(Location(display, g_head), "[dependency-groups] is not a table"))
        groups = {}
    norm_groups: Dict[str, Tuple[str, Any]] = {str(canonicalize_name(k)): (k, v) for k, v in groups.items()}
    for key, (name, _items) in norm_groups.items():
        unit.groups.append(key)
        gline = lf.key(name, g_head)
        for dep, where in _expand_group(key, norm_groups, [], Location(display, gline), problems):
            _add_pep508(dep, Location(display, lf.literal(dep, where.line)), ("group", key), unit, problems)
    _uv_settings(data, display, lf, unit, problems)


def _expand_group(key: str, groups: Dict[str, Tuple[str, Any]], stack: List[str], loc: Location,
                  problems: List[InputProblem]) -> List[Tuple[str, Location]]:
    """PEP 735: a group's requirement strings, {include-group = "..."} expanded (cycles refused)."""
    if key in stack:
        problems.append(InputProblem(loc, f"dependency group {key!r} includes itself ({' -> '.join(stack + [key])})"))
        return []
    if key not in groups:
        problems.append(InputProblem(loc, f"include-group {key!r}: no such dependency group"))
        return []
    if len(stack) >= MAX_INCLUDE_DEPTH:
        problems.append(InputProblem(loc, f"dependency groups include each other deeper than {MAX_INCLUDE_DEPTH}"))
        return []
    name, items = groups[key]
    if not isinstance(items, list):
        problems.append(InputProblem(loc, f"dependency group {name!r} must be a list"))
        return []
    out: List[Tuple[str, Location]] = []
    for item in items:
        if isinstance(item, str):
            out.append((item, loc))
        elif isinstance(item, dict) and set(item) == {"include-group"} and isinstance(item["include-group"], str):
            out.extend(_expand_group(canonicalize_name(item["include-group"]), groups, stack + [key], loc, problems))
        else:
            problems.append(InputProblem(loc, f"dependency group {name!r}: {quote_token(str(item))} is neither a requirement string "
                                              f"nor {{include-group = \"...\"}}"))
    return out


def _add_pep508(dep: str, loc: Location, group, unit: InputUnit, problems: List[InputProblem]) -> None:
    req, err = parse_requirement_text(dep, loc)
    if err:
        problems.append(InputProblem(loc, err))
        return
    if req is not None:
        req.group = group
        unit.requirements.append(req)


def _uv_settings(data: dict, display: str, lf: _LineFinder, unit: InputUnit, problems: List[InputProblem]) -> None:
    tool = data.get("tool", {})
    uv = tool.get("uv", {}) if isinstance(tool, dict) else {}
    if not isinstance(uv, dict):
        return
    idx = uv.get("index", [])
    idx_line = lf.header(r"^\s*\[\[\s*tool\.uv\.index\s*\]\]")
    if isinstance(idx, list):
        for i, entry in enumerate(idx):
            if not isinstance(entry, dict) or not isinstance(entry.get("url"), str):
                problems.append(InputProblem(Location(display, idx_line), "[[tool.uv.index]] entries need a url"))
                continue
            line = lf.literal(entry["url"], idx_line) or idx_line
            unit.indexes.append(IndexOption("uv-index", entry["url"], Location(display, line),
                                            name=str(entry.get("name", "")), explicit=bool(entry.get("explicit", False)),
                                            default=bool(entry.get("default", False))))
    for key in ("index-url", "extra-index-url", "find-links"):
        vals = uv.get(key)
        vals = [vals] if isinstance(vals, str) else (vals if isinstance(vals, list) else [])
        for v in vals:
            if isinstance(v, str):
                unit.indexes.append(IndexOption(key, v, Location(display, lf.literal(v, 0))))
    unit.uv_urls = _urls_in(uv)  # uv reads all of [tool.uv]: gate checks every place it would contact
    if any(o.kind == "uv-index" for o in unit.indexes) or "sources" in uv:
        unit.strategy = "first-index"
    sources = uv.get("sources", {})
    if isinstance(sources, dict):
        for name, spec in sources.items():
            items = spec if isinstance(spec, list) else [spec]
            clean = [{k: str(v) for k, v in s.items() if isinstance(v, (str, bool))} for s in items if isinstance(s, dict)]
            unit.sources[canonicalize_name(name)] = clean
    conflicts = uv.get("conflicts", [])
    if isinstance(conflicts, list):
        for group in conflicts:
            if not isinstance(group, list):
                continue
            items = []
            for item in group:
                if isinstance(item, dict):
                    if isinstance(item.get("extra"), str):
                        items.append(("extra", canonicalize_name(item["extra"])))
                    elif isinstance(item.get("group"), str):
                        items.append(("group", canonicalize_name(item["group"])))
            if items:
                unit.conflicts.append(items)


def _urls_in(value, depth: int = 0) -> List[str]:
    """Every string holding "://" in a TOML value (nesting bounded)."""
    if depth > 20:
        return []
    if isinstance(value, str):
        return [value] if "://" in value else []
    if isinstance(value, dict):
        return [u for v in value.values() for u in _urls_in(v, depth + 1)]
    if isinstance(value, list):
        return [u for v in value for u in _urls_in(v, depth + 1)]
    return []
