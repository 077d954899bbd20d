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

Requirement parsing, marker evaluation, platform keys and pins live in envdoctor.facts (pins, platform,
versions, labels); the pin-overlap helpers at the top serve this module only.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envdoctor.facts.labels import fw_label, row_src
from envdoctor.facts.labels import fw_source as fw_src
from envdoctor.facts.loader import reachable
from envdoctor.facts.pins import Pin, is_cudnn_wheel, jax_plugin, norm, packages, parse_pins, spec
from envdoctor.facts.versions import lower_bound, parse_version, public
from envdoctor.facts.clashes import Clash, mm, pair_fix, pin_clashes
from envdoctor.records import dataclass
from envdoctor.rules.base import EvidenceItem, rule
from envdoctor.snapshot import Cudnn, Framework, Snapshot

# ----------------------------------------------------------------------------------------------
# shared helpers
# ----------------------------------------------------------------------------------------------


def spec_major(specifier: Optional[SpecifierSet]) -> Optional[int]:
    lb = lower_bound(specifier)
    return lb.major if lb is not None else None


def probe_failed(snap: Snapshot, name: str) -> bool:
    p = snap.probe(name)
    return p is not None and p.status != "ok"


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
        pins = [p for p in parse_pins(fw, snap) if is_cudnn_wheel(p.name)
                and (p.extra is None or extras.get(p.extra) is not False)]
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
            elif rel is not None and rel_v is not None:
                out.append(CudnnNeed(fw, rel_v.major, rel_v, None, False, row_src(ctx, rel), f"cuDNN {rel.cudnn}"))
            continue
        if fw.name == "jaxlib":
            if any(jax_plugin(o) is not None and o.build == "cuda" for o in ctx.frameworks):
                continue  # jax loads the CUDA plugin (its pins speak); jaxlib's +cudnnNN label stays evidence
            v = parse_version(fw.cudnn_version)
            if v is not None:
                out.append(CudnnNeed(fw, v.major, v, None, True, fw_src(fw), f"cuDNN >= {fw.cudnn_version}"))
                continue
            # a 0.1.x label names only the CUDA (+cuda111): the data's row says which cuDNN that build was built with
            series = m.jaxlib_row(fw.version) if m is not None else None
            built = series.cudnn.get(fw.cuda_version or "") if series is not None else None
            bv = parse_version(built)
            if series is not None and bv is not None:
                out.append(CudnnNeed(fw, bv.major, bv, None, False, row_src(ctx, series), f"cuDNN {bv.major} (built with {built})"))
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


def _version_of(c: Cudnn) -> Version:
    """The version of a library that _libraries() lists (those have a parsable one)."""
    v = parse_version(c.version)
    if v is None:
        raise ValueError(f"cuDNN at {c.path}: no version (not one of _libraries())")
    return v


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
and jax's *_local installs need a system cuDNN of the right major on the loader path. Which copy a build
gets is what envdoctor's library resolver (envdoctor.facts.libraries) says, in the loader's order:
LD_PRELOAD, LD_LIBRARY_PATH, the build's own wheel or torch/lib bundle (RUNPATH), the conda env, the
ldconfig cache and system dirs; the first copy of the right soname is judged, not the newest one on the
machine ("Is there an older CuDNN somewhere on your system?"). A pin behind an extra that was not
installed (plain tensorflow, not [and-cuda]) is not a requirement; with a jax CUDA plugin installed the
plugin's cuDNN need is judged and jaxlib's own +cudnnNN label stays evidence.
""",
    example="jaxlib 0.4.7+cuda11.cudnn86 with only libcudnn.so.8.5.0 on the machine: `ED300 error`, "
            "'jaxlib 0.4.7+cuda11.cudnn86 needs cuDNN >= 8.6; the newest cuDNN 8 found is 8.5.0'.",
    references=[
        "https://github.com/jax-ml/jax/issues/15268",
        "https://github.com/jax-ml/jax/issues/22416",
        "https://github.com/rdyro/torch2jax/issues/29",
        "https://github.com/jax-ml/jax/issues/6517",
        "https://github.com/tensorflow/tensorflow/issues/60913",
        "https://github.com/jax-ml/jax/issues/29315",
        "https://github.com/tensorflow/tensorflow/issues/60854",
        "https://github.com/pytorch/pytorch/issues/104259",
        "https://docs.nvidia.com/deeplearning/cudnn/backend/latest/reference/support-matrix.html",
    ],
)
def cudnn_missing_or_wrong(ctx, r):
    from envdoctor.facts.libraries import loaded

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
                               and _version_of(c).major == need.major]
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
        lib = loaded(ctx, fw, "cudnn")
        lib_v = parse_version(lib.version) if lib is not None else None
        if lib is not None and lib_v is not None and lib.major == need.major and len(lib_v.release) >= 2 \
                and lib.where in ("LD_PRELOAD", "LD_LIBRARY_PATH", "binaries", "wheel"):
            # the copy the loader takes (envdoctor.facts.libraries): one on the path comes before any wheel or system
            # cuDNN; a wheel is found through the build's RUNPATH whoever installed it (tensorflow/tensorflow#59825)
            wheel = lib.package.split()[0] if lib.where == "wheel" and lib.package else None
            where = f"{lib.package} wheel" if wheel else f"{lib.path}, first on {lib.where}"
            f = _judge_version(ctx, r, need, lib.version or "", where,
                               "python.packages" if wheel else lib.version_source, base_ev, fix_wheel=wheel)
            if f is not None:
                findings.append(f)
            continue
        if need.wheels_count and pin is None:
            same_major = next(((n, v) for n, v in other_wheels.items()
                               if (wv := parse_version(v)) is not None and wv.major == need.major), None)
            if same_major is not None:
                f = _judge_version(ctx, r, need, same_major[1], f"{same_major[0]} {same_major[1]} wheel",
                                   "python.packages", base_ev, fix_wheel=same_major[0])
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
    if need.major is None:  # the caller judges only a known major
        return None
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
    if need.major is None:  # the caller judges only a known major
        return None
    libs = _libraries(ctx.snap)  # (parsable versions only)
    same = [c for c in libs if _version_of(c).major == need.major]
    fw_cuda = _cuda_major(fw)
    if same and fw_cuda is not None and ctx.matrices is not None:
        fitting: List[Tuple[Cudnn, Any]] = []  # (library, its matrices/cudnn.toml row)
        foreign: List[Tuple[Cudnn, Any]] = []
        for c in same:
            row = ctx.matrices.cudnn_release(c.version)
            (foreign if row is not None and row.cuda_majors and fw_cuda not in row.cuda_majors else fitting).append((c, row))
        if not fitting:
            c, row = max(foreign, key=lambda x: _version_of(x[0]))
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
        # the copy the loader picks (envdoctor.facts.libraries), else the newest of that major
        from envdoctor.facts.libraries import loaded

        lib = loaded(ctx, fw, "cudnn")
        picked = [c for c in same if lib is not None and c.path == lib.path]
        newest = picked[0] if picked else max(same, key=_version_of)
        return _judge_version(ctx, r, need, newest.version or "", f"{newest.path}", _cudnn_src(newest), base_ev)
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
        fv = parse_version(fw.version)
        if rel is not None and rel.and_cuda and fv is not None:
            fix += [f"Let pip install the CUDA libraries {label} was built with:",
                    f'$ pip install "tensorflow[and-cuda]=={fv.public}"']
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
    found = sorted({f"cuDNN {_version_of(c).major} ({c.path})" for c in libs})
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
        who = "; ".join(f"cuDNN {mj}: {', '.join(u)}" for mj, u in sorted(needed.items()))
        fix.append(f"The installed frameworks need different cuDNN majors ({who}): give them separate "
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
per framework. Only pins in effect count (envdoctor.facts.libraries): unconditional ones, and those
behind an extra that was installed; a pin under tensorflow's `and-cuda` extra on a plain tensorflow
install names no wheel TensorFlow loads.
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
        fix = pair_fix(ctx, broken, kept, names)
        cudnn_head = next((c for c in items if is_cudnn_wheel(c.package)), None)
        cause = pin_cause(broken.owner, cudnn_head.package) if cudnn_head is not None else None
        findings.append(r.finding(msg, severity=sev, evidence=ev, fix=fix, cause=cause,
                                  subject=f"{fw_label(broken.owner)} / {fw_label(kept.owner)}"))
    return findings


__all__ = ["CudnnNeed", "cudnn_needs", "probe_failed"]
