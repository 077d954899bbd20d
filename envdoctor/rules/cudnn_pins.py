"""ED300-ED349: cuDNN (missing, wrong major, too old, several majors) and nvidia-* pins that clash.

What a build needs comes, in order, from the build itself (its Requires-Dist pins in
Framework.requires: `nvidia-cudnn-cu12==9.1.0.70`, `nvidia-cudnn-cu12<10.0,>=9.8; extra == "with-cuda"`;
TensorFlow's build_info cudnn_version; jaxlib's `+cuda12.cudnn89` label), then from the matrices
(torch variant cudnn, tf_release cudnn, jax plugin cudnn). What is installed comes from the
snapshot: python.packages (the nvidia-cudnn-cuNN wheels) and snapshot.cudnn (headers, libraries,
wheels with their versions).

A pin guarded by an extra (tensorflow[and-cuda], jax-cuda12-plugin[with-cuda]) is *in effect*
when the package it names is installed, whoever installed it: the framework's RPATH finds the
wheel's libraries either way. When it is absent the build looks for a system cuDNN instead.

The helpers at the top (requirement parsing, marker evaluation, platform keys, pin overlap) are
shared with builds.py (ED400-ED449) and versions.py (ED510-ED549).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from envdoctor.frameworks import registry
from envdoctor.frameworks.base import Target
from envdoctor.rules.requires import requirement
from envdoctor.rules.base import EvidenceItem, rule
from envdoctor.rules.context import parse_version, row_source
from envdoctor.snapshot import Cudnn, Framework, Snapshot

# ----------------------------------------------------------------------------------------------
# shared helpers
# ----------------------------------------------------------------------------------------------
_EXTRA_RE = re.compile(r"""extra\s*==\s*['"]([^'"]+)['"]""")
_CUDNN_WHEEL_RE = re.compile(r"^nvidia-cudnn(?:-cu(\d+))?$")
_JAX_PLUGIN_RE = re.compile(r"^jax-cuda(\d+)-(plugin|pjrt)$")


def norm(name: str) -> str:
    """PEP 503 normalized distribution name."""
    return re.sub(r"[-_.]+", "-", str(name or "")).lower().strip()


def norm_extra(name: str) -> str:
    return norm(name)


def packages(snap: Snapshot) -> Dict[str, str]:
    """Installed distributions (normalized name -> version)."""
    return {norm(k): str(v) for k, v in (snap.python.packages or {}).items() if v}


def ver(text: Optional[str]) -> Optional[Version]:
    return parse_version(text)


def public(text: Optional[str]) -> Optional[Version]:
    """The version without its local label ('2.1.2+cu121' -> 2.1.2)."""
    v = parse_version(text)
    if v is None:
        return None
    try:
        return Version(v.public)
    except InvalidVersion:  # pragma: no cover - public of a valid version is valid
        return None


def local_label(text: Optional[str]) -> Optional[str]:
    v = parse_version(text)
    return v.local if v is not None and v.local else None


def spec(text: Optional[str]) -> Optional[SpecifierSet]:
    if text is None:
        return None
    try:
        return SpecifierSet(str(text))
    except InvalidSpecifier:
        return None


def satisfies(version: Optional[str], specifier: Optional[SpecifierSet]) -> Optional[bool]:
    v = parse_version(version)
    if v is None or specifier is None:
        return None
    return specifier.contains(v, prereleases=True)


def lower_bound(specifier: Optional[SpecifierSet]) -> Optional[Version]:
    """The lowest version a specifier admits, read from its ==, ===, >=, ~= (and > as a floor) clauses."""
    if specifier is None:
        return None
    best: Optional[Version] = None
    for s in specifier:
        if s.operator in ("==", "===", ">=", "~=", ">") and "*" not in s.version:
            v = parse_version(s.version)
            if v is not None and (best is None or v > best):
                best = v
    return best


def spec_major(specifier: Optional[SpecifierSet]) -> Optional[int]:
    lb = lower_bound(specifier)
    return lb.major if lb is not None else None


def mm(v: Optional[Version]) -> Optional[Tuple[int, int]]:
    if v is None:
        return None
    rel = v.release + (0,)
    return (rel[0], rel[1])


def candidates(*specs: Optional[SpecifierSet]) -> List[Version]:
    out: List[Version] = []
    for sp in specs:
        if sp is None:
            continue
        for s in sp:
            if "*" in s.version:
                continue
            v = parse_version(s.version)
            if v is not None and v not in out:
                out.append(v)
    return out


def overlap(a: Optional[SpecifierSet], b: Optional[SpecifierSet]) -> Optional[bool]:
    """Do two specifiers admit a common version? Tested on the versions they name (bounds and pins)."""
    if a is None or b is None:
        return None
    for v in candidates(a, b):
        if a.contains(v, prereleases=True) and b.contains(v, prereleases=True):
            return True
    return False


def marker_env(snap: Snapshot) -> Optional[Dict[str, str]]:
    """PEP 508 marker environment of the inspected interpreter, from the snapshot; None when unknown."""
    system = (snap.platform.system or "").strip()
    if not system:
        return None
    low = system.lower()
    sys_platform = "win32" if low.startswith("win") else ("darwin" if low == "darwin" else "linux")
    machine = snap.platform.machine or ""
    py = snap.python.version or ""
    parts = py.split(".")
    py_short = ".".join(parts[:2]) if len(parts) >= 2 else py
    return {
        "platform_system": "Windows" if sys_platform == "win32" else system,
        "sys_platform": sys_platform,
        "platform_machine": machine,
        "os_name": "nt" if sys_platform == "win32" else "posix",
        "python_version": py_short or "3",
        "python_full_version": py or "3",
        "implementation_name": snap.python.implementation or "cpython",
        "platform_python_implementation": "CPython" if (snap.python.implementation or "cpython") == "cpython" else "PyPy",
        "platform_release": "",
        "platform_version": "",
        "implementation_version": py or "3",
    }


@dataclass
class Pin:
    """One Requires-Dist line of an installed build, whose platform markers hold here."""

    owner: Framework
    name: str  # normalized
    specifier: SpecifierSet
    line: str
    extra: Optional[str]  # normalized extra guarding the line, None when unconditional
    extras: Tuple[str, ...] = ()  # extras requested on the named package (jax-cuda12-plugin[with-cuda])

    @property
    def text(self) -> str:
        return f"{self.name}{self.specifier}" if str(self.specifier) else self.name

    def describe(self) -> str:
        guard = f" (extra [{self.extra}])" if self.extra else ""
        return f"{self.owner.distribution} {self.owner.version} requires {self.text}{guard}"


def parse_pins(fw: Framework, snap: Snapshot) -> List[Pin]:
    """The framework's Requires-Dist lines that apply on this platform/interpreter. Garbage lines are skipped."""
    env = marker_env(snap)
    out: List[Pin] = []
    for line in fw.requires or []:
        req = requirement(str(line))
        if req is None:
            continue
        extra: Optional[str] = None
        if req.marker is not None:
            if env is None:
                continue
            text = str(req.marker)
            found = _EXTRA_RE.findall(text)
            extra_raw = found[0] if found else ""
            e = dict(env)
            e["extra"] = extra_raw
            try:
                applies = req.marker.evaluate(e)
            except Exception:  # noqa: BLE001 - an odd marker means "unknown": skip the line
                continue
            if not applies:
                continue
            extra = norm_extra(extra_raw) if extra_raw else None
        out.append(Pin(fw, norm(req.name), req.specifier, str(line).strip(), extra,
                       tuple(sorted(norm_extra(x) for x in req.extras))))
    return out


def in_effect(pin: Pin, pkgs: Dict[str, str], extras: Optional[Dict[str, Optional[bool]]] = None) -> bool:
    """Unconditional pins always; pins behind an extra when the package they name is installed and (when `extras`
    says, envdoctor.facts.libraries) that extra itself was installed."""
    if pin.extra is None:
        return True
    if extras is not None and extras.get(pin.extra) is False:
        return False
    return pin.name in pkgs


def cudnn_wheel_major(name: str) -> Optional[int]:
    """The CUDA major of an nvidia-cudnn-cuNN wheel name (None for other names, or plain nvidia-cudnn)."""
    m = _CUDNN_WHEEL_RE.match(norm(name))
    if not m or not m.group(1):
        return None
    return int(m.group(1))


def is_cudnn_wheel(name: str) -> bool:
    return bool(_CUDNN_WHEEL_RE.match(norm(name)))


def jax_plugin(fw: Framework) -> Optional[Tuple[int, str]]:
    """(cuda major, 'plugin'|'pjrt') for a jax CUDA plugin distribution."""
    m = _JAX_PLUGIN_RE.match(norm(fw.distribution or fw.name))
    if not m:
        m = _JAX_PLUGIN_RE.match(norm(fw.name))
    if not m:
        return None
    return int(m.group(1)), m.group(2)


def platform_key(ctx) -> Optional[str]:
    """The matrices' platform key: linux-x86_64 | linux-aarch64 | win-amd64 | macos-arm64 | macos-x86_64."""
    machine = (ctx.snap.platform.machine or "").lower()
    if ctx.os == "windows":
        return "win-amd64" if machine in ("amd64", "x86_64", "") else None
    if ctx.os == "macos":
        return "macos-arm64" if machine in ("arm64", "aarch64") else "macos-x86_64"
    if machine in ("x86_64", "amd64"):
        return "linux-x86_64"
    if machine in ("aarch64", "arm64"):
        return "linux-aarch64"
    return None


def driver_os(ctx) -> str:
    return "windows" if ctx.os == "windows" else "linux"


def row_src(ctx, row) -> str:
    return row_source(ctx.matrices, row, default="")


def fw_src(fw: Framework) -> str:
    if fw.evidence:
        return fw.evidence[0].source
    return f"python.packages:{fw.distribution}"


def fw_label(fw: Framework) -> str:
    return f"{fw.distribution or fw.name} {fw.version}"


def probe_failed(snap: Snapshot, name: str) -> bool:
    p = snap.probe(name)
    return p is not None and p.status != "ok"


def gpu_intent(ctx) -> bool:
    """Something says the user means to use an NVIDIA GPU: one is usable, or CUDA software/settings are there."""
    if ctx.has_nvidia_gpu:
        return True
    pk = packages(ctx.snap)
    if any(n.startswith("nvidia-") and n not in ("nvidia-ml-py", "nvidia-ml-py3") for n in pk):
        return True
    if any(n.startswith("jax-cuda") or n == "tensorflow-gpu" or n.startswith("cupy-cuda") for n in pk):
        return True
    env = ctx.snap.loader.gpu_env or {}
    return any(k in env for k in ("CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH"))


def frameworks_named(ctx, *names: str) -> List[Framework]:
    return [fw for fw in ctx.frameworks if fw.name in names]


# ----------------------------------------------------------------------------------------------
# what each build needs
# ----------------------------------------------------------------------------------------------
@dataclass
class CudnnNeed:
    fw: Framework
    major: Optional[int]
    minimum: Optional[Version]  # lowest cuDNN the build accepts (its pin's floor / compiled version)
    pin: Optional[Pin]  # the wheel pin, when the build names one
    wheels_count: bool  # whether an nvidia-cudnn wheel (without a pin) is found by this build
    source: str  # where the requirement comes from
    what: str  # how the message states the requirement


def _cuda_major(fw: Framework) -> Optional[int]:
    v = parse_version(fw.cuda_version)
    return v.major if v is not None else None


def cudnn_needs(ctx) -> List[CudnnNeed]:
    """What cuDNN each installed CUDA build needs, from the build first and the matrices second."""
    from envdoctor.facts.libraries import extras_in_effect

    snap = ctx.snap
    m = ctx.matrices
    out: List[CudnnNeed] = []
    for fw in ctx.frameworks:
        if fw.build != "cuda":
            continue
        plugin = jax_plugin(fw)
        if fw.name == "jax" or (plugin is not None and plugin[1] == "pjrt"):
            continue
        if fw.name not in ("torch", "tensorflow", "jaxlib") and plugin is None:
            continue
        extras = extras_in_effect(fw, snap, ctx.frameworks)
        # a pin behind an extra that was not installed (plain tensorflow, not [and-cuda]) is not what the build loads
        pins = [p for p in parse_pins(fw, snap) if is_cudnn_wheel(p.name) and extras.get(p.extra) is not False]
        if pins:
            p = pins[0]
            out.append(CudnnNeed(fw, spec_major(p.specifier), lower_bound(p.specifier), p, True,
                                 f"Requires-Dist of {fw_label(fw)}: {p.line}", f"{p.text}"))
            continue
        if fw.name == "torch":
            continue  # no pin: the wheel bundles its own cuDNN (or the metadata is unknown)
        if fw.name == "tensorflow":
            rel = m.tf_release(fw.version) if m is not None else None
            rel_v = parse_version(rel.cudnn) if rel is not None else None
            v = parse_version(fw.cudnn_version)
            if v is not None:  # build_info says "8" (major only) or "8.9"
                minimum: Optional[Version] = v if len(v.release) >= 2 else None
                if minimum is None and rel_v is not None and rel_v.major == v.major:
                    minimum = rel_v
                what = f"cuDNN {v.major}" + (f" (>= {minimum})" if minimum is not None else "")
                out.append(CudnnNeed(fw, v.major, minimum, None, False, fw_src(fw), what))
            elif rel_v is not None:
                out.append(CudnnNeed(fw, rel_v.major, rel_v, None, False, row_src(ctx, rel), f"cuDNN {rel.cudnn}"))
            continue
        if fw.name == "jaxlib":
            v = parse_version(fw.cudnn_version)
            if v is not None:
                out.append(CudnnNeed(fw, v.major, v, None, True, fw_src(fw), f"cuDNN >= {fw.cudnn_version}"))
            continue
        if plugin is not None and m is not None:
            rel = m.jax_release(fw.version)
            exact = rel is not None and public(rel.version) == public(fw.version)
            pl = rel.plugins.get(f"cuda{plugin[0]}") if exact else None
            sp = spec(pl.cudnn) if pl is not None else None
            if sp is not None:
                fake = Pin(fw, f"nvidia-cudnn-cu{plugin[0]}", sp, f"nvidia-cudnn-cu{plugin[0]}{sp}", "with-cuda")
                out.append(CudnnNeed(fw, spec_major(sp), lower_bound(sp), fake, True, row_src(ctx, pl),
                                     f"nvidia-cudnn-cu{plugin[0]}{sp}"))
    return out


def _libraries(snap: Snapshot) -> List[Cudnn]:
    return [c for c in snap.cudnn if c.kind == "library" and parse_version(c.version) is not None]


_TRUSTED_DIRS = ("/lib", "/usr/lib", "/lib64", "/usr/lib64", "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
                 "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib/sbsa-linux",
                 "/usr/lib/powerpc64le-linux-gnu")


def reachable(snap: Snapshot, c: Cudnn) -> bool:
    """Would the dynamic loader find this library by name: LD_LIBRARY_PATH, the ldconfig cache, a trusted dir,
    or the conda env's lib directory of a conda interpreter?"""
    if c.kind == "wheel":
        return True
    if c.kind != "library" or not c.path:
        return False
    for e in c.evidence:
        if e.source.startswith("env:LD_LIBRARY_PATH") or e.source.startswith("cmd:ldconfig"):
            return True
    d = c.path.rsplit("/", 1)[0] if "/" in c.path else ""
    if d in _TRUSTED_DIRS or d in (snap.loader.ld_library_path or []):
        return True
    for lib in snap.loader.libraries:
        if lib.name == "libcudnn" and (lib.path == c.path or lib.path.rsplit("/", 1)[0] == d):
            return True
    prefix = snap.python.prefix or ""
    return bool(snap.python.kind == "conda" and prefix and d == prefix.rstrip("/") + "/lib")


def _cudnn_src(c: Cudnn) -> str:
    return c.evidence[0].source if c.evidence else f"cudnn:{c.kind}"


def pin_cause(fw: Framework, package: str) -> str:
    return f"cudnn-pin:{norm(fw.distribution or fw.name)}:{norm(package)}"


# ----------------------------------------------------------------------------------------------
# ED300
# ----------------------------------------------------------------------------------------------
@rule(
    id="ED300",
    name="cudnn-missing-or-wrong",
    title="cuDNN missing, of the wrong major, or older than the build needs",
    severity="error",
    area="cudnn",
    rationale="""
Every CUDA build of torch, TensorFlow and JAX is compiled against one cuDNN major and a minimum
minor. cuDNN keeps its ABI only within a major (libcudnn.so.8 vs libcudnn.so.9), so a missing library
or one of another major fails at import or at the first convolution ("Could not load dynamic
library 'libcudnn.so.8'", "DNN library is not found"). An older minor than the build's is refused
at start-up: "Loaded runtime CuDNN library: 8.5.0 but source was compiled with: 8.6.0. CuDNN library
needs to have matching major version and equal or higher minor version" (an error: the framework does
not start its GPU path). Pip builds name the cuDNN
they need in their Requires-Dist pins (nvidia-cudnn-cu12==9.1.0.70); TensorFlow without [and-cuda]
and jax's *_local installs need a system cuDNN of the right major on the loader path.
""",
    example="jaxlib 0.4.7+cuda11.cudnn86 with only libcudnn.so.8.5.0 on the machine: `ED300 error`, "
            "'jaxlib 0.4.7+cuda11.cudnn86 needs cuDNN >= 8.6; the newest cuDNN 8 found is 8.5.0'.",
    references=[
        "https://github.com/jax-ml/jax/issues/15268",
        "https://github.com/jax-ml/jax/issues/6517",
        "https://github.com/tensorflow/tensorflow/issues/60913",
        "https://github.com/jax-ml/jax/issues/29315",
        "https://github.com/tensorflow/tensorflow/issues/60854",
        "https://github.com/pytorch/pytorch/issues/104259",
        "https://docs.nvidia.com/deeplearning/cudnn/backend/latest/reference/support-matrix.html",
    ],
)
def cudnn_missing_or_wrong(ctx, r):
    snap = ctx.snap
    pkgs = packages(snap)
    findings = []
    libs_known = not probe_failed(snap, "cudnn")
    # a wheel that another framework's pin put there is ED320's story (it names both frameworks)
    clashed = {(c.broken.owner.distribution, c.package) for c in pin_clashes(ctx)}
    for need in cudnn_needs(ctx):
        fw = need.fw
        label = fw_label(fw)
        base_ev = [EvidenceItem(f"{fw.name} build", f"{label} (build {fw.build}, CUDA {fw.cuda_version or '?'})",
                                fw_src(fw)),
                   EvidenceItem("cuDNN it needs", need.what, need.source)]
        pin = need.pin
        installed = pkgs.get(pin.name) if pin is not None else None
        if installed is not None and pin is not None:
            if (fw.distribution, pin.name) in clashed:
                continue
            f = _judge_wheel(ctx, r, need, pin, installed, base_ev)
            if f is not None:
                findings.append(f)
            continue
        # no wheel of the pinned name in the environment
        other_wheels = {n: v for n, v in pkgs.items() if is_cudnn_wheel(n)}
        if pin is not None and pin.extra is None and pkgs:
            # the build's own unconditional pin is not installed: its import breaks, GPU or not
            same_major_libs = [c for c in _libraries(snap) if need.major is not None
                               and parse_version(c.version).major == need.major]
            ev = base_ev + [EvidenceItem("installed cuDNN wheels",
                                         ", ".join(f"{n} {v}" for n, v in sorted(other_wheels.items())) or "none",
                                         "python.packages")]
            fix = [f"Reinstall the cuDNN wheel {fw.distribution} pins:",
                   f'$ pip install "{pin.name}{pin.specifier}"']
            if same_major_libs:
                c = same_major_libs[0]
                ev.append(EvidenceItem("system cuDNN", f"{c.version} at {c.path}", _cudnn_src(c)))
                findings.append(r.finding(
                    f"{label} pins {pin.text} but that wheel is not installed; it will fall back to the system "
                    f"cuDNN {c.version} at {c.path}, which it was not built against.",
                    severity="warning", evidence=ev, fix=fix, cause=pin_cause(fw, pin.name), subject=label))
            else:
                wrong = [f"{n} {v}" for n, v in sorted(other_wheels.items())]
                extra = f" (only {', '.join(wrong)} is installed)" if wrong else ""
                findings.append(r.finding(
                    f"{label} needs {pin.text} (its own Requires-Dist pin) but it is not installed{extra}: "
                    f"loading libcudnn.so.{need.major} fails.",
                    evidence=ev, fix=fix, cause=pin_cause(fw, pin.name), subject=label))
            continue
        if pin is not None and pin.extra is None:
            continue  # the installed packages are unknown: nothing to judge
        # pins behind an extra (not installed) or no pin at all: the build looks for a system cuDNN
        if not ctx.has_nvidia_gpu or ctx.os != "linux" or not libs_known or need.major is None:
            continue
        if need.wheels_count and pin is None:
            wheel = next(((n, v) for n, v in other_wheels.items()
                          if parse_version(v) is not None and parse_version(v).major == need.major), None)
            if wheel is not None:
                f = _judge_version(ctx, r, need, wheel[1], f"{wheel[0]} {wheel[1]} wheel", "python.packages",
                                   base_ev, fix_wheel=wheel[0])
                if f is not None:
                    findings.append(f)
                continue
        f = _judge_system(ctx, r, need, base_ev, other_wheels)
        if f is not None:
            findings.append(f)
    return findings


def _judge_wheel(ctx, r, need: CudnnNeed, pin: Pin, installed: str, base_ev):
    fw = need.fw
    label = fw_label(fw)
    iv = parse_version(installed)
    if iv is None:
        return None
    ev = base_ev + [EvidenceItem("installed cuDNN wheel", f"{pin.name} {installed}", "python.packages")]
    fix = [f"Install the cuDNN {label} was built for:", f'$ pip install "{pin.name}{pin.specifier}"']
    if need.major is not None and iv.major != need.major:
        return r.finding(
            f"{label} needs cuDNN {need.major} ({pin.text}) but {pin.name} {installed} is installed: "
            f"libcudnn.so.{need.major} cannot be loaded.",
            evidence=ev, fix=fix, cause=pin_cause(fw, pin.name), subject=label)
    if need.minimum is not None and iv < need.minimum and ctx.has_nvidia_gpu:
        return r.finding(
            f"{label} needs {pin.text} but {pin.name} {installed} is installed, older than the "
            f"{need.minimum} it requires: it refuses the older cuDNN at start-up (\"Loaded runtime CuDNN library: "
            f"{_mmp(iv)} but source was compiled with: {_mmp(need.minimum)}\").",
            severity="error", evidence=ev, fix=fix, cause=pin_cause(fw, pin.name), subject=label)
    return None


def _mmp(v: Version) -> str:
    rel = v.release + (0, 0)
    return f"{rel[0]}.{rel[1]}.{rel[2]}"


def _judge_version(ctx, r, need: CudnnNeed, version: str, where: str, source: str, base_ev, fix_wheel=None):
    fw = need.fw
    label = fw_label(fw)
    iv = parse_version(version)
    if iv is None or need.minimum is None or mm(iv) >= mm(need.minimum):
        return None
    ev = base_ev + [EvidenceItem("cuDNN found", where, source)]
    fix = []
    if fix_wheel:
        fix = [f"Upgrade the cuDNN wheel to the {need.minimum} or newer that {label} was built for:",
               f'$ pip install "{fix_wheel}>={need.minimum},<{need.major + 1}"']
    else:
        fix = [f"Install cuDNN {need.major} >= {need.minimum} for CUDA {fw.cuda_version or need.major} "
               f"(https://developer.nvidia.com/cudnn-downloads), or use the pip wheel:",
               f'$ pip install "nvidia-cudnn-cu{_cuda_major(fw) or need.major}>={need.minimum},<{need.major + 1}"']
    return r.finding(
        f"{label} needs cuDNN >= {need.minimum} but the newest cuDNN {need.major} found is {version} ({where}): "
        f"it refuses it at start-up (\"Loaded runtime CuDNN library: {_mmp(iv)} but source was compiled with: "
        f"{_mmp(need.minimum)}\").",
        severity="error", evidence=ev, fix=fix, cause=pin_cause(fw, "cudnn"), subject=label)


def _judge_system(ctx, r, need: CudnnNeed, base_ev, other_wheels: Dict[str, str]):
    fw = need.fw
    label = fw_label(fw)
    libs = _libraries(ctx.snap)
    same = [c for c in libs if parse_version(c.version).major == need.major]
    fw_cuda = _cuda_major(fw)
    if same and fw_cuda is not None and ctx.matrices is not None:
        fitting, foreign = [], []
        for c in same:
            row = ctx.matrices.cudnn_release(c.version)
            (foreign if row is not None and row.cuda_majors and fw_cuda not in row.cuda_majors else fitting).append((c, row))
        if not fitting:
            c, row = max(foreign, key=lambda x: parse_version(x[0].version))
            ev = base_ev + [EvidenceItem("system cuDNN", f"{c.version} at {c.path}", _cudnn_src(c)),
                            EvidenceItem(f"cuDNN {row.label} builds", "CUDA " + ", ".join(str(x) for x in row.cuda_majors),
                                         row_src(ctx, row))]
            lo = f">={need.minimum}," if need.minimum is not None else ""
            return r.finding(
                f"{label} is a CUDA {fw.cuda_version} build but the only cuDNN {need.major} found, {c.version} at {c.path}, "
                f"has no CUDA {fw_cuda} build (cuDNN {row.label} exists for CUDA "
                f"{', '.join(str(x) for x in row.cuda_majors)}): it cannot be the library {fw.name} needs.",
                evidence=ev, cause=pin_cause(fw, "cudnn"), subject=label,
                fix=[f"Install a cuDNN {need.major} built for CUDA {fw_cuda}:",
                     f'$ pip install "nvidia-cudnn-cu{fw_cuda}{lo}<{need.major + 1}"'])
        same = [c for c, _ in fitting]
    if same:
        newest = max(same, key=lambda c: parse_version(c.version))
        return _judge_version(ctx, r, need, newest.version, f"{newest.path}", _cudnn_src(newest), base_ev)
    cuda_major = _cuda_major(fw) or need.major
    wheel_name = f"nvidia-cudnn-cu{cuda_major}"
    ev = list(base_ev)
    for c in libs:
        ev.append(EvidenceItem("system cuDNN", f"{c.version} at {c.path}", _cudnn_src(c)))
    for n, v in sorted(other_wheels.items()):
        ev.append(EvidenceItem("installed cuDNN wheel", f"{n} {v}", "python.packages"))
    fix: List[str] = []
    if fw.name == "tensorflow":
        rel = ctx.matrices.tf_release(fw.version) if ctx.matrices is not None else None
        if rel is not None and rel.and_cuda and parse_version(fw.version) is not None:
            fix += [f"Let pip install the CUDA libraries {label} was built with:",
                    f'$ pip install "tensorflow[and-cuda]=={parse_version(fw.version).public}"']
            src = row_src(ctx, rel)
            ev.append(EvidenceItem("tensorflow[and-cuda] pins", rel.cudnn_pin or "", src))
        elif rel is not None:
            fix += [f"Install CUDA {rel.cuda} and cuDNN {rel.cudnn} (the tested configuration of TensorFlow "
                    f"{rel.version}) and put their lib directories on the loader path "
                    f"(https://www.tensorflow.org/install/source#gpu)."]
            ev.append(EvidenceItem("tested build configuration", f"CUDA {rel.cuda}, cuDNN {rel.cudnn}", row_src(ctx, rel)))
    if need.pin is not None and not fix:
        fix += ["Install the cuDNN wheel the build names:", f'$ pip install "{need.pin.name}{need.pin.specifier}"']
    elif not fix:
        lo = f">={need.minimum}," if need.minimum is not None else ""
        fix += [f"Install cuDNN {need.major} (for CUDA {cuda_major}):", f'$ pip install "{wheel_name}{lo}<{need.major + 1}"']
    found = sorted({f"cuDNN {parse_version(c.version).major} ({c.path})" for c in libs})
    if found:
        msg = (f"{label} needs {need.what} but only " + ", ".join(found) + f" is on this machine: "
               f"libcudnn.so.{need.major} cannot be loaded, so it falls back to the CPU or fails at the first convolution.")
    else:
        msg = (f"{label} needs {need.what} but no cuDNN {need.major} library or nvidia-cudnn wheel was found: "
               f"\"Could not load dynamic library 'libcudnn.so.{need.major}'\" and no GPU use.")
    return r.finding(msg, evidence=ev, fix=fix, cause=pin_cause(fw, "cudnn"), subject=label)


# ----------------------------------------------------------------------------------------------
# ED310
# ----------------------------------------------------------------------------------------------
@rule(
    id="ED310",
    name="cudnn-several-majors",
    title="Several cuDNN majors reachable at once",
    severity="warning",
    area="cudnn",
    rationale="""
cuDNN 8 and cuDNN 9 export the same C symbols under different sonames (libcudnn.so.8,
libcudnn.so.9), and cuDNN 8 itself dlopens its sub-libraries (libcudnn_ops_infer.so.8 ...) by name.
When a system cuDNN sits on LD_LIBRARY_PATH or in the ldconfig cache next to a pip wheel of another
major, a process that loads two frameworks (or a framework and another CUDA library) can bind
symbols of one copy to the other: crashes and "Could not load library libcudnn_cnn_infer.so.8.
Error: ... undefined symbol" follow. Keep one cuDNN per major a process can see.
""",
    example="libcudnn.so.8.9.4 in /usr/local/cuda/lib64 on LD_LIBRARY_PATH and torch 2.4.1's "
            "nvidia-cudnn-cu12 9.1.0.70 wheel: `ED310 warning` naming both.",
    references=[
        "https://github.com/pytorch/pytorch/issues/119989",
        "https://github.com/pytorch/pytorch/issues/104808",
        "https://github.com/OpenNMT/CTranslate2/issues/1826",
    ],
)
def cudnn_several_majors(ctx, r):
    snap = ctx.snap
    needs = cudnn_needs(ctx)
    cuda_fws = [fw for fw in ctx.frameworks if fw.build == "cuda"]
    if not cuda_fws:
        return []
    copies: Dict[int, List[Tuple[str, str, str, str]]] = {}  # major -> [(version, where, source, kind)]
    for c in snap.cudnn:
        v = parse_version(c.version)
        if v is None or c.kind not in ("library", "wheel") or not reachable(snap, c):
            continue
        where = c.path or c.kind
        if c.kind == "wheel":
            first = (c.evidence[0].excerpt.split() or [""])[0] if c.evidence else ""
            if not is_cudnn_wheel(first):
                continue  # its distribution is unknown; python.packages below names it if it can
            where = f"{norm(first)} wheel"
        have = copies.setdefault(v.major, [])
        if not any(k == c.kind and w == where for _, w, _, k in have):
            have.append((c.version or "", where, _cudnn_src(c), c.kind))
    for n, vtext in packages(snap).items():
        v = parse_version(vtext)
        if not is_cudnn_wheel(n) or v is None:
            continue
        entry = (vtext, f"{n} wheel", "python.packages", "wheel")
        have = copies.setdefault(v.major, [])
        if not any(k == "wheel" and w == entry[1] for _, w, _, k in have):
            have.append(entry)
    if len(copies) < 2:
        return []
    majors = sorted(copies)
    needed: Dict[int, List[str]] = {}
    for need in needs:
        if need.major is not None:
            needed.setdefault(need.major, []).append(fw_label(need.fw))
    ev = []
    parts = []
    for major in majors:
        descr = ", ".join(f"{vv} ({where})" for vv, where, _, _ in copies[major])
        parts.append(f"cuDNN {major}: {descr}")
        for vv, where, src, kind in copies[major]:
            ev.append(EvidenceItem(f"cuDNN {major} {kind}", f"{vv} at {where}", src))
    for major, users in sorted(needed.items()):
        ev.append(EvidenceItem(f"needs cuDNN {major}", ", ".join(users), "python.frameworks"))
    fix: List[str] = []
    unneeded = [mj for mj in majors if mj not in needed] if needed else []
    for mj in unneeded:
        for vv, where, src, kind in copies[mj]:
            if kind == "wheel" and where.endswith(" wheel"):
                fix += [f"Nothing installed needs cuDNN {mj}: remove the wheel", f"$ pip uninstall -y {where[:-6]}"]
            elif "LD_LIBRARY_PATH" in src:
                d = where.rsplit("/", 1)[0]
                fix += [f"Nothing installed needs cuDNN {mj}: take {d} off LD_LIBRARY_PATH, e.g.",
                        f'$ export LD_LIBRARY_PATH=$(echo "$LD_LIBRARY_PATH" | tr ":" "\\n" | grep -vx "{d}" | paste -sd:)']
            elif where.startswith("/"):
                fix += [f"Nothing installed needs cuDNN {mj}: find the package that owns {where} and remove it",
                        f"$ dpkg -S {where}" if (snap.platform.distro_id or "") in ("ubuntu", "debian") else f"$ rpm -qf {where}"]
    if len(needed) >= 2:
        users = "; ".join(f"cuDNN {mj}: {', '.join(u)}" for mj, u in sorted(needed.items()))
        fix.append(f"The installed frameworks need different cuDNN majors ({users}): give them separate "
                   f"environments, e.g. $ python -m venv ~/venv-{needs[0].fw.name} for one of them.")
    if not fix:
        fix.append("Make sure each process sees only the cuDNN its framework was built for: remove the other "
                   "major's directory from LD_LIBRARY_PATH (see ED6xx for the loader path).")
    return [r.finding(
        "Several cuDNN majors are reachable at once: " + "; ".join(parts) + ".",
        evidence=ev, fix=fix, subject="cuDNN " + " and ".join(str(mj) for mj in majors))]


# ----------------------------------------------------------------------------------------------
# ED320
# ----------------------------------------------------------------------------------------------
_FAMILY_ORDER = registry.names(lockable=True)  # ("torch", "tensorflow", "jax")


def _family(fw: Framework) -> Optional[str]:
    if fw.name in ("torch", "tensorflow"):
        return fw.name
    if jax_plugin(fw) is not None and jax_plugin(fw)[1] == "plugin":
        return "jax"
    if fw.name == "jax":
        return None  # its pins on nvidia-* are extras of the plugin; the plugin speaks for it
    return None


@dataclass
class Clash:
    package: str
    installed: Version
    broken: Pin  # the pin the installed version violates
    kept: Pin  # the other framework's pin it satisfies
    severity: str


def _violation_severity(installed: Version, pin: Pin) -> str:
    """error: another major, or an older major.minor than the pin's floor; warning: newer, or an older patch."""
    floor = lower_bound(pin.specifier)
    if floor is None:
        return "warning"
    if installed.major != floor.major or mm(installed) < mm(floor):
        return "error"
    return "warning"


def pin_clashes(ctx) -> List[Clash]:
    from envdoctor.facts.libraries import extras_in_effect

    snap = ctx.snap
    pkgs = packages(snap)
    by_family: Dict[str, List[Pin]] = {}
    for fw in ctx.frameworks:
        fam = _family(fw)
        if fam is None:
            continue
        extras = extras_in_effect(fw, snap, ctx.frameworks)
        pins = [p for p in parse_pins(fw, snap) if (p.name.startswith("nvidia-") or p.name.startswith("cuda-"))
                and in_effect(p, pkgs, extras) and str(p.specifier)]
        by_family.setdefault(fam, []).extend(pins)
    out: List[Clash] = []
    fams = [f for f in _FAMILY_ORDER if f in by_family]
    for i, fa in enumerate(fams):
        for fb in fams[i + 1:]:
            for pa in by_family[fa]:
                for pb in by_family[fb]:
                    if pa.name != pb.name or pa.name not in pkgs:
                        continue
                    iv = parse_version(pkgs[pa.name])
                    if iv is None:
                        continue
                    ok_a = pa.specifier.contains(iv, prereleases=True)
                    ok_b = pb.specifier.contains(iv, prereleases=True)
                    if ok_a and not ok_b:
                        out.append(Clash(pa.name, iv, pb, pa, _violation_severity(iv, pb)))
                    elif ok_b and not ok_a:
                        out.append(Clash(pa.name, iv, pa, pb, _violation_severity(iv, pa)))
    return out


def _candidates_for(ctx, fam: str, pin: Pin) -> List[Tuple[str, str, Dict[str, SpecifierSet], object]]:
    """(label, pip command, pins, row) of the builds a fix may name, oldest first: the builds the framework's spec
    lists that fit this platform and Python (frameworks/: the judgement lock and gate make) -- torch's PyPI default
    build of each release's newest patch, each TensorFlow series' tested release with [and-cuda], the jax releases
    with the CUDA plugin the installed one uses."""
    m = ctx.matrices
    fspec = registry.find(fam)
    if m is None or fspec is None:
        return []
    plugin = jax_plugin(pin.owner) if fam == "jax" else None
    if fam == "jax" and plugin is None:
        return []
    py = parse_version(ctx.snap.python.version)
    target = Target(frameworks=[], platform=platform_key(ctx) or "linux-x86_64", wsl=bool(ctx.snap.platform.wsl),
                    python=f"{py.major}.{py.minor}" if py is not None else None, companions=[])
    out: List[Tuple[str, str, Dict[str, SpecifierSet], object]] = []
    seen = set()
    for cand in fspec.candidates(m, target):
        if fam == "torch":
            key = Version(cand.version).release[:2]
            if cand.index_url is not None or key in seen:
                continue  # the PyPI default build, newest patch of each release
            seen.add(key)
            cmd = f"torch=={cand.version}"
        elif fam == "tensorflow":
            series = m.tf_release(cand.version)
            if series is None or series.tested != cand.version:
                continue
            cmd = cand.requirement
        else:
            if plugin is None or cand.build != f"cuda{plugin[0]}":
                continue
            cmd = f"jax[{cand.build}]=={cand.version}"
        pins = {norm(n): sp for n, sp in ((n, spec(t)) for n, t in cand.pins.items()) if sp is not None}
        if not pins or fspec.fits(m, cand, target):
            continue
        out.append((f"{fam} {cand.version}", cmd, pins, cand.row))
    return list(reversed(out))


def _agree(pins_a: Dict[str, SpecifierSet], pins_b: Dict[str, SpecifierSet], packages_: Sequence[str]) -> bool:
    if not all(p in pins_a and p in pins_b for p in packages_):
        return False
    for name in set(pins_a) & set(pins_b):
        if overlap(pins_a[name], pins_b[name]) is False:
            return False
    return True


def _current_pins(ctx, fw: Framework) -> Dict[str, SpecifierSet]:
    from envdoctor.facts.libraries import extras_in_effect

    pk = packages(ctx.snap)
    extras = extras_in_effect(fw, ctx.snap, ctx.frameworks)
    return {p.name: p.specifier for p in parse_pins(fw, ctx.snap) if in_effect(p, pk, extras) and str(p.specifier)}


def _family_of_pin(pin: Pin) -> str:
    return _family(pin.owner) or pin.owner.name


def _pair_fix(ctx, broken: Pin, kept: Pin, names: Sequence[str]) -> List[str]:
    """Concrete ways out: a version of one framework whose pins agree with the other's, or two environments."""
    fix: List[str] = []
    fam_b, fam_k = _family_of_pin(broken), _family_of_pin(kept)
    cur_b, cur_k = _current_pins(ctx, broken.owner), _current_pins(ctx, kept.owner)
    cands_b = _candidates_for(ctx, fam_b, broken)
    cands_k = _candidates_for(ctx, fam_k, kept)
    # 1) keep the framework pip kept, move the other one
    for label, cmd, pins, row in reversed(cands_b):
        if _agree(pins, cur_k, names):
            fix += [f"Keep {fw_label(kept.owner)} and move {broken.owner.name} to {label}, whose pins agree "
                    f"({', '.join(f'{n}{pins[n]}' for n in names)}):", f'$ pip install "{cmd}"']
            break
    # 2) keep the framework whose pin is broken, move the other one
    for label, cmd, pins, row in reversed(cands_k):
        if _agree(pins, cur_b, names):
            fix += [f"Or keep {fw_label(broken.owner)} and move {kept.owner.name} to {label} "
                    f"({', '.join(f'{n}{pins[n]}' for n in names)}):", f'$ pip install "{cmd}"']
            break
    # 3) a pair of releases whose pins agree, closest to what is installed
    if not fix and cands_b and cands_k:
        vb, vk = public(broken.owner.version), public(kept.owner.version)
        best = None
        for ib, (lb, cb, pb, rb) in enumerate(cands_b):
            for ik, (lk, ck, pk_, rk) in enumerate(cands_k):
                if not _agree(pb, pk_, names):
                    continue
                dist = _distance(cands_b, ib, vb) + _distance(cands_k, ik, vk)
                key = (dist, -ib, -ik)
                if best is None or key < best[0]:
                    best = (key, lb, cb, lk, ck, pb)
        if best is not None:
            _, lb, cb, lk, ck, pb = best
            fix += [f"No release of one framework agrees with the other as installed; the pins of {lb} and {lk} "
                    f"agree on {', '.join(names)}:", f'$ pip install "{cb}" "{ck}"']
    extra = sorted({p.extra for p in parse_pins(broken.owner, ctx.snap) if p.extra and p.name in names})
    dist = broken.owner.distribution + (f"[{extra[0]}]" if extra else "")
    fix += ["Or give each framework its own environment:",
            f"$ python -m venv ~/venv-{broken.owner.name} && ~/venv-{broken.owner.name}/bin/pip install "
            f"\"{dist}=={public(broken.owner.version) or broken.owner.version}\""]
    return fix


def _distance(cands, index: int, current: Optional[Version]) -> int:
    """How many releases away from the installed one a candidate is."""
    if current is None:
        return 0
    versions = [public(c[0].split(" ", 1)[1]) for c in cands]
    here = 0
    for i, v in enumerate(versions):
        if v is not None and mm(v) <= mm(current):
            here = i
    return abs(index - here)


@rule(
    id="ED320",
    name="nvidia-pin-clash",
    title="Frameworks in one environment pin different nvidia-* wheels",
    severity="error",
    area="cudnn",
    rationale="""
torch, tensorflow[and-cuda] and the jax CUDA plugin each pin the nvidia-* wheels (cuDNN, cuBLAS,
NCCL ...) they were built with, but one environment can hold only one version of each wheel: pip keeps
whichever the last install asked for, and the other framework then loads a library it was not built
for. An older cuDNN minor or another major than a build's pin is refused at start-up ("Loaded runtime
CuDNN library: 9.5.1 but source was compiled with: 9.8.0"); a newer one within the major usually works
but `pip check` reports the broken pin. Either pick releases whose pins agree or use one environment
per framework.
""",
    example="torch 2.4.1 (nvidia-cudnn-cu12==9.1.0.70) and tensorflow[and-cuda] 2.15.1 "
            "(nvidia-cudnn-cu12==8.9.4.25) in one venv with 9.1.0.70 installed: `ED320 error`.",
    references=[
        "https://github.com/TencentARC/Moto/issues/2",
        "https://github.com/jax-ml/jax/issues/29315",
        "https://github.com/AlphaGPU/leetgpu-challenges/issues/205",
        "https://github.com/pytorch/pytorch/issues/46807",
    ],
)
def nvidia_pin_clash(ctx, r):
    clashes = pin_clashes(ctx)
    groups: Dict[Tuple[str, str], List[Clash]] = {}
    for c in clashes:
        groups.setdefault((c.broken.owner.distribution, c.kept.owner.distribution), []).append(c)
    findings = []
    for (_, _), items in groups.items():
        items.sort(key=lambda c: (0 if is_cudnn_wheel(c.package) else 1, 0 if c.severity == "error" else 1))
        head = items[0]
        broken, kept = head.broken, head.kept
        sev = "error" if any(c.severity == "error" for c in items) else "warning"
        what = "; ".join(f"{c.package} {c.installed} is installed (as {fw_label(c.kept.owner)} pins: "
                         f"{c.kept.text}) but {fw_label(c.broken.owner)} pins {c.broken.text}" for c in items[:3])
        more = f" (+{len(items) - 3} more)" if len(items) > 3 else ""
        consequence = ("it loads a library it was not built for and refuses it or fails"
                       if sev == "error" else "it loads a newer library than its pin; `pip check` reports the conflict")
        floor = lower_bound(head.broken.specifier)
        if is_cudnn_wheel(head.package) and floor is not None and head.installed.major == floor.major \
                and mm(head.installed) < mm(floor):
            consequence += (f" (\"Loaded runtime CuDNN library: {_mmp(head.installed)} but source was compiled with: "
                            f"{_mmp(floor)}\")")
        msg = (f"{fw_label(broken.owner)} and {fw_label(kept.owner)} pin different nvidia-* wheels and pip can "
               f"install only one: {what}{more}; for {broken.owner.distribution} {consequence}.")
        ev = [EvidenceItem(f"{fw_label(c.broken.owner)} pin", c.broken.line, fw_src(c.broken.owner)) for c in items] + \
             [EvidenceItem(f"{fw_label(c.kept.owner)} pin", c.kept.line, fw_src(c.kept.owner)) for c in items] + \
             [EvidenceItem("installed", f"{c.package} {c.installed}", "python.packages") for c in items]
        names = sorted({c.package for c in items if c.severity == sev})
        fix = _pair_fix(ctx, broken, kept, names)
        cudnn_head = next((c for c in items if is_cudnn_wheel(c.package)), None)
        cause = pin_cause(broken.owner, cudnn_head.package) if cudnn_head is not None else None
        findings.append(r.finding(msg, severity=sev, evidence=ev, fix=fix, cause=cause,
                                  subject=f"{fw_label(broken.owner)} / {fw_label(kept.owner)}"))
    return findings


__all__ = [
    "Pin", "CudnnNeed", "parse_pins", "in_effect", "packages", "norm", "spec", "overlap", "lower_bound",
    "satisfies", "public", "local_label", "platform_key", "driver_os", "row_src", "fw_src", "fw_label",
    "gpu_intent", "jax_plugin", "cudnn_needs", "is_cudnn_wheel", "cudnn_wheel_major", "marker_env",
    "frameworks_named", "probe_failed", "reachable", "pin_clashes",
]
