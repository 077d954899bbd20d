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
* one environment, one CUDA major; the nvidia-* pins of every chosen build must have a common version
  (``packaging`` specifiers on the pins the tables hold).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envdoctor.errors import BadInput
from envdoctor.facts.gpu_support import cudnn_cap_for_gpu, cudnn_supports_gpu, driver_supports_gpu
from envdoctor.knowledge.tables import build_runs_on_cc, normalize_cc, parse_version

FRAMEWORKS = ("torch", "tensorflow", "jax")
PLATFORMS = ("linux-x86_64", "linux-aarch64", "win-amd64", "macos-arm64")
COMPANIONS = ("torchvision", "torchaudio")
JAX_GPU_PLATFORMS = ("linux-x86_64", "linux-aarch64")  # fact jax-native-windows-cuda: no CUDA on native Windows
_PY_MINORS = [f"3.{n}" for n in range(6, 20)]


# --------------------------------------------------------------------------- inputs


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
class Constraints:
    """Everything the environment must satisfy.  ``None`` / empty means "not constrained"."""

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
        return "windows" if self.wsl or self.platform == "win-amd64" else "linux"

    def framework(self, name: str) -> Optional[FrameworkRequest]:
        for f in self.frameworks:
            if f.name == name:
                return f
        return None

    def copy(self, **changes: Any) -> "Constraints":
        data = dict(
            frameworks=[FrameworkRequest(f.name, f.spec) for f in self.frameworks], cuda=self.cuda,
            driver=self.driver, gpus=[GpuTarget(g.cc, g.label) for g in self.gpus], python=self.python,
            platform=self.platform, wsl=self.wsl, cpu=self.cpu, companions=list(self.companions),
            origin=dict(self.origin))
        data.update(changes)
        return Constraints(**data)

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
    cc_min: Optional[str] = None  # floor instead of an arch list (jax plugins)
    driver_min: Optional[str] = None  # extra driver floor (jax plugins)
    pins: Dict[str, str] = field(default_factory=dict)  # canonical package name -> specifier
    pins_known: str = "metadata"  # metadata | cudnn-only | none
    index_url: Optional[str] = None
    requirements: List[Requirement] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    unverified: List[str] = field(default_factory=list)
    source: str = ""

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
def _specset(text: str) -> Optional[SpecifierSet]:
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
    return {canonicalize_name(k): str(v) for k, v in (pins or {}).items()}


def _sorted_desc(versions: Iterable[str]) -> List[str]:
    return sorted(versions, key=lambda v: Version(v), reverse=True)


def torch_candidate(m: Any, release: Any, patch: str, variant: Any, platform: str,
                    companions: Sequence[str] = COMPANIONS) -> Candidate:
    """The candidate for ``torch==patch`` of ``variant`` (a TorchVariant row) on ``platform``."""
    default = release.default_variant(platform)
    is_default = default is not None and default.name == variant.name
    label = variant.local_label or f"+{variant.name}"
    text = f"torch=={patch}" if is_default else f"torch=={patch}{label}"
    spec = release.python_spec(patch)
    archs = list(variant.arch_list_aarch64) if platform == "linux-aarch64" and variant.arch_list_aarch64 else list(variant.arch_list)
    if variant.ptx and archs:
        archs.append("compute_" + archs[-1].split("_", 1)[1])
    cand = Candidate(
        framework="torch", version=patch, build=variant.name, kind="cuda" if variant.kind == "cuda" else variant.kind,
        label=f"torch {patch}{label}", full_version=f"{patch}{label}", cuda=variant.cuda, cudnn=variant.cudnn,
        python=str(spec) if spec is not None else None, platforms=list(variant.platforms), archs=archs,
        archs_undecided_newer=variant.ptx is None and bool(archs),
        index_url=None if is_default else variant.index_url, source=m.row_source(variant))
    note = f"CUDA {variant.cuda}, cuDNN {variant.cudnn or 'unknown'}" if variant.kind == "cuda" else "CPU build"
    note += "; the PyPI default build, no index line needed" if is_default else f"; from {variant.index_url}"
    cand.requirements.append(Requirement(text, note))
    if variant.kind == "cuda" and platform.startswith("linux"):
        # the PyPI default's pins: x86_64, and aarch64 where the data names the default a CUDA build (2.11+)
        if variant.nvidia_pins and is_default and platform in ("linux-x86_64", "linux-aarch64"):
            cand.pins = _pin_names(variant.nvidia_pins)
        elif variant.cudnn and variant.cuda_major:
            cand.pins = {f"nvidia-cudnn-cu{variant.cuda_major}": f"=={variant.cudnn}"}
            cand.pins_known = "cudnn-only"
        else:
            cand.pins_known = "none"
    prow = release.patch(patch)
    if prow is not None:
        for comp in companions:
            ver = getattr(prow, comp, None)
            if not ver:
                cand.notes.append(f"no {comp} release is known for torch {patch}")
                continue
            req = getattr(prow, f"{comp}_requires", None)
            cnote = f"companion of torch {patch}"
            if req and not req.startswith("=="):
                cnote += f" (it requires torch{req}, not an exact pin)"
            cand.requirements.append(Requirement(f"{comp}=={ver}", cnote))
        if prow.unverified:
            cand.unverified.append(f"torch {patch}: {prow.verified}")
    if variant.unverified:
        cand.unverified.append(f"{cand.label}: {variant.verified}")
    if variant.arch_unverified:
        cand.unverified.append(f"{cand.label} arch list: {variant.arch_verified}")
    return cand


def tf_candidate(m: Any, release: Any, gpu: bool, platform: str, wsl: bool = False) -> Candidate:
    v = release.tested
    if not gpu:
        name = "tensorflow-cpu" if platform == "linux-x86_64" else "tensorflow"
        cand = Candidate(framework="tensorflow", version=v, build="cpu", kind="cpu", label=f"tensorflow {v} (CPU)",
                         full_version=v, python=release.python, platforms=list(PLATFORMS), source=m.row_source(release))
        cand.requirements.append(Requirement(f"{name}=={v}", "CPU-only build"))
        cand.unverified.append(f"tensorflow {v}: CPU wheels per platform are not in the data (presumed published)")
        return cand
    plats = [p for p in release.gpu_platforms if p in PLATFORMS]
    if "wsl2" in release.gpu_platforms and wsl:
        plats.append("linux-x86_64")
    elif wsl:
        plats = [p for p in plats if p != "linux-x86_64"]
    build = "and-cuda" if release.and_cuda else "system-cuda"
    cand = Candidate(framework="tensorflow", version=v, build=build, kind="cuda",
                     label=f"tensorflow {v}" + (" [and-cuda]" if release.and_cuda else ""), full_version=v,
                     cuda=release.cuda, python=release.python, platforms=sorted(set(plats)),
                     archs=list(release.compute_capabilities), source=m.row_source(release))
    pin = release.cudnn_pin
    if pin and pin.startswith("=="):
        cand.cudnn = pin[2:]
    if release.and_cuda:
        cand.pins = _pin_names(release.and_cuda)
        cand.requirements.append(Requirement(f"tensorflow[and-cuda]=={v}", f"built for CUDA {release.cuda}, cuDNN {release.cudnn}; "
                                             "the and-cuda extra installs the nvidia-* wheels"))
    else:
        cand.pins_known = "none"
        cand.requirements.append(Requirement(f"tensorflow=={v}", f"needs CUDA {release.cuda} and cuDNN {release.cudnn} installed "
                                             "system-wide (no [and-cuda] extra before 2.14)"))
        cand.notes.append(f"tensorflow {v} loads a system CUDA {release.cuda} / cuDNN {release.cudnn}: install them separately")
    if not release.compute_capabilities:
        cand.unverified.append(f"tensorflow {v}: its compiled compute capabilities are not in the data")
    if release.unverified:
        cand.unverified.append(f"tensorflow {v}: {release.verified}")
    return cand


def jax_candidate(m: Any, release: Any, plugin: Optional[Any]) -> Candidate:
    v = release.version
    if plugin is None:
        cand = Candidate(framework="jax", version=v, build="cpu", kind="cpu", label=f"jax {v} (CPU)", full_version=v,
                         python=release.requires_python, platforms=list(PLATFORMS), source=m.row_source(release))
        cand.requirements.append(Requirement(f"jax=={v}", "CPU-only (no CUDA plugin)"))
    else:
        runtime = None
        if plugin.cuda_runtime:
            try:
                lows = [s.version for s in SpecifierSet(plugin.cuda_runtime) if s.operator in (">=", "==", "~=")]
            except InvalidSpecifier:
                lows = []
            runtime = _series(lows[0]) if lows else None
        cand = Candidate(framework="jax", version=v, build=plugin.name, kind="cuda", label=f"jax {v} [{plugin.name}]",
                         full_version=v, cuda=runtime or f"{plugin.cuda_major}.0", python=release.requires_python,
                         platforms=list(JAX_GPU_PLATFORMS), cc_min=plugin.cc_min, driver_min=plugin.driver_min,
                         source=m.row_source(plugin))
        if plugin.cudnn_min and plugin.cudnn and plugin.cudnn.startswith("=="):
            cand.cudnn = plugin.cudnn[2:]
        pins = {f"nvidia-cudnn-cu{plugin.cuda_major}": plugin.cudnn}
        if plugin.cuda_runtime and plugin.cuda_major == 12:
            pins["nvidia-cuda-runtime-cu12"] = plugin.cuda_runtime
        cand.pins = _pin_names(pins)
        cand.requirements.append(Requirement(f"jax[{plugin.name}]=={v}", f"installs {plugin.package}{plugin.pin} with the "
                                             f"nvidia-* wheels (cuDNN {plugin.cudnn}, CUDA runtime {plugin.cuda_runtime})"))
        if plugin.unverified:
            cand.unverified.append(f"{cand.label}: {plugin.verified}")
    if release.jaxlib:
        cand.requirements.append(Requirement(f"jaxlib{release.jaxlib}", f"what jax {v} requires"))
    if release.unverified:
        cand.unverified.append(f"jax {v}: {release.verified}")
    return cand


def _series(v: Optional[str]) -> Optional[str]:
    pv = parse_version(v)
    if pv is None:
        return None
    rel = pv.release + (0,)
    return f"{rel[0]}.{rel[1]}"


def enumerate_candidates(m: Any, name: str, c: Constraints) -> List[Candidate]:
    """Every build of ``name`` of the right kind (CUDA, or CPU when ``c.cpu``), newest first (version, then CUDA)."""
    out: List[Candidate] = []
    if name == "torch":
        for rel in sorted(m.pytorch_releases, key=lambda r: Version(r.version), reverse=True):
            if c.cpu:
                variants = [v for v in rel.variants if v.kind == "cpu"]
            else:
                variants = sorted((v for v in rel.variants if v.kind == "cuda" and parse_version(v.cuda) is not None),
                                  key=lambda v: Version(v.cuda), reverse=True)
            for patch in _sorted_desc(rel.patches):
                for var in variants:
                    out.append(torch_candidate(m, rel, patch, var, c.platform, c.companions))
    elif name == "tensorflow":
        for rel in sorted(m.tensorflow_releases, key=lambda r: Version(r.tested), reverse=True):
            for v in _sorted_desc(rel.versions):  # the tested release and the patch releases of the series
                out.append(tf_candidate(m, rel.for_patch(v), not c.cpu, c.platform, c.wsl))
    elif name == "jax":
        for rel in sorted(m.jax_releases, key=lambda r: Version(r.version), reverse=True):
            if c.cpu:
                out.append(jax_candidate(m, rel, None))
            else:
                for key in sorted(rel.plugins, key=lambda k: rel.plugins[k].cuda_major, reverse=True):
                    out.append(jax_candidate(m, rel, rel.plugins[key]))
    return out


# --------------------------------------------------------------------------- judging one candidate


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


def candidate_problems(m: Any, cand: Candidate, c: Constraints, warnings: Optional[List[str]] = None) -> List[Problem]:
    """Every constraint ``cand`` breaks (empty: it fits).  Unknown-but-possible fits go to ``warnings``."""
    probs: List[Problem] = []
    req = c.framework(cand.framework)
    if req is not None and req.spec:
        spec = _specset(normalize_spec(req.spec))
        if spec is not None and not spec.contains(_version(cand.full_version), prereleases=True):
            probs.append(Problem(f"spec:{cand.framework}", f"{cand.label} is not {req.display()}"))
    if c.platform not in cand.platforms:
        where = ", ".join(cand.platforms) or "no platform"
        plat = c.platform + (" (WSL2)" if c.wsl else "")
        probs.append(Problem("platform", f"{cand.label} is not published for {plat} (only {where})"))
    if c.python and cand.python:
        pyspec, pyv = _specset(cand.python), _version(c.python)
        if pyspec is not None and pyv is not None and not pyspec.contains(pyv, prereleases=True):
            probs.append(Problem("python", f"{cand.label} has no wheels for Python {c.python} (Python {cand.python})"))
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
        if fits is False:
            if cand.cc_min is not None:
                why = f"needs compute capability >= {cand.cc_min}"
            else:
                why = f"it is compiled for {_arch_span(cand)}"
            probs.append(Problem(f"gpu:{g.cc}", f"{cand.label} has no kernels for GPU {g.display()}: {why}"))
            continue
        if fits is None and warnings is not None:
            warnings.append(f"{cand.label}: whether it has kernels for {g.display()} is not known "
                            f"({'its arch list is not in the data' if not cand.archs else 'PTX embedding is disputed'})")
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
            try:
                base = Version(text)
            except InvalidVersion:
                continue
            out.append(base)
            out.append(Version(".".join(str(p) for p in base.release + (0, 0, 0, 0, 1))))
    return out


@functools.lru_cache(maxsize=4096)
def intersect(specs: Tuple[str, ...]) -> Optional[str]:
    """A version every specifier in ``specs`` accepts (as text), or None when they have nothing in common."""
    sets = [_specset(s) for s in specs]
    if any(x is None for x in sets):
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
    if a.kind == "cuda" and b.kind == "cuda" and a.cuda_major is not None and b.cuda_major is not None \
            and a.cuda_major != b.cuda_major:
        return Problem("pins", f"{a.label} uses CUDA {a.cuda_major} but {b.label} uses CUDA {b.cuda_major}: one environment "
                       "holds one CUDA major (their nvidia-* wheels and libcudnn.so.9 would collide)")
    for name in sorted(set(a.pins) & set(b.pins), key=_pin_order):
        if intersect((a.pins[name], b.pins[name])) is None:
            return Problem("pins", f"{name}: {_describe_pin(a, a.pins[name])} but {_describe_pin(b, b.pins[name])}")
    return None


def group_problem(cands: Sequence[Candidate]) -> Optional[Problem]:
    for i, a in enumerate(cands):
        for b in cands[i + 1:]:
            p = pair_problem(a, b)
            if p is not None:
                return p
    names = set()
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
    ok: bool = True

    def pick(self, framework: str) -> Optional[Candidate]:
        for p in self.picks:
            if p.framework == framework:
                return p
        return None

    def summary(self) -> str:
        return ", ".join(p.label for p in self.picks)

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


def _known_versions(m: Any, name: str) -> List[str]:
    if name == "torch":
        vs = [p for r in m.pytorch_releases for p in r.patches]
    elif name == "tensorflow":
        vs = [v for r in m.tensorflow_releases for v in r.versions]
    else:
        vs = [r.version for r in m.jax_releases]
    return sorted(set(vs), key=Version)


def _python_specs(m: Any, name: str) -> List[str]:
    if name == "torch":
        out = []
        for r in m.pytorch_releases:
            for p in r.patches:
                s = r.python_spec(p)
                if s is not None:
                    out.append(str(s))
        return out
    if name == "tensorflow":
        return [r.python for r in m.tensorflow_releases if r.python]
    return [r.requires_python for r in m.jax_releases if r.requires_python]


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
        if ok:
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
        known = _known_versions(m, f.name)
        if not known:
            raise BadInput(f"the compatibility data has no {f.name} releases")
        if f.spec:
            try:
                spec = SpecifierSet(normalize_spec(f.spec))
            except InvalidSpecifier:
                raise BadInput(f"--{f.name} {f.spec!r} is not a version or a PEP 440 specifier") from None
            if not any(spec.contains(Version(k), prereleases=True) or
                       (f.name == "torch" and _spec_has_local(spec, k)) for k in known):
                raise BadInput(f"no {f.name} release in the data matches {f.spec!r}; known: {_span(known)}")
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
        warnings.extend(f"unverified: {u}" for u in p.unverified)
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
    return fitting, rejected, warns


def _search(lists: List[List[Candidate]]) -> Optional[List[Candidate]]:
    """First combination (lexicographic: the first framework's newest build first) whose pins agree."""
    pair_cache: Dict[Tuple[int, int], bool] = {}

    def compatible(a: Candidate, b: Candidate) -> bool:
        key = (id(a), id(b))
        if key not in pair_cache:
            pair_cache[key] = pair_problem(a, b) is None
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
    combo = _search(lists)
    if combo is None:
        return None, _why_no_combo(c, fitting)
    warnings: List[str] = []
    for cand in combo:
        warnings.extend(warns.get(id(cand), []))
    return _finish(m, c, combo, warnings), []


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
            if rel is None or not rel.has_patch(torch_req.version):
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
                problems.append(f"tensorflow {tf_req.version} has no [and-cuda] extra (first in 2.14)")
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
    if not picks and not problems:
        problems.append("the file pins no torch, tensorflow or jax")
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
        for p in candidate_problems(m, cand, target.copy(frameworks=[]), warnings):
            problems.append(p.message)
    gp = group_problem(picks)
    if gp is not None:
        problems.append(gp.message)
    seen: List[str] = []
    for p in problems:
        if p not in seen:
            seen.append(p)
    return CheckResult(ok=not seen, problems=seen, picks=picks, warnings=warnings)
