"""ED200-ED249: each GPU's compute capability against the GPU archs a framework build was compiled for.

Binary compatibility (NVIDIA's architecture compatibility guides): a cubin for sm_XY runs on a GPU of
compute capability X.Z with Z >= Y (same major; the arch-specific sm_XYa only on X.Y itself); PTX for
compute_XY is JIT-compiled by the driver for any GPU of capability >= X.Y; nothing runs on an older
major. Where a GPU gets no kernel image the framework fails with "no kernel image is available for
execution on the device" (torch also warns "... with CUDA capability sm_120 is not compatible with the
current PyTorch installation").

JIT across a major generation works for plain CUDA code but is slow to start (TensorFlow warns that
"CUDA kernels will be jit-compiled from PTX, which could take 30 minutes or longer"), and XLA-based
frameworks also generate code for the GPU at run time with their own CUDA: when that CUDA predates the
GPU's architecture (TensorFlow 2.16-2.20, CUDA 12.3/12.5, on Blackwell sm_120, which needs CUDA 12.8)
XLA aborts ("LLVM ERROR: PTX version 8.5 does not support target 'sm_120'"). See
https://github.com/tensorflow/tensorflow/issues/111958 and /101746.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from packaging.version import Version

from envdoctor.facts.builds import ArchInfo, CudaBuild, build_arch, cuda_builds, no_kernel_cause
from envdoctor.facts.driver import driver_facts, driver_runs
from envdoctor.facts.gpus import gpu_label, kernel_for, newest_arch, variant_serves_cc, visible_gpus
from envdoctor.facts.labels import row_source
from envdoctor.facts.versions import major_minor as xy
from envdoctor.facts.versions import parse_version
from envdoctor.frameworks import registry
from envdoctor.rules.base import EvidenceItem, Finding, Rule, rule
from envdoctor.context import Context
from envdoctor.facts.choices import (
    jax_choice,
    jax_command,
    tf_choice,
    tf_command,
    torch_choice,
)

XLA_FAMILIES = tuple(n for n, s in registry.SPECS.items() if s.xla)  # ("tensorflow", "jax")


def _cc_groups(ctx, gpus) -> Dict[str, list]:
    groups: Dict[str, list] = {}
    for g in gpus:
        cc = ctx.gpu_cc(g)
        if cc:
            groups.setdefault(cc, []).append(g)
    return groups


def _gpu_evidence(ctx, gpus) -> List[EvidenceItem]:
    out = []
    for g in gpus:
        cc = ctx.gpu_cc(g)
        src = g.source or "probe:nvidia"
        if not g.compute_capability and cc:
            src = "matrices:gpus (GPU name)"
        out.append(EvidenceItem(f"GPU {g.index}", f"{g.name} (compute capability {cc})", src))
    return out


def _arch_name(m, cc: str) -> str:
    info = m.arch(cc)
    return f"{info.name} " if info is not None and info.name else ""


def _sm(cc: str) -> str:
    a, b = cc.split(".")
    return f"sm_{a}{b}"


def _gpus_text(ctx, gpus) -> str:
    if len(gpus) == 1:
        return gpu_label(gpus[0], ctx.gpu_cc(gpus[0]))
    idx = ", ".join(str(g.index) for g in gpus)
    return f"GPUs {idx} {gpus[0].name} (compute capability {ctx.gpu_cc(gpus[0])})"


def analyse(ctx: Context, build: CudaBuild, cc: str) -> Tuple[str, Optional[str], Optional[ArchInfo]]:
    """(verdict, detail, arch info) of a torch/TF build on a GPU of `cc`:
    ok | none | ptx-major | ptx-major-xla-dead | unknown."""
    info = build_arch(ctx, build)
    if info is None:
        return ("unknown", None, None)
    kind, name = kernel_for(info.arch_list, cc)
    if kind == "unknown":
        return ("unknown", None, info)
    if kind == "none":
        newest = newest_arch(info.arch_list)
        target = tuple(int(x) for x in cc.split("."))
        if info.ptx_unknown and newest is not None and target > newest:
            return ("unknown", None, info)  # the last arch's PTX may be embedded: cannot tell
        return ("none", None, info)
    if kind == "ptx-major":
        m = ctx.matrices
        if build.family in XLA_FAMILIES and build.has_minor:
            if m.cuda_supports_cc(build.cuda, cc) is False:
                return ("ptx-major-xla-dead", name, info)
        return ("ptx-major", name, info)
    return ("ok", name, info)


def _torch_fix(ctx, build: CudaBuild, all_ccs: List[str], cc: str) -> Tuple[List[str], List[EvidenceItem], str]:
    m = ctx.matrices
    df = driver_facts(ctx)

    def arch_ok(var) -> bool:
        return all(variant_serves_cc(m, var, c) for c in all_ccs)

    def runnable(var) -> bool:
        return df is None or driver_runs(ctx, df, var.cuda) is not False

    ch = torch_choice(ctx, build.fw, lambda v: arch_ok(v) and runnable(v))
    needs_driver = False
    if ch is None:
        ch = torch_choice(ctx, build.fw, arch_ok)
        needs_driver = ch is not None and df is not None
    if ch is None:
        newest = m.newest_known("torch")
        return ([f"No torch release in envdoctor's data (through {newest}) publishes kernels for "
                 f"compute capability {cc}; build torch from source with TORCH_CUDA_ARCH_LIST=\"{cc}\"."],
                [], f" No published torch wheel in the data has {_sm(cc)} kernels.")
    fixes = []
    note = ""
    installed = parse_version(build.fw.version)
    if installed is not None and Version(ch.patch) < Version(installed.base_version) and \
            Version(ch.release.version) != Version(f"{installed.major}.{installed.minor}"):
        note = (f" No newer torch release publishes a wheel with kernels for {_sm(cc)}; "
                f"the newest that does is torch {ch.patch} {ch.variant.name}.")
    fixes.append(f"Install {ch.label()}, whose kernels cover {', '.join(_sm(c) for c in all_ccs)}:")
    fixes.append(ch.command(ctx))
    if needs_driver and df is not None:
        floor = m.mvc_floor(ch.variant.cuda_major or 0, df.os) if ch.variant.cuda_major else None
        if floor:
            fixes.append(f"(CUDA {ch.variant.cuda} builds need NVIDIA driver >= {floor}.)")
    ev = [EvidenceItem(f"torch {ch.release.version} {ch.variant.name} arch list", " ".join(ch.variant.compiled_archs()),
                       ch.variant.arch_source or row_source(m, ch.variant))]
    return fixes, ev, note


def _tf_fix(ctx, all_ccs: List[str], cc: str) -> Tuple[List[str], List[EvidenceItem]]:
    m = ctx.matrices

    def fits(rel) -> bool:
        if not rel.compute_capabilities:
            return False
        for c in all_ccs:
            kind, _ = kernel_for(rel.compute_capabilities, c)
            if kind not in ("sass", "ptx"):
                return False
        return True

    rel = tf_choice(ctx, fits)
    if rel is None:
        newest = m.newest_known("tensorflow")
        return ([f"No TensorFlow release in envdoctor's data (through {newest}) is known to ship kernels for "
                 f"compute capability {cc}; run TensorFlow on the CPU or another GPU, or build it from source "
                 f"with TF_CUDA_COMPUTE_CAPABILITIES={cc}."], [])
    return ([f"Install TensorFlow {rel.tested}, compiled for {' '.join(rel.compute_capabilities)}:", tf_command(rel)],
            [EvidenceItem(f"tensorflow {rel.version} compute capabilities", " ".join(rel.compute_capabilities),
                          row_source(m, rel))])


@rule(
    id="ED200",
    name="gpu-arch-not-in-build",
    title="A GPU's compute capability is not in a framework build's arch list",
    severity="error",
    area="gpu",
    rationale="""
Framework wheels contain GPU code compiled for a fixed list of architectures. A cubin for sm_XY runs
only on GPUs of the same major with an equal or newer minor (sm_80 runs on an RTX 3090's 8.6, not the
other way round); PTX for compute_XY can be JIT-compiled by the driver for any newer GPU. A GPU that
gets neither fails at the first kernel with "no kernel image is available for execution on the device":
an RTX 5090 (sm_120) under a cu124/cu126 torch, a GTX 1080 (sm_61) under torch 2.7+ cu128, a Tesla K80
(sm_37) under CUDA 12 builds. Each GPU of a mixed machine is checked separately. Reaching a newer major
only through PTX JIT is a warning (slow first start); for XLA-based frameworks whose own CUDA predates
the GPU's architecture it fails outright (TensorFlow 2.16-2.20 on Blackwell).
""",
    example="""
RTX 5090 (12.0) with torch 2.6.0+cu124 (sm_50 ... sm_90, no PTX): `ED200 error`;
fix: `pip install torch==2.10.0 --index-url https://download.pytorch.org/whl/cu128` (has sm_120).
""",
    references=[
        "https://docs.nvidia.com/cuda/blackwell-compatibility-guide",
        "https://github.com/pytorch/pytorch/issues/150733",
        "https://github.com/pytorch/pytorch/issues/45130",
        "https://github.com/turboderp-org/exllamav2/issues/786",
        "https://github.com/bnsreenu/digitalsreeni-image-annotator/issues/57",
        "https://github.com/tensorflow/tensorflow/issues/111958",
        "https://github.com/pytorch/pytorch/issues/172352",
    ],
)
def gpu_arch_not_in_build(ctx: Context, r: Rule) -> List[Finding]:
    vis = visible_gpus(ctx)
    # a GPU's arch against a build's does not depend on the driver: GPUs stated without one (or with only the CUDA
    # line it runs, --cuda: a working driver whose version is not stated) are judged too
    if not vis.gpus or not (ctx.has_nvidia_gpu or ctx.snap.driver.state in ("ok", "unknown")):
        return []
    m = ctx.matrices
    groups = _cc_groups(ctx, vis.gpus)
    all_ccs = sorted(groups, key=lambda c: tuple(int(x) for x in c.split(".")))
    out = []
    for b in cuda_builds(ctx):
        if b.family == "jax":
            out.extend(_jax_findings(ctx, r, b, groups, vis))
            continue
        if b.family not in ("torch", "tensorflow"):
            continue
        for cc, gpus in groups.items():
            verdict, ptx, info = analyse(ctx, b, cc)
            if verdict == "unknown" and info is None and cuda_cannot_target(m, b.cuda, cc):
                out.append(_cuda_cannot_target_finding(ctx, r, b, cc, gpus, vis, all_ccs))
                continue
            if verdict in ("ok", "unknown") or info is None:
                continue
            archs = " ".join(info.arch_list)
            ev = _gpu_evidence(ctx, gpus) + [EvidenceItem(f"{b.label} compiled archs", archs, info.source)]
            ev.extend(info.rows)
            ev.extend(vis.evidence)
            arch = _arch_name(m, cc)
            if verdict == "none":
                msg = (f"{_gpus_text(ctx, gpus)} cannot run {b.label}: it is compiled for {archs}, with no "
                       f"{arch}{_sm(cc)}-compatible cubin or PTX (\"no kernel image is available for execution on "
                       f"the device\").")
                severity = "error"
            elif verdict == "ptx-major-xla-dead":
                msg = (f"{_gpus_text(ctx, gpus)} cannot run {b.label}: it is compiled for {archs}, so the "
                       f"{arch}GPU would need JIT from {ptx}, and the build's CUDA {xy(b.cuda)} predates "
                       f"{_sm(cc)}, so XLA cannot generate code for it.")
                severity = "error"
            else:
                msg = (f"{_gpus_text(ctx, gpus)} has no native kernels in {b.label} (compiled for {archs}): every "
                       f"kernel is JIT-compiled from {ptx} PTX on first use, which can take many minutes "
                       f"and may miss newer-architecture kernels in the bundled libraries.")
                severity = "warning"
            if info.presumed and severity == "error" and \
                    m.cuda_supports_cc(b.cuda, cc) is not False:
                # a presumed list is trusted for an error only where the build's CUDA cannot even target the GPU
                severity = "warning"
                msg += " (This arch list is presumed by envdoctor's data, not read from the build.)"
            if not vis.certain:
                severity = "warning"
                msg += f" ({vis.note} may hide this GPU.)"
            fixes, fev, note = _arch_fix(ctx, b, all_ccs, cc)
            msg += note
            ev.extend(fev)
            subject = f"{b.label} on GPU {','.join(str(g.index) for g in gpus)}"
            cause = no_kernel_cause(m, b.major, cc, b.fw.distribution) if verdict != "ptx" else None
            out.append(r.finding(msg, severity=severity, evidence=ev, fix=fixes, subject=subject,
                                 area="gpu", cause=cause))
    return out


def _arch_fix(ctx, b: CudaBuild, all_ccs: List[str], cc: str) -> Tuple[List[str], List[EvidenceItem], str]:
    """(fix lines, their evidence, a note for the message) for a torch or TensorFlow build without kernels for `cc`."""
    if b.family == "torch":
        return _torch_fix(ctx, b, all_ccs, cc)
    fixes, fev = _tf_fix(ctx, all_ccs, cc)
    return fixes, fev, ""


def cuda_cannot_target(m, cuda: str, cc: str) -> bool:
    """True when no toolkit of the build's CUDA (an X.Y, or every X.y of a major-only "12") can build kernels
    for compute capability `cc` (NVIDIA's CUDA-to-GPU table: CUDA 12 dropped Kepler, CUDA 10 predates Ampere)."""
    if not cuda:
        return False
    if "." in cuda:
        return m.cuda_supports_cc(cuda, cc) is False
    series = [s for s in m.cuda_series() if s.split(".")[0] == cuda] or [f"{cuda}.0"]  # the data's X.Y of it
    return all(m.cuda_supports_cc(s, cc) is False for s in series)


def _cuda_cannot_target_finding(ctx, r, b: CudaBuild, cc: str, gpus, vis, all_ccs):
    """A build whose arch list nobody knows (a release older than the data, a source build), judged by what it
    states itself: its CUDA cannot produce kernels for this GPU at all."""
    m = ctx.matrices
    arch = _arch_name(m, cc)
    info = m.arch(cc)
    span = ""
    if info is not None and info.first_cuda and info.last_cuda:
        span = f" ({_sm(cc)} needs CUDA {info.first_cuda} to {info.last_cuda})"
    elif info is not None and info.first_cuda:
        span = f" ({_sm(cc)} needs CUDA {info.first_cuda} or newer)"
    elif info is not None and info.last_cuda:
        span = f" (the last CUDA that targets {_sm(cc)} is {info.last_cuda})"
    ev = _gpu_evidence(ctx, gpus) + [EvidenceItem(f"{b.label} built for CUDA", b.cuda, b.cuda_source)]
    if info is not None:
        ev.append(EvidenceItem(f"CUDA versions that target {_sm(cc)}", f"{info.first_cuda or '?'} to "
                               f"{info.last_cuda or 'current'}", row_source(m, info)))
    ev.extend(vis.evidence)
    what = f"CUDA {b.cuda}" if "." in b.cuda else f"CUDA {b.cuda}.x"
    # a GPU newer than the build's CUDA may still run PTX of an older arch (JIT), unless XLA must generate code
    gpu_newer = info is not None and bool(info.first_cuda) and \
        (parse_version(b.cuda) or Version("0")) < Version(info.first_cuda)
    if gpu_newer and b.family not in XLA_FAMILIES:
        msg = (f"{_gpus_text(ctx, gpus)} probably cannot run {b.label}: the build states it was compiled with "
               f"{what}, which predates {arch}{_sm(cc)}{span}, so it has no native kernels for this GPU and runs only "
               f"if it embeds PTX for the driver to JIT-compile (else \"no kernel image is available for execution on "
               f"the device\"). Judged from the build itself: envdoctor's data has no arch list for this release.")
        severity = "warning"
    else:
        msg = (f"{_gpus_text(ctx, gpus)} cannot run {b.label}: the build states it was compiled with {what}, which "
               f"cannot produce {arch}{_sm(cc)} code{span}, so it has no kernel image for this GPU (\"no kernel image "
               f"is available for execution on the device\"; XLA cannot generate code for it either). Judged from the "
               f"build itself: envdoctor's data has no arch list for this release.")
        severity = "error"
    if not vis.certain:
        severity = "warning"
    fixes, fev, note = _arch_fix(ctx, b, all_ccs, cc)
    msg += note
    ev.extend(fev)
    return r.finding(msg, severity=severity, evidence=ev, fix=fixes, area="gpu",
                     subject=f"{b.label} on GPU {','.join(str(g.index) for g in gpus)}",
                     cause=no_kernel_cause(m, b.major, cc, b.fw.distribution))


def _jax_findings(ctx, r, b: CudaBuild, groups, vis) -> list:
    """JAX CUDA plugins state a minimum compute capability (JAX compiles the rest itself with XLA)."""
    m = ctx.matrices
    jv = ctx.framework("jax")
    rel = m.jax_release(jv.version) if jv is not None else None
    if rel is None:
        rel = m.jax_release(b.fw.version)
    series = m.jaxlib_row(b.fw.version) if b.fw.name == "jaxlib" else None
    if series is not None and series.cc_min:
        return _jaxlib_findings(ctx, r, b, groups, vis, series)
    if rel is None:
        return []
    plugin = rel.plugins.get(f"cuda{b.major}")
    if plugin is None or not plugin.cc_min:
        return []
    out = []
    for cc, gpus in groups.items():
        if Version(cc) >= Version(plugin.cc_min):
            continue
        ev = _gpu_evidence(ctx, gpus) + [
            EvidenceItem(f"{b.label} (CUDA {b.major})", b.fw.version, b.cuda_source),
            EvidenceItem(f"jax {rel.version} {plugin.name} minimum compute capability", plugin.cc_min,
                         row_source(m, plugin)),
        ]
        msg = (f"{_gpus_text(ctx, gpus)} is below the minimum compute capability {plugin.cc_min} of "
               f"{b.label}: JAX cannot use this GPU with it.")
        ch = _plugin_for(ctx, list(groups))
        fixes = []
        if ch is not None:
            rr, pp = ch
            fixes.append(f"Install jax {rr.version} with its CUDA {pp.cuda_major} plugin ({pp.package}, "
                         f"compute capability >= {pp.cc_min}):")
            if b.fw.distribution and b.fw.distribution != pp.package:
                fixes.append(f"$ pip uninstall -y {b.fw.distribution}")
            fixes.append(jax_command(rr, pp))
            ev.append(EvidenceItem(f"jax {rr.version} {pp.name} minimum compute capability", pp.cc_min,
                                   row_source(m, pp)))
        else:
            fixes.append(f"No JAX CUDA plugin in envdoctor's data supports compute capability {cc}; "
                         f"remove the plugin to run JAX on the CPU:")
            fixes.append(f"$ pip uninstall -y {b.fw.distribution or b.fw.name}")
        out.append(_below_finding(ctx, r, b, cc, gpus, vis, msg, ev, fixes))
    return out


def _plugin_for(ctx, ccs) -> Any:
    """(release, plugin) of the jax CUDA plugin a fix names for GPUs of compute capabilities ``ccs``, else None."""
    def fits(rr, pp) -> bool:
        return all(Version(c) >= Version(pp.cc_min) for c in ccs if pp.cc_min)

    jv = ctx.framework("jax")
    return jax_choice(ctx, fits, jv.version if jv is not None else None)


def _below_finding(ctx, r, b: CudaBuild, cc: str, gpus, vis, msg: str, ev, fixes) -> Finding:
    """The finding of GPUs below what a JAX build serves: an error when the visible GPUs are certain."""
    return r.finding(msg, severity="error" if vis.certain else "warning", evidence=ev, fix=fixes,
                     subject=f"{b.label} on GPU {','.join(str(g.index) for g in gpus)}",
                     cause=no_kernel_cause(ctx.matrices, b.major, cc, b.fw.distribution))


def _jaxlib_findings(ctx, r, b: CudaBuild, groups, vis, series) -> list:
    """A jaxlib that is its own CUDA build (before the plugins): a GPU below the lowest compute capability its
    compiled kernels were built for (the data's [[jaxlib]] row) has none of them; XLA compiles the rest itself."""
    m = ctx.matrices
    out = []
    cc_min = series.cc_min
    archs = " ".join(series.arch_list)
    for cc, gpus in groups.items():
        if Version(cc) >= Version(cc_min):
            continue
        ev = _gpu_evidence(ctx, gpus) + [
            EvidenceItem(f"{b.label} (CUDA {b.cuda})", b.fw.version, b.cuda_source),
            EvidenceItem(f"jaxlib {series.version}-{series.last} compiled CUDA kernels", archs,
                         f"{series.arch_source} [verified: {series.arch_verified or series.verified}]"),
        ]
        ev.extend(vis.evidence)
        msg = (f"{_gpus_text(ctx, gpus)} is below compute capability {cc_min}, the lowest that {b.label}'s CUDA "
               f"kernels were built for ({archs}): JAX cannot use this GPU with it.")
        ccs = list(groups)
        ch = _plugin_for(ctx, ccs)
        older = [s for s in m.jaxlib_series if s.cc_min and all(Version(c) >= Version(s.cc_min) for c in ccs)
                 and Version(s.version) < Version(series.version)]
        fixes = []
        if older:
            last = older[-1]
            fixes.append(f"jaxlib {last.last} and older were built for {' '.join(last.arch_list)}: install a jaxlib "
                         f"CUDA build of that release or older, or build jaxlib from source with "
                         f"--cuda_compute_capabilities={cc}.")
        elif ch is not None:
            rr, pp = ch
            fixes.append(f"Install jax {rr.version} with its CUDA {pp.cuda_major} plugin ({pp.package}, "
                         f"compute capability >= {pp.cc_min}):")
            fixes.append(jax_command(rr, pp))
        else:
            fixes.append(f"Build jaxlib from source with --cuda_compute_capabilities={cc}, or run JAX on the CPU.")
        out.append(_below_finding(ctx, r, b, cc, gpus, vis, msg, ev, fixes))
    return out


@rule(
    id="ED210",
    name="triton-gpu-too-old",
    title="torch.compile / Triton cannot use a GPU below its minimum compute capability",
    severity="warning",
    area="torch",
    rationale="""
torch.compile's default backend (inductor) generates GPU kernels with Triton, and Triton supports only
GPUs of compute capability 7.0 (Volta) and newer. On a Pascal or Maxwell GPU plain (eager) torch works,
but the first torch.compile'd function fails with "Found NVIDIA GeForce GTX 1080 which is too old to be
supported by the triton GPU compiler ...". Libraries that call torch.compile by default (nnU-Net, nanoGPT,
vLLM) then crash. The minimum comes from envdoctor's data (incompatibility "triton-min-cc").
""",
    example="GTX 1080 (6.1) with torch 2.4.1+cu121: `ED210 warning`; fix: `export TORCH_COMPILE_DISABLE=1`.",
    references=[
        "https://github.com/pytorch/pytorch/issues/93801",
        "https://github.com/pytorch/pytorch/issues/93528",
        "https://github.com/karpathy/nanoGPT/issues/157",
        "https://github.com/MIC-DKFZ/nnUNet/issues/2188",
    ],
)
def triton_gpu_too_old(ctx: Context, r: Rule) -> List[Finding]:
    m = ctx.matrices
    if not ctx.has_nvidia_gpu:
        return []
    fact = m.incompatibility("triton-min-cc")
    if fact is None or parse_version(fact.value) is None:
        return []
    build = next((b for b in cuda_builds(ctx) if b.family == "torch"), None)
    if build is None:
        return []
    tv, first = parse_version(build.fw.version), parse_version(m.fact_value("torch-compile-first"))
    if tv is None or first is None or tv.release[:2] < first.release[:2]:  # a torch without torch.compile
        return []
    vis = visible_gpus(ctx)
    groups = _cc_groups(ctx, vis.gpus)
    out = []
    for cc, gpus in groups.items():
        if Version(cc) >= Version(fact.value):
            continue
        verdict, _, _ = analyse(ctx, build, cc)
        if verdict in ("none", "ptx-major-xla-dead"):
            continue  # torch itself cannot run there: ED200 says so
        ev = _gpu_evidence(ctx, gpus) + [
            EvidenceItem(f"{build.label} built for CUDA", build.cuda, build.cuda_source),
            EvidenceItem("Triton minimum compute capability", fact.value, row_source(m, fact)),
        ]
        triton = ctx.snap.python.packages.get("triton")
        if triton:
            ev.append(EvidenceItem("triton installed", triton, "python:packages"))
        msg = (f"{_gpus_text(ctx, gpus)} is below compute capability {fact.value}, the minimum of Triton: "
               f"{build.label} runs there, but torch.compile (inductor) fails with \"... too old to be supported "
               f"by the triton GPU compiler\".")
        fixes = ["Run without torch.compile on this GPU (or let code that calls it fall back to eager mode):",
                 "$ export TORCH_COMPILE_DISABLE=1"]
        severity = "warning" if vis.certain else "info"
        out.append(r.finding(msg, severity=severity, evidence=ev, fix=fixes, cause=f"triton-cc-{cc}",
                             subject=f"{build.label} on GPU {','.join(str(g.index) for g in gpus)}"))
    return out
