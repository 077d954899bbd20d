"""Indirect constraints on torch for the offline planner: lines such as ``xformers==0.0.20`` or ``triton==2.0.0`` pin
the torch an install really gets (their wheels' Requires-Dist, or torch's own pin of triton).  The data is the
``[[pin]]`` rows of matrices/gate_indirect.toml (each with its source): one row per release of the indirect package,
the torch releases it installs with and the Pythons its wheels cover.

:func:`torch_constraints` turns the selected requirements into one specifier for the torch line (intersected with it
before the planner picks the newest candidate), the lines it judged, the lines it could not (no row: "not judged",
never ignored) and the failures the data shows (every allowed release lacks a wheel for the target Python: ED803;
no torch release satisfies the lines together: ED804).  Pure: no network, no subprocess.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from envdoctor.facts.versions import parse_specifier, parse_version
from envdoctor.gate.inputs import InputRequirement


@dataclass(frozen=True)
class PinRow:
    """One release of a package that constrains torch: ``package`` ``version`` installs with torch ``torch``."""

    package: str
    version: Version
    torch: SpecifierSet
    python: Optional[SpecifierSet]  # the Pythons its wheels cover (None: not stated)
    source: str

    def python_ok(self, python: Optional[Version]) -> bool:
        return python is None or self.python is None or self.python.contains(python, prereleases=True)


@dataclass
class NoWheel:
    req: InputRequirement
    row: PinRow  # the newest release the line allows


@dataclass
class TorchConstraint:
    specifier: SpecifierSet = field(default_factory=SpecifierSet)  # empty: nothing constrains the torch line
    because: List[str] = field(default_factory=list)  # "x.txt:2 xformers==0.0.20 requires torch==2.0.1"
    judged: List[InputRequirement] = field(default_factory=list)
    unresolved: List[Tuple[InputRequirement, str]] = field(default_factory=list)
    no_wheel: List[NoWheel] = field(default_factory=list)
    conflict: List[InputRequirement] = field(default_factory=list)  # the lines no torch release satisfies together
    brings: List[InputRequirement] = field(default_factory=list)  # lines that install torch without pinning it

    @property
    def applies(self) -> bool:
        return bool(str(self.specifier))


def _spec(text: Any) -> Optional[SpecifierSet]:
    return parse_specifier(text)


@functools.lru_cache(maxsize=1)
def _data() -> Dict[str, Any]:
    from envdoctor.knowledge.load import parse_toml_cached
    from envdoctor.resources import data_dir

    try:
        return dict(parse_toml_cached((data_dir("matrices") / "gate_indirect.toml").read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return {}


def pins_complete() -> Set[str]:
    """Packages whose rows list every release the index had when the data was collected (``pins_complete``): a
    line open above their newest row resolves within the rows, as the installer would have then."""
    return {str(canonicalize_name(x)) for x in _data().get("pins_complete", []) if isinstance(x, str)}


@functools.lru_cache(maxsize=1)
def pin_rows() -> Dict[str, Tuple[PinRow, ...]]:
    """The [[pin]] rows of matrices/gate_indirect.toml by canonical package name (rows it cannot read are skipped)."""
    data = _data()
    out: Dict[str, List[PinRow]] = {}
    for r in data.get("pin", []):
        if not isinstance(r, dict) or not isinstance(r.get("package"), str):
            continue
        torch = _spec(r.get("torch"))
        version = parse_version(str(r.get("version")))
        if version is None:
            continue
        if torch is None:
            continue
        name = str(canonicalize_name(r["package"]))
        out.setdefault(name, []).append(PinRow(name, version, torch, _spec(r.get("python")), str(r.get("source", ""))))
    return {k: tuple(sorted(v, key=lambda x: x.version)) for k, v in out.items()}


def torch_patch_pythons(matrices: Any, spec: SpecifierSet) -> List[Tuple[Version, str]]:
    """The torch patches of the matrices that ``spec`` admits, in the data's order, each with the Pythons its wheels
    cover ("" where the data states none): what a companion pinned through ``spec`` can install with."""
    out: List[Tuple[Version, str]] = []
    for rel in list(getattr(matrices, "pytorch_releases", None) or []):
        for prow in getattr(rel, "patch_rows", None) or []:
            v = parse_version(str(prow.version))
            if v is not None and spec.contains(Version(v.public), prereleases=True):
                out.append((Version(v.public), str(prow.python or rel.python or "")))
    return out


def companion_rows(matrices: Any) -> Dict[str, Tuple[PinRow, ...]]:
    """torchvision / torchaudio as pin rows, from the torch patches of the matrices (each companion release's
    Requires-Dist on torch, as the data records it; its Pythons: those of the torch patches it installs with -- the
    patch's own when it pins one torch, none stated when the torch releases it accepts cover different Pythons, as
    the torch line's own Python range then decides)."""
    out: Dict[str, List[PinRow]] = {}
    for rel in list(getattr(matrices, "pytorch_releases", None) or []):
        for prow in getattr(rel, "patch_rows", None) or []:
            for name in ("torchvision", "torchaudio"):
                cv = getattr(prow, name, None)
                spec = _spec(getattr(prow, f"{name}_requires", None) or f"=={prow.version}")
                version = parse_version(str(cv)) if cv else None
                if version is None or spec is None:
                    continue
                covered = {py for _, py in torch_patch_pythons(matrices, spec)}
                py_text = covered.pop() if len(covered) == 1 else (None if covered else (prow.python or rel.python))
                out.setdefault(name, []).append(PinRow(name, version, spec, _spec(py_text) if py_text else None,
                                                       str(getattr(prow, "source", "")) or "matrices: pytorch"))
    return {k: tuple(sorted(v, key=lambda x: x.version)) for k, v in out.items()}


def has_pin_rows(name: str) -> bool:
    return str(canonicalize_name(name)) in pin_rows()


def _allows(req: InputRequirement, v: Version) -> bool:
    """Whether the line admits release ``v`` (a +cu118-style local label on the line is set aside: the rows name
    public versions)."""
    if req.version:
        mine = parse_version(req.version)
        return mine is not None and Version(mine.public) == v
    text = re.sub(r"\+[A-Za-z0-9.]+", "", req.specifier)
    return (_spec(text) or SpecifierSet()).contains(v, prereleases=True)


def _open_above(req: InputRequirement, newest: Version) -> bool:
    """Whether the line admits a release newer than every row (one the data does not know yet)."""
    if req.version:
        return False
    spec = _spec(req.specifier) or SpecifierSet()
    rel = list(newest.release) + [0] * (3 - len(newest.release))
    probes = [f"{newest.base_version}.post9999", f"{rel[0]}.{rel[1]}.{rel[2] + 1}", f"{rel[0]}.{rel[1] + 1}.0",
              f"{rel[0] + 1}.0.0"]
    return any(spec.contains(Version(p), prereleases=True) for p in probes)


def as_specifier(allowed: Sequence[Version], known: Sequence[Version]) -> SpecifierSet:
    """A specifier that admits exactly ``allowed`` among the ``known`` torch releases (public versions: a local
    label such as +cu117 matches as PEP 440 says)."""
    if len(allowed) == 1:
        return SpecifierSet(f"=={allowed[0]}")
    lo, hi = min(allowed), max(allowed)
    parts = [f">={lo}", f"<={hi}"] + [f"!={v}" for v in sorted(set(known)) if lo < v < hi and v not in allowed]
    return SpecifierSet(",".join(parts))


@functools.lru_cache(maxsize=1)
def brings_torch() -> Dict[str, Version]:
    """The [[brings]] rows of matrices/gate_indirect.toml: packages whose releases from ``since`` on require torch
    with no upper bound (canonical name -> since), so a line naming one installs the newest torch the target
    allows."""
    out: Dict[str, Version] = {}
    for r in _data().get("brings", []):
        if isinstance(r, dict) and isinstance(r.get("package"), str) and r.get("framework") == "torch":
            since = parse_version(str(r.get("since", "0")))
            if since is not None:
                out[str(canonicalize_name(r["package"]))] = since
    return out


def _brings(req: InputRequirement, since: Version) -> bool:
    """Whether the line can install a release from ``since`` on (the releases that bring torch in)."""
    if req.version:
        mine = parse_version(req.version)
        return mine is not None and mine >= since
    spec = _spec(re.sub(r"\+[A-Za-z0-9.]+", "", req.specifier)) or SpecifierSet()
    probes = [since, Version("9999")] + [v for v in (parse_version(sp.version) for sp in spec) if v is not None]
    return any(v >= since and spec.contains(v, prereleases=True) for v in probes)


def torch_constraints(reqs: Sequence[InputRequirement], torch_versions: Sequence[Version],
                      python: Optional[Version], more: Optional[Dict[str, Tuple[PinRow, ...]]] = None) -> TorchConstraint:
    """What the indirect lines among ``reqs`` (markers already evaluated) allow of the ``torch_versions`` (the
    public torch releases the planner knows); with the torch lines among ``reqs``, whether they contradict."""
    out = TorchConstraint()
    rows = dict(pin_rows(), **(more or {}))
    complete = pins_complete() | set(more or {})  # the companions' rows follow every torch patch in the data
    known = sorted({Version(v.public) for v in torch_versions})
    allowed: Set[Version] = set(known)
    used: List[InputRequirement] = []
    brings = brings_torch()
    for r in reqs:
        mine = rows.get(r.name)
        if not mine and r.name in brings and not (r.constraint or r.conda or r.url) and _brings(r, brings[r.name]):
            out.brings.append(r)  # torch comes with it, any release: the torch line's own range decides
            continue
        if not mine or r.constraint or r.conda:  # a -c line installs nothing; conda's solver is not pip's
            continue
        in_spec = [row for row in mine if _allows(r, row.version)]
        if not in_spec:
            out.unresolved.append((r, f"no release of {r.name} matching {r.specifier or 'any version'} is in "
                                      f"envdoctor's data (matrices/gate_indirect.toml)"))
            continue
        py_ok = [row for row in in_spec if row.python_ok(python)]
        if not py_ok:
            out.no_wheel.append(NoWheel(r, in_spec[-1]))
            continue
        newest = max(row.version for row in mine)
        unknown_newer = _open_above(r, newest) and r.name not in complete
        covered = {v for v in known if any(row.torch.contains(v, prereleases=True) for row in mine)}
        mine_ok = {v for v in known if any(row.torch.contains(v, prereleases=True) for row in py_ok)}
        if unknown_newer:  # a newer release (not in the data) may pair with a torch no row names
            mine_ok |= set(known) - covered
        allowed &= mine_ok
        used.append(r)
        if mine_ok != set(known):
            out.because.append(f"{r.loc}: {r.raw} installs torch"
                               + (str(as_specifier(sorted(mine_ok), known)) if mine_ok else " (none envdoctor knows)"))
    out.judged = used
    if not used:
        return out
    torch_lines = [r for r in reqs if r.name == "torch" and not r.url]
    by_line = {v for v in known if all(_allows(r, v) for r in torch_lines)}
    if not allowed or (by_line and not allowed & by_line):
        out.conflict = torch_lines + used
        return out
    if allowed != set(known):
        out.specifier = as_specifier(sorted(allowed), known)
    return out


def plan_effects(c: TorchConstraint, target: Any) -> List[Tuple[str, str, List[InputRequirement], Dict[str, Any]]]:
    """The planner problems (kind, subject, lines, facts) of a constraint: ED803 for a line whose releases have no
    wheel for the target Python, ED804 for lines no torch release satisfies together."""
    out: List[Tuple[str, str, List[InputRequirement], Dict[str, Any]]] = []
    for nw in c.no_wheel:
        out.append(("no-wheel-python", nw.req.raw, [nw.req],
                    {"package": nw.req.name, "version": str(nw.row.version), "family": nw.req.name, "release": None,
                     "python_spec": str(nw.row.python), "python": str(target.python), "source": nw.row.source,
                     "indirect": True}))
    if c.conflict:
        out.append(("contradict", "torch", list(c.conflict),
                    {"package": "torch", "requirements": [(r.raw, str(r.loc)) for r in c.conflict],
                     "because": list(c.because), "indirect": True}))
    return out
