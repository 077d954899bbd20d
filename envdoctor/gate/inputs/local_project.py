"""A local project a requirements line names (``./x``, ``-e .``, ``file:///p``, ``x @ file:///p``): judged by the
dependencies its pyproject.toml declares statically -- or its setup.cfg, where no setup.py can change them (none, or
one that only calls ``setup()``, read as a syntax tree) -- never built, its setup.py never run."""
from __future__ import annotations

import ast
import configparser
import os
from typing import List, Optional, Tuple
from urllib.parse import unquote, urlparse

from packaging.utils import canonicalize_name

from envdoctor.gate.inputs.interface import InputProblem, InputUnit, Location, Reader, _why
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
        unit.not_judged.append((str(loc), f"{shown}: a local path that does not exist (or is no directory)"))
        return
    pp = os.path.join(path, "pyproject.toml")
    if not os.path.isfile(pp) and _setup_cfg(path, extras, shown, loc, unit, problems, read, guard, group,
                                             constraint):
        return
    if not os.path.isfile(pp):
        why = "setup.py" if os.path.exists(os.path.join(path, "setup.py")) else "no pyproject.toml"
        unit.not_judged.append((str(loc), f"{shown}: a local project whose dependencies are dynamic ({why}): gate "
                                          f"builds nothing"))
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
    if not sub and not isinstance(project, dict) and _setup_cfg(path, extras, shown, loc, unit, problems, read, guard,
                                                                group, constraint):
        return  # a pyproject.toml with only [build-system]: setuptools reads setup.cfg
    if sub or not isinstance(project, dict):
        unit.not_judged.append((str(loc), f"{shown}: its pyproject.toml declares no readable [project] table"))
        return
    dynamic = project.get("dynamic", [])
    if isinstance(dynamic, list) and "dependencies" in dynamic:
        unit.not_judged.append((str(loc), f"{shown}: a local project whose dependencies are dynamic "
                                          f"(pyproject.toml): gate builds nothing"))
        return
    lf = _LineFinder(text)
    where = f"{loc} ({shown}: pyproject.toml"
    deps = project.get("dependencies", [])
    items = [(d, None) for d in (deps if _str_list(deps) is not None else [])]
    opt = project.get("optional-dependencies", {})
    if isinstance(opt, dict):
        for name, vals in opt.items():
            if canonicalize_name(str(name)) in extras and _str_list(vals) is not None:
                items.extend((d, name) for d in vals)
    _add_declared([(d, Location(f"{where}:{lf.literal(d, 0)})", 0)) for d, _extra in items], pp, unit, problems,
                  group, constraint)


def _add_declared(deps: List[Tuple[str, Location]], declared_in: str, unit: InputUnit, problems: List[InputProblem],
                  group, constraint: bool) -> None:
    """The requirements a local project declares, each located at the line that names the project."""
    from envdoctor.gate.inputs.requirement_line import parse_requirement_text

    for dep, dloc in deps:
        req, err = parse_requirement_text(dep, dloc)
        if err:
            problems.append(InputProblem(dloc, err))
            continue
        if req is None:
            continue
        req.group = group
        req.constraint = constraint
        unit.requirements.append(req)
    if declared_in not in unit.files:
        unit.files.append(declared_in)


def _only_calls_setup(text: str) -> bool:
    """A setup.py that cannot change what setup.cfg declares: imports, a docstring and one bare ``setup()`` call
    (perhaps under ``if __name__ == "__main__":``), read as a syntax tree, never run."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    calls = 0

    def plain(stmts) -> bool:
        nonlocal calls
        for st in stmts:
            if isinstance(st, (ast.Import, ast.ImportFrom)):
                continue
            if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant) and isinstance(st.value.value, str):
                continue
            if (isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and not st.value.args
                    and not st.value.keywords and isinstance(st.value.func, (ast.Name, ast.Attribute))
                    and (getattr(st.value.func, "id", None) or getattr(st.value.func, "attr", None)) == "setup"):
                calls += 1
                continue
            if isinstance(st, ast.If) and not st.orelse and plain(st.body):
                continue
            return False
        return True

    return plain(tree.body) and calls == 1


def _setup_cfg(path: str, extras: Tuple[str, ...], shown: str, loc: Location, unit: InputUnit,
               problems: List[InputProblem], read: Reader, guard: Guard, group, constraint: bool) -> bool:
    """Add the dependencies a setuptools project declares in setup.cfg (``[options] install_requires``, and
    ``[options.extras_require]`` for the extras asked), when nothing can change them; False when it does not
    apply (no setup.cfg, no such option, a setup.py that does more than ``setup()``, a ``file:`` directive)."""
    cfg, spy = os.path.join(path, "setup.cfg"), os.path.join(path, "setup.py")
    if not os.path.isfile(cfg):
        return False
    for f in (cfg, spy):
        if os.path.exists(f) and guard.outside(f, unit.path):
            return False
    try:
        if os.path.exists(spy) and not _only_calls_setup(read(spy)):
            return False
        text = read(cfg)  # the run's budgeted reader
    except (OSError, ValueError):
        return False
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text, source=cfg)
    except configparser.Error:
        return False
    if not parser.has_option("options", "install_requires"):
        return False
    values = [("options", "install_requires")]
    if parser.has_section("options.extras_require"):
        values += [("options.extras_require", k) for k in parser.options("options.extras_require")
                   if canonicalize_name(k) in extras]
    lines = text.splitlines()
    found: List[Tuple[str, int]] = []
    for section, key in values:
        raw = parser.get(section, key)
        if raw.strip().startswith(("file:", "attr:")):
            return False  # read from another file / the code at build time
        for dep in raw.splitlines():
            dep = dep.split(" #", 1)[0].strip()
            if dep and not dep.startswith("#"):
                found.append((dep, next((i + 1 for i, ln in enumerate(lines)
                                         if ln.split(" #", 1)[0].strip() in (dep, f"{key} = {dep}", f"{key}={dep}")), 0)))
    _add_declared([(dep, Location(f"{loc} ({shown}: setup.cfg" + (f":{line})" if line else ")"), 0))
                   for dep, line in found], cfg, unit, problems, group, constraint)
    return True
