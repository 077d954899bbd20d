"""Pure resolution for ``envdoctor lock``: constraints in, a :class:`Lock` or a :class:`Clash` out.

    from envdoctor.knowledge import load_matrices
    from envdoctor.lock.resolve import Constraints, FrameworkRequest, GpuTarget, resolve
    result = resolve(Constraints(frameworks=[FrameworkRequest("torch")], cuda="12.1",
                                 gpus=[GpuTarget("8.6")], python="3.11"), load_matrices())
    if result.ok: result.picks[0].requirement      # "torch==2.5.1+cu121"
    else: print(result.message())                   # which constraints clash, what relaxing each gives

Nothing here reads the machine, the network or a file: everything comes from the constraints and the
matrices (``envdoctor.knowledge``).  Only builds the matrices list are ever chosen (a torch variant is always a
``TorchVariant`` row of the data), newest first; a CPU build is chosen only when ``Constraints.cpu`` asks for one.

Semantics (docs/lock.md):

* ``cuda`` "12.1": the CUDA line.  A build fits when its CUDA ``X.Y`` is in the same major and not newer
  (12.1, 12.0 ... fit; 12.4 or 11.8 do not).  "12" means any 12.x.
* ``driver``: a build fits when the driver runs its CUDA (``Matrices.driver_runs_cuda``: at or above the
  minor-version-compatibility floor of its major).  When a GPU can only use the build through PTX JIT (no SASS
  for its arch), the driver must also reach the toolkit driver of the build's CUDA.
* ``gpus``: every GPU's compute capability must have kernels in the build (SASS, or embedded PTX).
* ``python`` "3.11": the release's Python specifier must contain it.
* ``platform``: the build must be published for it.
* one CUDA major when any combination allows it; builds of two majors are chosen only when nothing else fits, with
  a warning (``envdoctor.facts.cuda_mix``: each works in a process that imports only it, as check's ED662 says);
  the nvidia-* pins of every chosen build must have a common version (``packaging`` specifiers on the pins the
  tables hold).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from envdoctor.errors import BadInput
from envdoctor.facts.cuda_mix import mixed_majors
from envdoctor.facts.gpu_support import cudnn_cap_for_gpu, driver_supports_gpu
from envdoctor.frameworks import registry
from envdoctor.frameworks.base import (  # noqa: F401 - the model, re-exported for lock's callers
    COMPANIONS, PLATFORMS, Candidate, FrameworkRequest, GpuTarget, Problem, Requirement, Target, _arch_span, _v,
    _version, describe_line, driver_floor, known_first, normalize_spec, runs_on, specset as _specset, unknowns,
)
from envdoctor.frameworks.jax import jax_candidate  # noqa: F401
from envdoctor.frameworks.table_spec import TableSpec
from envdoctor.frameworks.tensorflow import tf_candidate  # noqa: F401
from envdoctor.frameworks.torch import torch_candidate
from envdoctor.knowledge.tables import normalize_cc, parse_version

FRAMEWORKS = registry.names(lockable=True)
_PY_MINORS = [f"3.{n}" for n in range(0, 20)]
Constraints = Target  # lock's historical name for the target


def enumerate_candidates(m: Any, name: str, c: Target) -> List[Candidate]:
    """Every build of ``name`` of the right kind (CUDA, or CPU when ``c.cpu``), newest first (version, then CUDA)."""
    return registry.get(name).candidates(m, c)


def candidate_problems(m: Any, cand: Candidate, c: Target, warnings: Optional[List[str]] = None) -> List[Problem]:
    """Every constraint ``cand`` breaks (empty: it fits): its framework's ``fits``."""
    return registry.get(cand.framework).fits(m, cand, c, warnings)


def _known_versions(m: Any, name: str) -> List[str]:
    return registry.get(name).known_versions(m)


def _python_specs(m: Any, name: str) -> List[str]:
    return registry.get(name).python_specs(m)


# --------------------------------------------------------------------------- pins across frameworks


def _probe_versions(specs: Sequence[SpecifierSet]) -> List[Version]:
    """Versions at every bound of the specifiers and just above each: a non-empty intersection of these
    (interval-shaped) specifiers always contains one of them."""
    out: List[Version] = [Version("0")]
    for ss in specs:
        for s in ss:
            text = s.version
            if text.endswith(".*"):
                text = text[:-2]
            base = parse_version(text)
            if base is None:
                continue
            out.append(base)
            out.append(Version(".".join(str(p) for p in base.release + (0, 0, 0, 0, 1))))
    return out


@functools.lru_cache(maxsize=4096)
def intersect(specs: Tuple[str, ...]) -> Optional[str]:
    """A version every specifier in ``specs`` accepts (as text), or None when they have nothing in common."""
    maybe = [_specset(s) for s in specs]
    sets = [x for x in maybe if x is not None]
    if len(sets) != len(maybe):
        return None
    for v in sorted(set(_probe_versions(sets)), reverse=True):
        if all(ss.contains(v, prereleases=True) for ss in sets):
            return str(v)
    return None


def merged_spec(specs: Sequence[str]) -> str:
    """The specifier an environment ends up with: an exact pin when any framework pins exactly, else all bounds."""
    for s in specs:
        s = s.strip()
        if s.startswith("==") and "," not in s and "*" not in s:
            return s
    merged = SpecifierSet("")
    for s in specs:
        merged &= SpecifierSet(s)
    lower = [x for x in merged if x.operator in (">=", ">")]
    upper = [x for x in merged if x.operator in ("<", "<=")]
    keep = [x for x in merged if x not in lower and x not in upper]
    if lower:  # the highest lower bound (">" wins a tie)
        keep.append(max(lower, key=lambda x: (Version(x.version), x.operator == ">")))
    if upper:  # the lowest upper bound ("<" wins a tie)
        keep.append(min(upper, key=lambda x: (Version(x.version), x.operator == "<=")))
    return ",".join(sorted(str(x) for x in keep))


def _describe_pin(cand: Candidate, spec: str) -> str:
    verb = "pins" if spec.startswith("==") else "needs"
    return f"{cand.label} {verb} {spec}"


def _pin_order(name: str) -> Tuple[int, str]:
    return (0 if "cudnn" in name else 1 if "cuda-runtime" in name else 2, name)


def pair_problem(a: Candidate, b: Candidate) -> Optional[Problem]:
    """Why ``a`` and ``b`` cannot share one environment (None: they can, as far as the data says)."""
    for name in sorted(set(a.pins) & set(b.pins), key=_pin_order):
        if intersect((a.pins[name], b.pins[name])) is None:
            return Problem("pins", f"{name}: {_describe_pin(a, a.pins[name])} but {_describe_pin(b, b.pins[name])}")
    return None


def cuda_mix(cands: Sequence[Candidate]) -> Optional[str]:
    """The warning for builds of different CUDA majors (facts/cuda_mix.py: check's ED662 judges the same)."""
    return mixed_majors([(c.label, c.cuda_major, c.cudnn) for c in cands if c.kind == "cuda"])


def group_problem(cands: Sequence[Candidate]) -> Optional[Problem]:
    for i, a in enumerate(cands):
        for b in cands[i + 1:]:
            p = pair_problem(a, b)
            if p is not None:
                return p
    names: set = set()
    for cnd in cands:
        names.update(cnd.pins)
    for name in sorted(names):
        specs = tuple(cnd.pins[name] for cnd in cands if name in cnd.pins)
        if len(specs) > 2 and intersect(specs) is None:
            who = "; ".join(_describe_pin(cnd, cnd.pins[name]) for cnd in cands if name in cnd.pins)
            return Problem("pins", f"{name}: no version satisfies all of {who}")
    return None


# --------------------------------------------------------------------------- results


@dataclass
class SharedPin:
    """A package more than one chosen build requires, with the specifier they agree on (or one build's pin capped
    for a target GPU: `by` then names the cap)."""

    name: str
    spec: str
    by: List[Tuple[str, str]] = field(default_factory=list)  # (candidate label, its specifier)

    @property
    def requirement(self) -> str:
        return f"{self.name}{self.spec}"

    def note(self) -> str:
        return "; ".join(f"{label} {spec}" for label, spec in self.by)


@dataclass
class Lock:
    """A resolved environment: one build per framework, the pins they share, and the assumptions."""

    constraints: Constraints
    picks: List[Candidate]
    shared_pins: List[SharedPin] = field(default_factory=list)
    driver_floor: Optional[str] = None
    driver_floor_why: str = ""
    cuda_version: Optional[str] = None  # newest CUDA X.Y a chosen build uses (conda's cuda-version)
    python_spec: str = ""  # the Python versions every chosen build supports
    warnings: List[str] = field(default_factory=list)
    unknown: List[str] = field(default_factory=list)  # facts the data lacks that a chosen build was judged without
    ok: bool = True

    def pick(self, framework: str) -> Optional[Candidate]:
        for p in self.picks:
            if p.framework == framework:
                return p
        return None

    def summary(self) -> str:
        return ", ".join(p.label for p in self.picks)

    def unknown_note(self) -> str:
        """What the lock says when a build was chosen on facts the data lacks ("" when every fact was known)."""
        if not self.unknown:
            return ""
        return ("no build whose facts are known fits this target, so this lock rests on facts the data lacks: "
                + "; ".join(self.unknown))

    def index_urls(self) -> List[str]:
        out: List[str] = []
        for p in self.picks:
            if p.index_url and p.index_url not in out:
                out.append(p.index_url)
        return out

    def assumptions(self) -> Dict[str, str]:
        """Human-readable assumptions the lock rests on (the header of every output)."""
        c = self.constraints
        cuda_picks = [p for p in self.picks if p.kind == "cuda"]
        if c.cpu or not cuda_picks:
            driver = "none needed (CPU-only environment)"
            line = "none (CPU-only environment)"
        else:
            driver = f">= {self.driver_floor} ({self.driver_floor_why})" if self.driver_floor else "unknown"
            if c.driver:
                driver += f"; target driver {c.driver}"
            majors = sorted({p.cuda_major for p in cuda_picks if p.cuda_major is not None})
            builds = ", ".join(f"{p.label} {p.cuda_desc}" for p in cuda_picks)
            if c.cuda:
                line = describe_line(c.cuda)
            else:
                line = " / ".join(f"{mj}.x" for mj in majors) + " (any minor the driver runs)"
            line += f"; builds: {builds}"
        if c.gpus:
            archs = ", ".join(g.display() for g in c.gpus)
        elif c.cpu:
            archs = "none (CPU-only environment)"
        else:
            archs = "not constrained (no GPU given): " + "; ".join(
                f"{p.label} compiles {_arch_span(p)}" if p.archs else f"{p.label}: compute capability >= {p.cc_min}"
                if p.cc_min else f"{p.label}: arch list unknown" for p in cuda_picks)
        py = c.python if c.python else "not constrained"
        if self.python_spec:
            py += f" (the chosen builds support Python {self.python_spec})"
        plat = c.platform + (" (WSL2: Linux wheels, Windows driver)" if c.wsl else "")
        return {"driver floor": driver, "CUDA line": line, "GPU archs": archs, "Python": py, "platform": plat}

    def to_dict(self) -> Dict[str, Any]:
        return {
            "ok": True,
            "constraints": self.constraints.to_dict(),
            "picks": [p.to_dict() for p in self.picks],
            "shared_pins": [{"name": s.name, "spec": s.spec, "by": [{"build": b, "spec": sp} for b, sp in s.by]}
                            for s in self.shared_pins],
            "index_urls": self.index_urls(),
            "driver_floor": self.driver_floor, "driver_floor_why": self.driver_floor_why,
            "cuda_version": self.cuda_version, "python_spec": self.python_spec,
            "assumptions": self.assumptions(), "warnings": list(self.warnings),
            "unknown": list(self.unknown), "chosen_on_unknown": bool(self.unknown),
        }


@dataclass
class Relaxation:
    """What resolving without one constraint gives."""

    dropped: str  # "--cuda 12.1", "tensorflow==2.16.*", "GPU sm_120 (...)", "tensorflow (use two environments)"
    outcome: str  # the builds it would choose, or why it still fails
    lock: Optional[Lock] = None


@dataclass
class Clash:
    """No combination fits: why, and what relaxing each constraint would give."""

    constraints: Constraints
    reasons: List[str] = field(default_factory=list)
    relaxations: List[Relaxation] = field(default_factory=list)
    ok: bool = False

    def message(self) -> str:
        lines = ["no environment satisfies every constraint together:"]
        lines += [f"  - {r}" for r in self.reasons]
        useful = [r for r in self.relaxations if r.lock is not None]
        if useful:
            lines.append("relaxing one constraint would give:")
            lines += [f"  - without {r.dropped}: {r.outcome}" for r in useful]
        else:
            lines.append("relaxing any single constraint does not help either.")
        return "\n".join(lines)

    def to_dict(self) -> Dict[str, Any]:
        return {
            "ok": False,
            "constraints": self.constraints.to_dict(),
            "reasons": list(self.reasons),
            "relaxations": [{"dropped": r.dropped, "outcome": r.outcome, "fits": r.lock is not None,
                             "picks": [p.label for p in r.lock.picks] if r.lock else []} for r in self.relaxations],
        }


LockResult = Any  # Lock | Clash  (both have .ok)


# --------------------------------------------------------------------------- validation (bad targets)


def _span(items: Sequence[str]) -> str:
    if not items:
        return "none"
    return items[0] if len(items) == 1 else f"{items[0]} … {items[-1]}"


def _py_span(supported: Sequence[str]) -> str:
    """"3.10 … 3.13", or ">= 3.11" when no chosen build names an upper bound."""
    if supported and supported[-1] == _PY_MINORS[-1]:
        return f">= {supported[0]}"
    return _span(supported)


def validate(c: Constraints, m: Any) -> None:
    """Raise BadInput (one line, naming what is available) for a target no data can describe."""
    if c.platform not in PLATFORMS:
        raise BadInput(f"unknown platform {c.platform!r}; platforms: {', '.join(PLATFORMS)}")
    if not c.frameworks:
        raise BadInput("no framework to lock; name one with --torch, --tensorflow or --jax")
    seen = set()
    for f in c.frameworks:
        if f.name not in FRAMEWORKS:
            raise BadInput(f"unknown framework {f.name!r}; frameworks: {', '.join(FRAMEWORKS)}")
        if f.name in seen:
            raise BadInput(f"{f.name} is named twice")
        seen.add(f.name)
    for comp in c.companions:
        if comp not in COMPANIONS:
            raise BadInput(f"unknown companion {comp!r}; companions: {', '.join(COMPANIONS)} (or none)")
    if c.cpu and (c.cuda or c.driver or c.gpus):
        raise BadInput("--cpu cannot be combined with --cuda, --driver or --gpu (a CPU-only environment has no CUDA target)")
    if not c.cpu and c.platform == "macos-arm64":
        raise BadInput("macos-arm64 has no CUDA builds of torch, tensorflow or jax; ask for a CPU lock with --cpu")
    if c.cuda:
        lines = m.cuda_series()
        v = parse_version(c.cuda)
        ok = v is not None and not v.local and len(v.release) <= 2
        if v is not None and ok:
            if len(v.release) == 1:
                ok = any(_v(s).major == v.major for s in lines)
            else:
                ok = f"{v.major}.{v.minor}" in lines
        if not ok:
            raise BadInput(f"unknown CUDA line {c.cuda!r}; the data knows {', '.join(lines)}")
    if c.driver is not None and parse_version(c.driver) is None:
        raise BadInput(f"--driver {c.driver!r} is not a driver version (like 535.104.05)")
    for g in c.gpus:
        if normalize_cc(g.cc) is None or m.arch(g.cc) is None:
            known = ", ".join("sm_" + k.replace(".", "") for k in sorted(m.archs, key=Version))
            raise BadInput(f"unknown GPU architecture {g.display()}; the data knows {known}")
        prob = driver_supports_gpu(m, c.driver, g.cc)
        if prob is not None:  # no build helps: the driver does not bind the GPU at all
            raise BadInput(f"GPU {g.display()}: {prob.message}; {prob.fix[0].lower() + prob.fix[1:]}")
    if c.python is not None:
        pv = parse_version(c.python)
        if pv is None or pv.major != 3:
            raise BadInput(f"--python-version {c.python!r} is not a Python 3 version (like 3.11)")
    for f in c.frameworks:
        versions = _known_versions(m, f.name)
        if not versions:
            raise BadInput(f"the compatibility data has no {f.name} releases")
        if f.spec:
            try:
                spec = SpecifierSet(normalize_spec(f.spec))
            except InvalidSpecifier:
                raise BadInput(f"--{f.name} {f.spec!r} is not a version or a PEP 440 specifier") from None
            if not any(spec.contains(Version(k), prereleases=True) or
                       (f.name == "torch" and _spec_has_local(spec, k)) for k in versions):
                raise BadInput(f"no {f.name} release in the data matches {f.spec!r}; known: {_span(versions)}")
        if c.python is not None:
            specs = _python_specs(m, f.name)
            if specs and not any(_py_ok(s, c.python) for s in specs):
                supported = [p for p in _PY_MINORS if any(_py_ok(s, p) for s in specs)]
                raise BadInput(f"no {f.name} release in the data supports Python {c.python}; "
                               f"{f.name} supports Python {_py_span(supported)}")


def _spec_has_local(spec: SpecifierSet, version: str) -> bool:
    for s in spec:
        if "+" in s.version and s.version.split("+", 1)[0] == version:
            return True
    return False


def _py_ok(spec: str, py: str) -> bool:
    ss, v = _specset(spec), _version(py)
    return ss is not None and v is not None and ss.contains(v, prereleases=True)


# --------------------------------------------------------------------------- the search


def _finish(m: Any, c: Constraints, picks: List[Candidate], warnings: List[str]) -> Lock:
    order = {n: i for i, n in enumerate(FRAMEWORKS)}
    picks = sorted(picks, key=lambda p: order.get(p.framework, 9))
    warnings = [w for w in [cuda_mix(picks)] if w] + list(warnings)
    shared: List[SharedPin] = []
    names: Dict[str, List[Candidate]] = {}
    for p in picks:
        for name in p.pins:
            names.setdefault(name, []).append(p)
    for name in sorted(names):
        owners = names[name]
        if len(owners) < 2:
            continue
        specs = [p.pins[name] for p in owners]
        shared.append(SharedPin(name, merged_spec(specs), [(p.label, p.pins[name]) for p in owners]))
    floor, why = None, ""
    for p in picks:
        f = driver_floor(m, p, c.driver_os)
        if f and (floor is None or _v(f) > _v(floor)):
            floor = f
            if p.driver_min and f == p.driver_min:
                why = f"{p.label} needs driver >= {f}"
            elif m.mvc_floor(p.cuda_major, c.driver_os):
                why = f"CUDA {p.cuda_major}.x minor-version compatibility"
            else:
                why = f"the CUDA {p.cuda} toolkit driver"
    cudas = [p.cuda for p in picks if p.kind == "cuda" and p.cuda]
    cuda_version = max(cudas, key=_v) if cudas else None
    py_specs = [p.python for p in picks if p.python]
    py = ""
    if py_specs:
        supported = [v for v in _PY_MINORS if all(_py_ok(s, v) for s in py_specs)]
        py = _py_span(supported) if supported else merged_spec(py_specs)
    warnings = list(warnings)
    full = m.max_cuda_for_driver(c.driver, c.driver_os) if c.driver else None
    if full:
        newer = [p for p in picks if p.kind == "cuda" and p.framework != "jax" and p.cuda and _v(p.cuda) > _v(full)]
        if newer:
            warnings.append(f"the driver {c.driver} fully supports CUDA up to {full}; "
                            f"{', '.join(p.label for p in newer)} {'run' if len(newer) > 1 else 'runs'} under "
                            "minor-version compatibility "
                            "(PTX built by a newer toolkit cannot be JIT-compiled)")
    shared_by_name = {sp.name: sp for sp in shared}
    for p in picks:
        for name, spec in p.pins.items():
            if not name.startswith("nvidia-cudnn") or p.cuda_major is None:
                continue
            agreed = shared_by_name[name].spec if name in shared_by_name else spec
            if agreed.startswith("=="):
                continue  # an exact cuDNN: already judged against every GPU
            caps = [(cap, g) for g in c.gpus for cap in [cudnn_cap_for_gpu(m, g.cc, p.cuda_major)] if cap]
            if not caps:
                continue
            cap, g = min(caps, key=lambda x: _v(x[0][1:]))
            capped = intersect((agreed, cap))
            if capped is None:
                continue  # every cuDNN the build accepts drops the GPU: judged with the candidate
            # pip picks the newest cuDNN the pin allows; cap it below the first release that drops the GPU
            capped = merged_spec([agreed, cap])
            cap_why = f"cap for GPU {g.display()}: cuDNN {cap[1:]} and newer drop compute capability {g.cc}"
            if name in shared_by_name:
                sp = shared_by_name[name]
                sp.spec, sp.by = capped, sp.by + [(cap_why, cap)]
            else:
                sp = SharedPin(name, capped, [(p.label, spec), (cap_why, cap)])
                shared.append(sp)
                shared_by_name[name] = sp
            warnings.append(f"{p.label} accepts cuDNN {agreed}; pip would pick the newest, which drops GPU "
                            f"{g.display()}: {name} is pinned {capped}")
    for p in picks:
        if p.pins_known == "cudnn-only" and len(picks) > 1:
            warnings.append(f"{p.label}: only its cuDNN pin is in the data (the download index's other nvidia-* pins "
                            "were not compared)")
        # an arch list the data lacks is said where it matters: per target GPU (Lock.unknown), else in "GPU archs"
        warnings.extend(f"unverified: {u}" for u in p.unverified if not unknowns([u]))
        warnings.extend(p.notes)
    seen: List[str] = []
    for w in warnings:
        if w not in seen:
            seen.append(w)
    return Lock(constraints=c, picks=picks, shared_pins=shared, driver_floor=floor, driver_floor_why=why,
                cuda_version=cuda_version, python_spec=py, warnings=seen)


Pool = Dict[Tuple[Any, ...], List[Candidate]]


def _filter(m: Any, c: Constraints, pool: Optional[Pool] = None) -> Tuple[Dict[str, List[Candidate]], Dict[str, List[Tuple[Candidate, List[Problem]]]], Dict[int, List[str]]]:
    """Candidates of each framework that fit alone, those that do not (with why), and the fitting ones' warnings.
    ``pool`` caches the enumeration across the re-resolutions of one call (the candidates are not modified)."""
    fitting: Dict[str, List[Candidate]] = {}
    rejected: Dict[str, List[Tuple[Candidate, List[Problem]]]] = {}
    warns: Dict[int, List[str]] = {}
    for f in c.frameworks:
        fitting[f.name] = []
        rejected[f.name] = []
        key = (f.name, c.platform, c.cpu, c.wsl, tuple(c.companions))
        if pool is not None and key in pool:
            cands = pool[key]
        else:
            cands = enumerate_candidates(m, f.name, c)
            if pool is not None:
                pool[key] = cands
        for cand in cands:
            w: List[str] = []
            probs = candidate_problems(m, cand, c, w)
            if probs:
                rejected[f.name].append((cand, probs))
            else:
                warns[id(cand)] = w
                fitting[f.name].append(cand)
        fitting[f.name] = known_first(fitting[f.name], warns)
    return fitting, rejected, warns


def _search(lists: List[List[Candidate]], one_major: bool = False) -> Optional[List[Candidate]]:
    """First combination (lexicographic: the first framework's newest build first) whose pins agree
    (``one_major``: and whose CUDA builds share one CUDA major)."""
    pair_cache: Dict[Tuple[int, int], bool] = {}

    def compatible(a: Candidate, b: Candidate) -> bool:
        key = (id(a), id(b))
        if key not in pair_cache:
            pair_cache[key] = pair_problem(a, b) is None and not (one_major and cuda_mix((a, b)))
        return pair_cache[key]

    def rec(i: int, chosen: List[Candidate]) -> Optional[List[Candidate]]:
        if i == len(lists):
            return list(chosen) if group_problem(chosen) is None else None
        for cand in lists[i]:
            if all(compatible(prev, cand) for prev in chosen):
                chosen.append(cand)
                found = rec(i + 1, chosen)
                chosen.pop()
                if found is not None:
                    return found
        return None

    return rec(0, [])


def _resolve_once(m: Any, c: Constraints, pool: Optional[Pool] = None) -> Tuple[Optional[Lock], List[str]]:
    """(lock, []) or (None, reasons)."""
    fitting, rejected, warns = _filter(m, c, pool)
    empty = [f.name for f in c.frameworks if not fitting[f.name]]
    if empty:
        return None, [_why_none(name, rejected[name], c) for name in empty]
    lists = [fitting[f.name] for f in c.frameworks]
    known = [[cand for cand in lst if not unknowns(warns.get(id(cand), ()))] for lst in lists]
    # two CUDA majors only when nothing else fits; a build judged on a fact the data lacks only when no build
    # whose facts are known fits (the lists are ranked known first: frameworks.base.known_first)
    combo = (_search(known, one_major=True) or _search(known)) if all(known) else None
    combo = combo or _search(lists, one_major=True) or _search(lists)
    if combo is None:
        return None, _why_no_combo(c, fitting)
    warnings: List[str] = []
    missing: List[str] = []
    for cand in combo:
        doubts = warns.get(id(cand), [])
        missing.extend(unknowns(doubts))
        warnings.extend(w for w in doubts if not unknowns([w]))  # said once, as what the choice rests on
    lock = _finish(m, c, combo, warnings)
    lock.unknown = missing
    return lock, []


def _constraint_name(key: str, c: Constraints) -> str:
    if key == "cuda":
        return f"the CUDA line {describe_line(c.cuda or '')}"
    if key == "driver":
        return f"the driver {c.driver}"
    if key == "python":
        return f"Python {c.python}"
    if key == "platform":
        return f"the platform {c.platform}"
    if key.startswith("gpu:"):
        cc = key.split(":", 1)[1]
        g = next((g for g in c.gpus if g.cc == cc), GpuTarget(cc))
        return f"GPU {g.display()}"
    if key.startswith("spec:"):
        req = c.framework(key.split(":", 1)[1])
        return req.display() if req else key
    return key


def _why_none(name: str, rejected: List[Tuple[Candidate, List[Problem]]], c: Constraints) -> str:
    kind = "CPU" if c.cpu else "CUDA"
    if not rejected:
        return f"the data has no {kind} build of {name} at all"
    req = c.framework(name)
    wanted = req.display() if req else name
    # only the builds the user's version spec allows say anything about the other constraints
    relevant = [(cand, probs) for cand, probs in rejected if not any(p.key.startswith("spec:") for p in probs)]
    if not relevant:
        return f"the data has no {kind} build of {wanted}"
    by_key: Dict[str, List[Tuple[Candidate, Problem]]] = {}
    for cand, probs in relevant:
        for p in probs:
            by_key.setdefault(p.key, []).append((cand, p))
    parts = [f"{_constraint_name(key, c)} rules out {len(items)} (e.g. {items[0][1].message})"
             for key, items in by_key.items()]
    return f"no {kind} build of {wanted} fits" + (": " + "; ".join(parts) if parts else "")


def _why_no_combo(c: Constraints, fitting: Dict[str, List[Candidate]]) -> List[str]:
    reasons: List[str] = []
    names = [f.name for f in c.frameworks]
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            pairs = [(x, y) for x in fitting[a] for y in fitting[b]]
            if any(pair_problem(x, y) is None for x, y in pairs):
                continue
            same = [(x, y) for x, y in pairs if x.cuda_major == y.cuda_major]
            x0, y0 = same[0] if same else pairs[0]
            example = pair_problem(x0, y0)
            reasons.append(f"none of the {len(fitting[a])} {a} builds that fit can share an environment with any of the "
                           f"{len(fitting[b])} {b} builds that fit; e.g. {example.message if example else ''}")
    if not reasons:
        first = [fitting[n][0] for n in names]
        p = group_problem(first)
        reasons.append("every pair of frameworks can be combined, but not all of them at once"
                       + (f"; e.g. {p.message}" if p else ""))
    return reasons


def _relaxations(m: Any, c: Constraints, pool: Optional[Pool] = None) -> List[Relaxation]:
    options: List[Tuple[str, Constraints, Optional[str]]] = []
    for f in c.frameworks:
        if f.spec:
            frs = [FrameworkRequest(x.name, "" if x.name == f.name else x.spec) for x in c.frameworks]
            options.append((f"{f.display()} (any {f.name} version)", c.copy(frameworks=frs), None))
    if len(c.frameworks) > 1:
        for f in c.frameworks:
            rest = [FrameworkRequest(x.name, x.spec) for x in c.frameworks if x.name != f.name]
            options.append((f"{f.name} (use two environments)", c.copy(frameworks=rest), f.name))
    if c.cuda:
        options.append((f"--cuda {c.cuda}", c.copy(cuda=None), None))
    if c.driver:
        options.append((f"the driver {c.driver} (upgrade it)", c.copy(driver=None), None))
    for g in c.gpus:
        options.append((f"GPU {g.display()}", c.copy(gpus=[x for x in c.gpus if x.cc != g.cc]), None))
    if c.python:
        options.append((f"Python {c.python}", c.copy(python=None), None))
    out: List[Relaxation] = []
    splits: List[frozenset] = []
    for label, cc, alone in options:
        lock, why = _resolve_once(m, cc, pool)
        if lock is None:
            out.append(Relaxation(label, "still no fit: " + "; ".join(why)))
            continue
        outcome = lock.summary()
        if alone is not None:
            solo, _ = _resolve_once(m, c.copy(frameworks=[x for x in c.frameworks if x.name == alone]), pool)
            if solo is None:
                out.append(Relaxation(label, f"{outcome}; but {alone} alone does not fit either"))
                continue
            split = frozenset([frozenset(p.label for p in lock.picks), frozenset(p.label for p in solo.picks)])
            if split in splits:
                continue  # the same two environments as another framework's split
            splits.append(split)
            outcome = f"{outcome} in one environment and {solo.summary()} in another"
        elif c.python and label.startswith("Python") and lock.python_spec:
            outcome += f" (Python {lock.python_spec})"
        out.append(Relaxation(label, outcome, lock))
    return out


def resolve(constraints: Constraints, matrices: Any, explain: bool = True) -> Any:
    """Resolve ``constraints`` against ``matrices``: a :class:`Lock` (``.ok`` True) with the newest builds that
    satisfy everything together, or a :class:`Clash` (``.ok`` False) saying which constraints clash and, when
    ``explain``, what dropping each one would give.  Raises BadInput for targets the data cannot describe."""
    validate(constraints, matrices)
    pool: Pool = {}
    lock, why = _resolve_once(matrices, constraints, pool)
    if lock is not None:
        return lock
    clash = Clash(constraints=constraints, reasons=why)
    if explain:
        clash.relaxations = _relaxations(matrices, constraints, pool)
    return clash


# --------------------------------------------------------------------------- re-checking an existing lock


@dataclass
class PinnedRequirement:
    """A requirement read back from a lock file: ``torch==2.1.2+cu121`` -> name torch, version 2.1.2+cu121."""

    name: str  # canonical
    extras: List[str]
    version: Optional[str]  # the exact pin ("==X"), else None
    text: str


@dataclass
class CheckResult:
    ok: bool
    problems: List[str] = field(default_factory=list)
    picks: List[Candidate] = field(default_factory=list)
    warnings: List[str] = field(default_factory=list)

    def to_dict(self) -> Dict[str, Any]:
        return {"ok": self.ok, "problems": list(self.problems), "builds": [p.label for p in self.picks],
                "warnings": list(self.warnings)}


def candidates_from_pins(m: Any, reqs: Sequence[PinnedRequirement], platform: str, wsl: bool = False,
                         kinds: Optional[Dict[str, str]] = None) -> Tuple[List[Candidate], List[str]]:
    """The builds a lock's pins name (as candidates), and the problems found naming them (unknown, unpublished).

    ``kinds`` (framework -> build name, from the lock's header) disambiguates a plain ``tensorflow==X``."""
    kinds = kinds or {}
    picks: List[Candidate] = []
    problems: List[str] = []
    by_name = {r.name: r for r in reqs}
    torch_req = by_name.get("torch")
    if torch_req is not None:
        if not torch_req.version:
            problems.append(f"{torch_req.text}: not an exact pin (==)")
        else:
            pv = parse_version(torch_req.version)
            rel = m.torch_release(torch_req.version) if pv is not None else None
            if pv is None or rel is None or not rel.has_patch(torch_req.version):
                problems.append(f"torch {torch_req.version} is not in the compatibility data (collected {m.collected})")
            else:
                var = rel.variant(pv.local) if pv.local else rel.default_variant(platform)
                if var is None:
                    what = f"torch {torch_req.version}" + ("" if pv.local else f" (the PyPI default build for {platform})")
                    problems.append(f"{what} was never published (per the data)")
                else:
                    cand = torch_candidate(m, rel, pv.base_version, var, platform, ())
                    picks.append(cand)
                    prow = rel.patch(pv.base_version)
                    for comp in COMPANIONS:
                        creq = by_name.get(comp)
                        want = getattr(prow, comp, None) if prow is not None else None
                        if creq is not None and creq.version and want and \
                                Version(Version(creq.version).public) != Version(want):
                            problems.append(f"{comp} {creq.version} is not the companion of torch {pv.base_version} "
                                            f"({comp} {want})")
    tf_req = by_name.get("tensorflow") or by_name.get("tensorflow-cpu")
    if tf_req is not None:
        rel = m.tf_release(tf_req.version) if tf_req.version else None
        if not tf_req.version:
            problems.append(f"{tf_req.text}: not an exact pin (==)")
        elif rel is None or Version(rel.tested) != Version(tf_req.version):
            problems.append(f"tensorflow {tf_req.version} is not in the compatibility data (collected {m.collected})")
        else:
            gpu = tf_req.name == "tensorflow" and ("and-cuda" in tf_req.extras or
                                                    kinds.get("tensorflow", "") in ("and-cuda", "system-cuda"))
            if "and-cuda" in tf_req.extras and not rel.and_cuda:
                problems.append(f"tensorflow {tf_req.version} has no [and-cuda] extra "
                                f"(first in {m.fact_value('tf-and-cuda-first')})")
            else:
                picks.append(tf_candidate(m, rel, gpu, platform, wsl))
    jax_req = by_name.get("jax")
    if jax_req is not None:
        rel = m.jax_release(jax_req.version) if jax_req.version else None
        if not jax_req.version:
            problems.append(f"{jax_req.text}: not an exact pin (==)")
        elif rel is None or Version(rel.version) != Version(jax_req.version):
            problems.append(f"jax {jax_req.version} is not in the compatibility data (collected {m.collected})")
        else:
            plugin_names = [e for e in jax_req.extras if e.startswith("cuda")]
            plugin = None
            if plugin_names:
                key = "cuda12" if plugin_names[0] == "cuda" else plugin_names[0]
                plugin = rel.plugins.get(key)
                if plugin is None:
                    problems.append(f"jax {jax_req.version} has no {plugin_names[0]} plugin release (per the data)")
            if plugin is not None or not plugin_names:
                picks.append(jax_candidate(m, rel, plugin))
    for spec in registry.SPECS.values():  # frameworks whose module names a pinned build (onnxruntime, paddlepaddle)
        if not isinstance(spec, TableSpec):
            continue
        for req in reqs:
            if spec.classify(req.name) != "gpu":
                continue
            pinned = spec.pinned_candidate(req.version) if req.version else None
            if not req.version:
                problems.append(f"{req.text}: not an exact pin (==)")
            elif pinned is None:
                problems.append(f"{req.name} {req.version} is not in the compatibility data (collected {m.collected})")
            else:
                picks.append(pinned)
    if not picks and not problems:
        problems.append("the file pins no " + ", ".join(registry.names(lockable=True)))
    return picks, problems


def check(m: Any, target: Constraints, reqs: Sequence[PinnedRequirement], kinds: Optional[Dict[str, str]] = None,
          lock_platform: Optional[str] = None, index_urls: Optional[Sequence[str]] = None) -> CheckResult:
    """Does a lock's set of pins still fit ``target`` (a machine or a stated target) under the current data?

    ``index_urls`` (the file's index lines, when known) must hold the index of every build that needs one."""
    problems: List[str] = []
    if lock_platform and lock_platform != target.platform:
        problems.append(f"the lock was made for {lock_platform}, the target is {target.platform}")
    picks, naming = candidates_from_pins(m, reqs, lock_platform or target.platform, target.wsl, kinds)
    problems.extend(naming)
    if index_urls is not None:
        have = {u.rstrip("/") for u in index_urls}
        for cand in picks:
            if cand.index_url and cand.index_url.rstrip("/") not in have:
                problems.append(f"{cand.label} is served by {cand.index_url}, but the file has no index line for it")
    warnings: List[str] = []
    for cand in picks:
        for prob in candidate_problems(m, cand, target.copy(frameworks=[]), warnings):
            problems.append(prob.message)
    gp = group_problem(picks)
    if gp is not None:
        problems.append(gp.message)
    mix = cuda_mix(picks)
    if mix:
        warnings.insert(0, mix)
    seen: List[str] = []
    for p in problems:
        if p not in seen:
            seen.append(p)
    return CheckResult(ok=not seen, problems=seen, picks=picks, warnings=warnings)
