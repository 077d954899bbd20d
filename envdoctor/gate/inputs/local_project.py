"""A local project a requirements line names (``./x``, ``-e .``, ``file:///p``, ``x @ file:///p``): judged by the
dependencies its pyproject.toml declares statically; never built, its setup.py never run."""
from __future__ import annotations

import os
from typing import List, Optional, Tuple
from urllib.parse import unquote, urlparse

from packaging.utils import canonicalize_name

from envdoctor.gate.inputs.interface import InputProblem, InputRequirement, InputUnit, Location, Reader, _why
from envdoctor.gate.inputs.toml_lines import _LineFinder, _str_list, _toml_loads
from envdoctor.gate.trust import Guard


def local_dir(target: str, base: str) -> Optional[str]:
    """The directory a path / file: URL names (relative to ``base``), or None when it names no local path."""
    t = target.strip()
    if t.startswith("file:"):
        t = unquote(urlparse(t).path)
    elif "://" in t:
        return None
    if not t:
        return None
    return os.path.normpath(t if os.path.isabs(t) else os.path.join(base, t))


def split_extras(text: str) -> Tuple[str, Tuple[str, ...]]:
    """``./x[a,b]`` -> ("./x", ("a", "b"))."""
    text = text.strip()
    if text.endswith("]") and "[" in text:
        head, _, ex = text[:-1].rpartition("[")
        return head, tuple(sorted(canonicalize_name(x) for x in ex.split(",") if x.strip()))
    return text, ()


def add_local_project(path: str, extras: Tuple[str, ...], shown: str, loc: Location, unit: InputUnit,
                      problems: List[InputProblem], read: Reader, guard: Guard, group=None,
                      constraint: bool = False) -> None:
    """Add the static dependencies of the project at ``path`` to ``unit`` (locations name the local line), or a
    note saying why it is not judged. Only the token ``shown`` (bounded by the caller) is ever quoted."""
    outside = guard.outside(path, unit.path)
    if outside:
        problems.append(InputProblem(loc, f"{shown}: a local path, not read: {outside}"))
        return
    if not os.path.isdir(path):
        unit.notes.append(f"{loc}: {shown}: a local path that does not exist (or is no directory): not judged")
        return
    pp = os.path.join(path, "pyproject.toml")
    if not os.path.isfile(pp):
        why = "setup.py" if os.path.exists(os.path.join(path, "setup.py")) else "no pyproject.toml"
        unit.notes.append(f"{loc}: {shown}: a local project whose dependencies are dynamic ({why}): not built, "
                          f"not judged")
        return
    outside = guard.outside(pp, unit.path)  # a pyproject.toml that is a link leading out of the repository
    if outside:
        problems.append(InputProblem(loc, f"{shown}: its pyproject.toml is not read: {outside}"))
        return
    try:
        text = read(pp)  # the run's budgeted reader: the byte / line budget covers it
    except (OSError, ValueError) as exc:
        problems.append(InputProblem(loc, f"{shown}: cannot read its pyproject.toml: {_why(exc)}"))
        return
    sub: List[InputProblem] = []
    data = _toml_loads(text, pp, sub)
    project = data.get("project") if isinstance(data, dict) else None
    if sub or not isinstance(project, dict):
        unit.notes.append(f"{loc}: {shown}: its pyproject.toml declares no readable [project] table: not judged")
        return
    dynamic = project.get("dynamic", [])
    if isinstance(dynamic, list) and "dependencies" in dynamic:
        unit.notes.append(f"{loc}: {shown}: a local project whose dependencies are dynamic (pyproject.toml): "
                          f"not built, not judged")
        return
    from envdoctor.gate.inputs.requirements import parse_requirement_text

    lf = _LineFinder(text)
    where = f"{loc} ({shown}: pyproject.toml"
    deps = project.get("dependencies", [])
    items = [(d, None) for d in (deps if _str_list(deps) is not None else [])]
    opt = project.get("optional-dependencies", {})
    if isinstance(opt, dict):
        for name, vals in opt.items():
            if canonicalize_name(str(name)) in extras and _str_list(vals) is not None:
                items.extend((d, name) for d in vals)
    for dep, _extra in items:
        dloc = Location(f"{where}:{lf.literal(dep, 0)})", 0)
        req, err = parse_requirement_text(dep, dloc)
        if err:
            problems.append(InputProblem(dloc, err))
            continue
        if req is None:
            continue
        req.group = group
        req.constraint = constraint
        unit.requirements.append(req)
    if pp not in unit.files:
        unit.files.append(pp)
