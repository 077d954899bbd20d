"""The typed model every framework shares: a :class:`Target`, a :class:`Candidate` build, a :class:`Problem`,
and the :class:`FrameworkSpec` interface (one module per framework in this package, one registry).

``lock`` (which builds to write), ``gate`` (does what a file installs fit) and ``check``'s fix suggestions (which
build to install instead) all ask a spec the same two questions: ``candidates(m, target)`` (the builds the
matrices list, newest first) and ``fits(m, candidate, target)`` (what the candidate breaks).  The generic part
of ``fits`` -- platform, Python, CUDA line, driver under minor-version compatibility and PTX JIT, GPU arch,
cuDNN on the GPU -- lives here once (:func:`common_problems`); a spec adds only its own.
"""
from __future__ import annotations

import abc
import functools
import importlib
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from envdoctor.facts.gpu_support import cudnn_supports_gpu
from envdoctor.facts.platform import BUILD_PLATFORMS, driver_os_of
from envdoctor.facts.pins import canonical_name  # not packaging.utils: it imports packaging.tags
from envdoctor.knowledge.tables import build_runs_on_cc, normalize_cc, parse_version
from envdoctor.records import dataclass, field

PLATFORMS = BUILD_PLATFORMS  # the keys a build is published for or not (envdoctor.facts.platform owns them)
COMPANIONS = ("torchvision", "torchaudio")


# --------------------------------------------------------------------------- the target


@dataclass
class GpuTarget:
    """A GPU the environment must run on: compute capability "8.6" and how the user named it."""

    cc: str
    label: str = ""

    @property
    def sm(self) -> str:
        return "sm_" + self.cc.replace(".", "")

    def display(self) -> str:
        return f"{self.sm} ({self.label})" if self.label and self.label != self.sm else self.sm


@dataclass
class FrameworkRequest:
    """A framework to put in the environment; ``spec`` is a PEP 440 specifier ("" = any version)."""

    name: str
    spec: str = ""

    def display(self) -> str:
        return f"{self.name}{normalize_spec(self.spec)}" if self.spec else self.name


@dataclass
class Target:
    """Everything the environment must satisfy (the target machine, stated or probed).  ``None`` / empty means "not constrained"."""

    frameworks: List[FrameworkRequest] = field(default_factory=lambda: [FrameworkRequest("torch")])
    cuda: Optional[str] = None  # CUDA line "12.1" ("12" = any 12.x)
    driver: Optional[str] = None  # "535.104.05"
    gpus: List[GpuTarget] = field(default_factory=list)
    python: Optional[str] = None  # "3.11"
    platform: str = "linux-x86_64"
    wsl: bool = False  # Linux wheels on WSL2: the Windows driver, TensorFlow's 'wsl2' GPU platform
    cpu: bool = False  # a CPU-only environment, asked for explicitly
    companions: List[str] = field(default_factory=lambda: list(COMPANIONS))
    origin: Dict[str, str] = field(default_factory=dict)  # constraint -> where it came from ("--cuda", "snapshot")

    @property
    def driver_os(self) -> str:
        return driver_os_of(self.platform, self.wsl)

    def framework(self, name: str) -> Optional[FrameworkRequest]:
        for f in self.frameworks:
            if f.name == name:
                return f
        return None

    def copy(self, **changes: Any) -> "Target":
        data: Dict[str, Any] = dict(
            frameworks=[FrameworkRequest(f.name, f.spec) for f in self.frameworks], cuda=self.cuda,
            driver=self.driver, gpus=[GpuTarget(g.cc, g.label) for g in self.gpus], python=self.python,
            platform=self.platform, wsl=self.wsl, cpu=self.cpu, companions=list(self.companions),
            origin=dict(self.origin))
        data.update(changes)
        return Target(**data)

    def to_dict(self) -> Dict[str, Any]:
        return {
            "frameworks": [{"name": f.name, "spec": f.spec} for f in self.frameworks],
            "cuda": self.cuda, "driver": self.driver,
            "gpus": [{"cc": g.cc, "sm": g.sm, "label": g.label} for g in self.gpus],
            "python": self.python, "platform": self.platform, "wsl": self.wsl, "cpu": self.cpu,
            "companions": list(self.companions), "origin": dict(self.origin),
        }


# --------------------------------------------------------------------------- candidates


@dataclass
class Requirement:
    """One line of the lock: ``text`` is a pip requirement ("torch==2.5.1+cu121"), ``note`` a comment."""

    text: str
    note: str = ""


@dataclass
class Candidate:
    """One published build of one framework, with everything needed to judge and to write it."""

    framework: str  # torch | tensorflow | jax
    version: str  # "2.5.1"
    build: str  # torch variant name ("cu121", "cpu") | "and-cuda" | "system-cuda" | jax plugin ("cuda12") | "cpu"
    kind: str  # cuda | cpu
    label: str  # "torch 2.5.1+cu121"
    full_version: str  # version matched against the user's specifier ("2.5.1+cu121")
    cuda: Optional[str] = None  # CUDA X.Y the build needs
    cudnn: Optional[str] = None  # exact cuDNN version when known
    python: Optional[str] = None  # specifier of CPython versions
    platforms: List[str] = field(default_factory=list)
    archs: List[str] = field(default_factory=list)  # sm_XY / compute_XY compiled in ([] = unknown)
    archs_undecided_newer: bool = False  # PTX of the last arch disputed: newer GPUs "unknown", not "no"
    archs_presumed: bool = False  # the data marks the arch list UNVERIFIED: a missing arch is a doubt, not a "no"
    cc_min: Optional[str] = None  # floor instead of an arch list (jax plugins)
    driver_min: Optional[str] = None  # extra driver floor (jax plugins)
    pins: Dict[str, str] = field(default_factory=dict)  # canonical package name -> specifier
    pins_known: str = "metadata"  # metadata | cudnn-only | none
    index_url: Optional[str] = None
    requirements: List[Requirement] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    unverified: List[str] = field(default_factory=list)
    unknown: List[str] = field(default_factory=list)  # facts the data lacks that it was chosen without (choose)
    source: str = ""
    row: Any = field(default=None, repr=False, compare=False)  # the matrices row it was built from

    @property
    def cuda_major(self) -> Optional[int]:
        v = _version(self.cuda) if self.cuda else None
        return v.major if v is not None else None

    @property
    def requirement(self) -> str:
        return self.requirements[0].text if self.requirements else ""

    @property
    def cuda_desc(self) -> str:
        """"built for CUDA 12.4" (jax plugins: "CUDA 12 plugin, runtime >= 12.1"); "" for CPU builds."""
        if self.kind != "cuda" or not self.cuda:
            return ""
        if self.framework == "jax":
            return f"CUDA {self.cuda_major} plugin, runtime >= {self.cuda}"
        return f"built for CUDA {self.cuda}"

    def to_dict(self) -> Dict[str, Any]:
        return {
            "framework": self.framework, "version": self.version, "build": self.build, "kind": self.kind,
            "label": self.label, "cuda": self.cuda, "cudnn": self.cudnn, "python": self.python,
            "platforms": list(self.platforms), "archs": list(self.archs), "index_url": self.index_url,
            "requirements": [{"text": r.text, "note": r.note} for r in self.requirements],
            "pins": dict(self.pins), "pins_known": self.pins_known, "notes": list(self.notes),
            "unverified": list(self.unverified), "source": self.source,
        }


@functools.lru_cache(maxsize=1024)
def specset(text: str) -> Optional[SpecifierSet]:
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        return None


@functools.lru_cache(maxsize=1024)
def _version(text: str) -> Optional[Version]:
    return parse_version(text)


@functools.lru_cache(maxsize=512)
def _cudnn_on_gpu(m: Any, cudnn: str, cc: str, cuda_major: int) -> Optional[str]:
    prob = cudnn_supports_gpu(m, cudnn, cc, cuda_major)
    return prob.message if prob is not None else None


@functools.lru_cache(maxsize=512)
def _toolkit_driver(m: Any, cuda: Optional[str], os: str) -> Optional[str]:
    return m.min_driver_for_cuda(cuda, os) if cuda else None


@functools.lru_cache(maxsize=512)
def _driver_ok(m: Any, driver: str, cuda: str, os: str) -> bool:
    return bool(m.driver_runs_cuda(driver, cuda, os))


@functools.lru_cache(maxsize=512)
def _driver_floor_cached(m: Any, cuda: Optional[str], extra: Optional[str], os: str) -> Optional[str]:
    v = _version(cuda) if cuda else None
    if v is None:
        return None
    floor = m.mvc_floor(v.major, os) or m.min_driver_for_cuda(cuda, os)
    if extra and (floor is None or _v(extra) > _v(floor)):
        floor = extra
    return floor


def _pin_names(pins: Dict[str, str]) -> Dict[str, str]:
    return {canonical_name(k): str(v) for k, v in (pins or {}).items()}


def _sorted_desc(versions: Iterable[str]) -> List[str]:
    return sorted(versions, key=lambda v: Version(v), reverse=True)

# --------------------------------------------------------------------------- judging one candidate


class Unknown(str):
    """A doubt that is a fact the data lacks (no arch list, disputed PTX, no Python range), not a known risk: a build
    judged on one ranks below every build whose facts are known (:func:`known_first`)."""


def unknowns(warnings: Iterable[str]) -> List[str]:
    """The doubts of a judgement that are facts missing from the data."""
    return [str(w) for w in warnings if isinstance(w, Unknown)]


@dataclass
class Problem:
    """Why a candidate (or a pair) does not fit: ``key`` names the constraint ("cuda", "driver", "gpu:8.6",
    "python", "platform", "spec:torch", "pins"), ``message`` says it in words."""

    key: str
    message: str


def driver_floor(m: Any, cand: Candidate, os: str) -> Optional[str]:
    """Lowest driver that runs ``cand``: the MVC floor of its CUDA major (the toolkit driver for families without
    one), raised to the plugin's own floor for jax."""
    if cand.kind != "cuda" or cand.cuda_major is None:
        return None
    return _driver_floor_cached(m, cand.cuda, cand.driver_min, os)


def _v(text: Optional[str]) -> Version:
    v = _version(str(text)) if text is not None else None
    return v if v is not None else Version("0")


def runs_on(cand: Candidate, cc: str) -> Tuple[Optional[bool], bool]:
    """(does the build have kernels for cc, only through PTX JIT)."""
    if cand.kind != "cuda":
        return None, False
    if cand.cc_min is not None:
        return _v(cc) >= _v(cand.cc_min), False
    if not cand.archs:
        return None, False
    result = build_runs_on_cc(cand.archs, cc)
    if result is True:
        sass = [a for a in cand.archs if str(a).startswith("sm_")]
        return True, not build_runs_on_cc(sass, cc) if sass else True
    if result is False and cand.archs_undecided_newer:
        last = normalize_cc(cand.archs[-1])
        if last is not None and _v(cc) > _v(last):
            return None, False
    return result, False


def _arch_span(cand: Candidate) -> str:
    if not cand.archs:
        return "an unknown arch list"
    if len(cand.archs) <= 3:
        return ", ".join(cand.archs)
    return f"{cand.archs[0]} … {cand.archs[-1]}"


def _older_major_ptx_only(archs: List[str], cc: str) -> bool:
    """True when no arch of ``archs`` (SASS or PTX) is of the GPU's own major at or below its minor: the GPU
    gets kernels only by JIT-compiling PTX of an older architecture generation."""
    gv = _v(cc)
    for a in archs:
        n = normalize_cc(a)
        av = _v(n) if n is not None else None
        if av is not None and av.major == gv.major and av <= gv:
            return False
    return True


def _cuda_cannot_reach(m: Any, cand: Candidate, cc: str, xla: bool) -> Optional[str]:
    """Why the build's own CUDA rules the GPU out, or None.  (a) An XLA framework reaching the GPU only through
    PTX of an older major must also generate code for it, which its CUDA cannot when it predates (or dropped)
    the GPU's architecture.  (b) A build whose arch list the data lacks is judged by its CUDA: one that cannot
    target the GPU has no kernel for it, except that a non-XLA build may embed PTX a newer GPU can JIT."""
    if cand.kind != "cuda" or not cand.cuda or cand.cc_min is not None:
        return None
    if m.cuda_supports_cc(cand.cuda, cc) is not False:
        return None
    sm = "sm_" + cc.replace(".", "")
    if cand.archs:
        if xla and _older_major_ptx_only(cand.archs, cc):
            return (f"it has only PTX of an older architecture ({_arch_span(cand)}) and its CUDA {cand.cuda} "
                    f"cannot target {sm}, so XLA cannot generate code for it")
        return None
    info = m.arch(cc)
    first = getattr(info, "first_cuda", None) if info is not None else None
    gpu_newer = bool(first) and _v(cand.cuda) < _v(first)
    if gpu_newer and not xla:
        return None
    return f"its CUDA {cand.cuda} cannot produce {sm} code (and the data has no arch list for it)"


def python_fits(cand: Candidate, python: Optional[str]) -> Optional[bool]:
    """Does ``cand`` publish wheels for ``python`` ("3.11", "3.11.4")?  None when either is unknown."""
    if not python or not cand.python:
        return None
    pyspec, pyv = specset(cand.python), _version(python)
    if pyspec is None or pyv is None:
        return None
    return bool(pyspec.contains(pyv, prereleases=True))


def common_problems(m: Any, cand: Candidate, c: Target, warnings: Optional[List[str]] = None,
                    xla: bool = False) -> List[Problem]:
    """Every generic constraint ``cand`` breaks (empty: it fits): version spec, platform, Python, CUDA line,
    driver (minor-version compatibility, PTX JIT), GPU arch, cuDNN on the GPU.  ``xla``: the framework
    generates code with XLA, so reaching a GPU through PTX of an older major also needs the build's CUDA to
    target the GPU.  Unknown-but-possible fits go to ``warnings``."""
    probs: List[Problem] = []
    req = c.framework(cand.framework)
    if req is not None and req.spec:
        spec = specset(normalize_spec(req.spec))
        if spec is not None and not spec.contains(_v(cand.full_version), prereleases=True):
            probs.append(Problem(f"spec:{cand.framework}", f"{cand.label} is not {req.display()}"))
    if c.platform not in cand.platforms:
        where = ", ".join(cand.platforms) or "no platform"
        plat = c.platform + (" (WSL2)" if c.wsl else "")
        probs.append(Problem("platform", f"{cand.label} is not published for {plat} (only {where})"))
    py_fit = python_fits(cand, c.python)
    if py_fit is False:
        probs.append(Problem("python", f"{cand.label} has no wheels for Python {c.python} (Python {cand.python})"))
    elif py_fit is None and c.python and warnings is not None:
        warnings.append(Unknown(f"{cand.label}: whether it has wheels for Python {c.python} is not known "
                                "(its Python range is not in the data)"))
    if cand.kind != "cuda":
        return probs
    if c.cuda:
        line = _v(c.cuda)
        bv = _v(cand.cuda)
        same_major = bv.major == line.major
        exact_line = len(line.release) >= 2
        if not same_major or (exact_line and (bv.major, bv.minor) > (line.major, line.minor)):
            probs.append(Problem("cuda", f"{cand.label} is built for CUDA {cand.cuda}, outside the CUDA line {describe_line(c.cuda)}"))
    need = _driver_floor_cached(m, cand.cuda, cand.driver_min, c.driver_os) if cand.kind == "cuda" else None
    if c.driver:
        ok = _driver_ok(m, c.driver, cand.cuda, c.driver_os)
        if ok and cand.driver_min and _v(c.driver) < _v(cand.driver_min):
            ok = False
        if not ok:
            probs.append(Problem("driver", f"the driver {c.driver} cannot run {cand.label} (needs >= {need or 'an unknown driver'})"))
    for g in c.gpus:
        fits, via_ptx = runs_on(cand, g.cc)
        if fits is False and cand.archs_presumed and m.cuda_supports_cc(cand.cuda, g.cc) is not False:
            # as check's ED200: a presumed list is trusted for a "no" only where the build's CUDA cannot target the GPU
            if warnings is not None:
                warnings.append(f"{cand.label} may have no kernels for GPU {g.display()}: its arch list "
                                f"({_arch_span(cand)}) is presumed by the data, not read from the build")
            fits = True  # judged on: the cuDNN it brings must still support the GPU
        if fits is False:
            if cand.cc_min is not None:
                why = f"needs compute capability >= {cand.cc_min}"
            else:
                why = f"it is compiled for {_arch_span(cand)}"
            probs.append(Problem(f"gpu:{g.cc}", f"{cand.label} has no kernels for GPU {g.display()}: {why}"))
            continue
        dead = _cuda_cannot_reach(m, cand, g.cc, xla) if fits is not False else None
        if dead is not None:
            probs.append(Problem(f"gpu:{g.cc}", f"{cand.label} cannot run on GPU {g.display()}: {dead}"))
            continue
        if fits is None and warnings is not None:
            warnings.append(Unknown(f"{cand.label}: whether it has kernels for {g.display()} is not known "
                                    f"({'its arch list is not in the data' if not cand.archs else 'PTX embedding is disputed'})"))
        if via_ptx:
            toolkit = _toolkit_driver(m, cand.cuda, c.driver_os)
            if c.driver and toolkit and _v(c.driver) < _v(toolkit):
                probs.append(Problem("driver", f"{cand.label} runs on {g.display()} only through PTX JIT, which needs the "
                                     f"CUDA {cand.cuda} toolkit driver >= {toolkit}; the driver is {c.driver}"))
            elif warnings is not None:
                warnings.append(f"{cand.label} runs on {g.display()} only through PTX JIT (first start compiles kernels; "
                                f"needs driver >= {toolkit or 'the CUDA ' + str(cand.cuda) + ' toolkit driver'})")
        if cand.cudnn and cand.cuda_major is not None:
            why_not = _cudnn_on_gpu(m, cand.cudnn, g.cc, cand.cuda_major)
            if why_not is not None:
                probs.append(Problem(f"gpu:{g.cc}", f"{cand.label} brings {why_not} (GPU {g.display()})"))
    return probs


def describe_line(cuda: str) -> str:
    v = _v(cuda)
    if len(v.release) < 2:
        return f"{v.major}.x"
    return f"{v.major}.{v.minor} (or an older {v.major}.x)"


def normalize_spec(spec: str) -> str:
    """A user's version text as a PEP 440 specifier: "2.5.1" -> "==2.5.1", "2.5" -> "==2.5.*", "=2.5.1" -> "==2.5.1"."""
    text = str(spec or "").strip().replace(" ", "")
    if not text:
        return ""
    if text.startswith("=") and not text.startswith("=="):
        text = "=" + text
    if text[0].isdigit():
        v = parse_version(text)
        if v is not None and not v.local and len(v.release) <= 2 and not v.is_prerelease:
            return f"=={text}.*"
        return f"=={text}"
    return text


def known_first(fitting: Sequence[Candidate], doubts: Mapping[int, Sequence[str]]) -> List[Candidate]:
    """The one ranking lock, gate and check's fixes share: builds that fit, every one whose facts are known
    before any judged on a fact the data lacks (``doubts``: each candidate's warnings, by ``id``), newest first
    within each.  "Not known" must never outrank a known older fit."""
    return sorted(fitting, key=lambda cand: bool(unknowns(doubts.get(id(cand), ()))))


# --------------------------------------------------------------------------- the interface


def resolve_dotted(name: str) -> Callable[..., Any]:
    """The callable a "package.module:function" name designates (imported now, not when the spec is defined)."""
    module, sep, attr = name.partition(":")
    if not sep or not module or not attr:
        raise ValueError(f"{name!r} is not a 'module:function' name")
    obj = getattr(importlib.import_module(module), attr)
    if not callable(obj):
        raise TypeError(f"{name} is not callable")
    return obj


class FrameworkSpec(abc.ABC):
    """One framework: its distributions, the builds the matrices list, and how one is judged and installed."""

    #: the framework's name ("torch"), as lock's --torch / a snapshot's Framework.name
    name: str = ""
    #: distribution name -> what it is: "gpu" (a CUDA build is possible), "cpu" (CPU-only), "plugin", "companion"
    distributions: Dict[str, str] = {}
    #: XLA-based: PTX JIT across a major also needs the build's CUDA to target the GPU
    xla: bool = False
    #: lock can offer it (the matrices list its builds)
    lockable: bool = True
    #: its program for ``envdoctor smoke``: a file name under envdoctor/smoke/programs/ (None: no smoke test)
    smoke_program: Optional[str] = None
    #: the matrices table ``envdoctor matrices refresh`` learns for it ("pytorch"; None: not refreshed) and the
    #: learner that does, as "module:function" (resolved only when refresh runs: :func:`resolve_dotted`)
    refresh_table: Optional[str] = None
    refresh_learner: Optional[str] = None
    #: the files its distributions ship that state the build, relative to site-packages (what the pyenv probe
    #: reads; its stdlib-only helper keeps its own list, which a test holds equal to this), and the parser of the
    #: first one as "module:function"
    version_files: Tuple[str, ...] = ()
    version_parser: Optional[str] = None
    #: what ``lock --help`` shows for ``--NAME``: a full version, a short one and a PEP 440 range (() = none)
    lock_examples: Tuple[str, ...] = ()

    def classify(self, distribution: str) -> Optional[str]:
        """"gpu" / "cpu" / "plugin" / "companion" for a distribution this framework owns, else None."""
        return self.distributions.get(canonical_name(distribution))

    @abc.abstractmethod
    def candidates(self, m: Any, target: Target) -> List[Candidate]:
        """Every build of the right kind for ``target`` (CUDA, or CPU when ``target.cpu``), newest first."""

    def fits(self, m: Any, cand: Candidate, target: Target, warnings: Optional[List[str]] = None) -> List[Problem]:
        """Every constraint of ``target`` that ``cand`` breaks (empty: it fits); doubts go to ``warnings``."""
        return common_problems(m, cand, target, warnings, xla=self.xla) + self.own_problems(m, cand, target)

    def own_problems(self, m: Any, cand: Candidate, target: Target) -> List[Problem]:
        """What this framework judges beyond the generic part (none by default)."""
        return []

    def install_requirements(self, cand: Candidate) -> List[str]:
        """The requirement lines that install ``cand`` ("torch==2.5.1+cu121", its companions ...)."""
        return [r.text for r in cand.requirements]

    @abc.abstractmethod
    def known_versions(self, m: Any) -> List[str]:
        """Every version of the framework the matrices know, oldest first."""

    @abc.abstractmethod
    def python_specs(self, m: Any) -> List[str]:
        """The Requires-Python specifiers of its releases."""

    def matching(self, m: Any, target: Target, specifier: str = "", prereleases: bool = True) -> List[Candidate]:
        """``candidates`` whose version the PEP 440 ``specifier`` allows, newest first."""
        ss = specset(normalize_spec(specifier)) if specifier else None
        out = self.candidates(m, target)
        if ss is None:
            return out
        return [c for c in out if ss.contains(_v(c.full_version), prereleases=prereleases)]

    def choose(self, m: Any, target: Target, specifier: str = "",
               accept: Optional[Any] = None) -> Optional[Candidate]:
        """The newest candidate the ``specifier`` allows that fits ``target`` (and ``accept(cand)`` when given),
        ranked as lock ranks (:func:`known_first`): one judged on a fact the data lacks only when none is known to fit."""
        doubts: Dict[int, List[str]] = {}
        fitting: List[Candidate] = []
        for cand in self.matching(m, target, specifier):
            w: List[str] = []
            if self.fits(m, cand, target, w) or (accept is not None and not accept(cand)):
                continue
            if not unknowns(w):
                return cand  # newest first: the first known fit is the choice
            doubts[id(cand)] = w
            fitting.append(cand)
        ranked = known_first(fitting, doubts)
        if not ranked:
            return None
        ranked[0].unknown = unknowns(doubts[id(ranked[0])])  # no known fit: the choice says what it rests on
        return ranked[0]
