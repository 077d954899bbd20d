"""ED250-ED259 and ED650-ED659: what the installed CUDA binaries themselves say (snapshot.binaries).

The binaries probe read every shared object of the target environment that carries device code: its
cubins (sm_XY, sm_XYa, sm_XYf), its PTX (compute_XY, with the PTX ISA version) and, for each DT_NEEDED,
the file the dynamic loader would load. Judged here with NVIDIA's rules from matrices/ptx_isa.toml
(envdoctor.binaries.compat), per package and per GPU, so this covers packages no table lists
(flash-attn, xformers, bitsandbytes, a colleague's extension, a source-built torch).
"""
from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from envdoctor.binaries.compat import judge, load_facts, vendor_cuda_major
from envdoctor.facts.builds import cuda_builds, cuda_line_serves, no_kernel_cause
from envdoctor.facts.gpus import gpu_label, visible_gpus
from envdoctor.facts.versions import cc_tuple
from envdoctor.rules.base import EvidenceItem, Finding, Rule, rule
from envdoctor.context import Context
from envdoctor.snapshot import CudaBinary

SHOWN_FILES = 3
DRIVER_LIBS = ("libcuda.so.1", "libcuda.so", "libnvidia-ml.so.1")  # come with the driver: judged by ED0xx


def _vendor(b: CudaBinary) -> Tuple[bool, Optional[int]]:
    return vendor_cuda_major(b.package, b.path)


def _package_groups(binaries: List[CudaBinary]) -> Dict[Tuple[str, str], List[CudaBinary]]:
    """The binaries per package, NVIDIA's own CUDA libraries left out: they are judged by their CUDA release
    (_vendor_findings), not by their fatbin section, which for some (cuFFT) is a stub with one old cubin while
    the kernels lie elsewhere in the file (matrices/ptx_isa.toml, [[outside_fatbin]])."""
    groups: Dict[Tuple[str, str], List[CudaBinary]] = {}
    for b in binaries:
        if _vendor(b)[0]:
            continue
        key = (b.package, b.package_version) if b.package else (b.path, "")
        groups.setdefault(key, []).append(b)
    return groups


def _label(key: Tuple[str, str], files: List[CudaBinary]) -> str:
    name, version = key
    if files[0].package:
        return f"{name} {version}".strip()
    return name  # a file no distribution owns: named by its path


def _has(files: List[CudaBinary]) -> str:
    sass, ptx = [], []
    for b in files:
        sass += [t for t in b.sass if t not in sass]
        ptx += [t for t in b.ptx if t not in ptx]
    parts = sass + ptx
    return ", ".join(parts) + ("" if ptx else " (no PTX)") if parts else "no kernels at all"


def _files_text(files: List[CudaBinary]) -> str:
    names = [b.path for b in files[:SHOWN_FILES]]
    more = len(files) - SHOWN_FILES
    return ", ".join(names) + (f" and {more} more" if more > 0 else "")


def _gpu_groups(ctx):
    groups: Dict[str, list] = {}
    for g in visible_gpus(ctx).gpus:
        cc = ctx.gpu_cc(g)
        if cc and cc_tuple(cc) is not None:
            groups.setdefault(cc, []).append(g)
    return groups


def _verdicts(ctx: Context, files: List[CudaBinary], cc: str) -> List[Tuple[CudaBinary, Any]]:
    target = cc_tuple(cc)
    if target is None:
        return []
    return [(b, judge(b.sass, b.ptx, b.ptx_isa, target, ctx.snap.driver.cuda_version)) for b in files
            if (b.sass or b.ptx) and not b.unreadable]


def _judged_packages(ctx, wanted: str):
    """(cc, gpus of that cc, package label, package name for a fix, [(binary, Verdict)]) per package and GPU
    group whose best is `wanted`: "sass" when a cubin of the package runs there, else "ptx" when its PTX can,
    else "none"."""
    binaries = ctx.snap.binaries.binaries
    if not binaries:
        return
    groups = _package_groups(binaries)
    for cc, gpus in sorted(_gpu_groups(ctx).items()):
        for key, files in groups.items():
            verdicts = _verdicts(ctx, files, cc)
            if not verdicts:
                continue
            kinds = {v.kind for _, v in verdicts}
            best = "sass" if "sass" in kinds else "ptx" if "ptx" in kinds else "none"
            if best == wanted:
                yield cc, gpus, _label(key, files), key[0] if files[0].package else "this extension", verdicts


def _file_evidence(b: CudaBinary) -> EvidenceItem:
    ptx = " ".join(f"{t} (ISA {b.ptx_isa.get(t, '?')})" for t in b.ptx) or "-"
    return EvidenceItem(b.path, f"SASS {' '.join(b.sass) or '-'}; PTX {ptx}", "probe:binaries")


def _gpus_text(gpus, cc: str) -> str:
    if len(gpus) == 1:
        return gpu_label(gpus[0], cc)
    return f"GPUs {', '.join(str(g.index) for g in gpus)} {gpus[0].name} (compute capability {cc})"


def _source(key: str) -> str:
    return load_facts().sources.get(key, "matrices:ptx_isa")


def _build_of(ctx: Context, package: str):
    return next((b for b in cuda_builds(ctx) if (b.fw.distribution or "").lower() == package.lower()), None)


def _vendor_findings(ctx: Context, r: Rule) -> List[Finding]:
    """NVIDIA's own CUDA libraries, per CUDA major: no kernel for a GPU only where no release of that CUDA line
    targets it (gpus.toml), as one finding per line and GPU; its cause is the CUDA line's, shared with a
    framework build of that line (ED200), so the report says it once."""
    lines: Dict[int, Dict[str, str]] = {}
    for b in ctx.snap.binaries.binaries:
        vendor, major = _vendor(b)
        if vendor and major is not None and b.package:
            lines.setdefault(major, {})[b.package] = b.package_version
    out = []
    m = ctx.matrices
    for cc, gpus in sorted(_gpu_groups(ctx).items()):
        for major, dists in sorted(lines.items()):
            if cuda_line_serves(m, major, cc) is not False:
                continue  # served, or not known: a stub fatbin is no evidence either way
            info = m.arch(cc)
            names = ", ".join(f"{d} {v}".strip() for d, v in sorted(dists.items()))
            span = f"CUDA {info.first_cuda or '?'} to {info.last_cuda or 'current'}" if info is not None else "?"
            msg = (f"the CUDA {major} libraries ({names}) have no kernels for {_gpus_text(gpus, cc)}: no CUDA "
                   f"{major} release targets sm_{cc.replace('.', '')} ({span} does).")
            ev = [EvidenceItem(f"CUDA versions that target sm_{cc.replace('.', '')}", span,
                               getattr(info, "source", "") or "matrices:gpus"),
                  EvidenceItem("NVIDIA's CUDA libraries", "judged by their CUDA release, not their fatbin section",
                               load_facts().vendor_source or "matrices:ptx_isa")]
            out.append(r.finding(msg, evidence=ev, subject=f"CUDA {major} libraries", cause=no_kernel_cause(
                m, major, cc, f"cuda{major}"), fix=[
                f"Install the builds for a CUDA line that targets sm_{cc.replace('.', '')} (the framework's build "
                f"for it brings its nvidia-* libraries along), or run on a GPU CUDA {major} supports."]))
    return out


@rule(
    id="ED250",
    name="binary-no-kernel-for-gpu",
    title="An installed package's CUDA binaries have no kernel a GPU can run",
    severity="error",
    area="gpu",
    rationale="""
Every CUDA extension carries device code compiled for a fixed set of targets, readable in its .nv_fatbin
section without importing it. A cubin for sm_XY runs only on the same major with an equal or higher
minor (sm_80 on 8.0 and 8.6, not on 7.5); an arch-specific sm_XYa only on exactly X.Y; a family sm_XYf
on X.Y and newer minors of X. PTX for compute_XY can be JIT-compiled by the driver for any GPU >= X.Y,
when the driver's CUDA is at least as new as the PTX ISA. A package none of whose binaries has a fitting
cubin or PTX fails at its first kernel with "no kernel image is available for execution on the device"
(or "CUDA error: the provided PTX was compiled with an unsupported toolchain" for too new PTX). This
judges what the files contain, so it covers flash-attn, xformers, bitsandbytes, vllm, a colleague's
extension or a source-built torch, which no table lists. NVIDIA's own CUDA libraries (the nvidia-* wheels) are
judged by their CUDA release instead (gpus.toml: which compute capabilities a CUDA line targets): some keep their
kernels outside a standard fatbin (cuFFT's .nv_fatbin is a stub with one old cubin, its kernels lie in .ldata;
matrices/ptx_isa.toml, [[outside_fatbin]]). A GPU a whole CUDA line dropped is said once, with the framework build
of that line (ED200), the libraries folded in as its consequences.
""",
    example="""
An extension built with -gencode arch=compute_80,code=sm_80 on a GeForce RTX 2080 (7.5):
`ED250 error: myext 1.0: no kernel for GPU 0 (compute capability 7.5): it has sm_80 (no PTX)`.
""",
    references=[
        "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#binary-compatibility",
        "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#feature-set-compiler-targets",
        "https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#release-notes-ptx-release-history",
        "https://github.com/Dao-AILab/flash-attention/issues/1125",
    ],
)
def binary_no_kernel(ctx: Context, r: Rule) -> List[Finding]:
    out = _vendor_findings(ctx, r)
    for cc, gpus, label, name, verdicts in _judged_packages(ctx, "none"):
        judged = [b for b, _ in verdicts]
        too_new = sorted({t for _, v in verdicts for t in v.too_new_ptx})
        msg = (f"{label}: no kernel for {_gpus_text(gpus, cc)}: {_files_text(judged)} "
               f"{'carries' if len(judged) == 1 else 'carry'} {_has(judged)}.")
        ev = [_file_evidence(b) for b in judged[:SHOWN_FILES]]
        ev.append(EvidenceItem("compatibility rules", "sm_XY: same major, minor >= Y; sm_XYa: exactly X.Y; "
                               "sm_XYf: same major, minor >= Y; compute_XY: JIT for >= X.Y",
                               _source("target:sass:")))
        if too_new:
            msg += (f" Its PTX ({', '.join(too_new)}) fits the GPU but is newer than this driver "
                    f"(CUDA {ctx.snap.driver.cuda_version}) can JIT-compile.")
        xy = cc.replace(".", "")
        fix = [f"Install a build of {name} that includes sm_{xy} (or PTX for compute_{xy} or older), e.g. rebuild "
               f"it with TORCH_CUDA_ARCH_LIST=\"{cc}\" / -gencode arch=compute_{xy},code=sm_{xy}.",
               "Or run it on a GPU its kernels cover: " + _has(judged) + "."]
        if too_new:  # the PTX already fits the GPU: a newer driver is the smaller step, a rebuild the alternative
            fix = ["Upgrade the NVIDIA driver so that it can JIT-compile the package's PTX.",
                   "Or i" + fix[0][1:]] + fix[1:]
        build = _build_of(ctx, name)
        cause = no_kernel_cause(ctx.matrices, build.major, cc, build.fw.distribution) if build is not None else None
        out.append(r.finding(msg, evidence=ev, fix=fix, subject=label, cause=cause))
    return out


@rule(
    id="ED251",
    name="binary-ptx-jit-only",
    title="A GPU gets a package's kernels only by JIT-compiling its PTX",
    severity="warning",
    area="gpu",
    rationale="""
When no cubin of a package fits a GPU but its PTX does, the driver JIT-compiles the PTX at the first
launch of each kernel: the first start is slow (minutes for a large library; the result is cached in
~/.nv/ComputeCache, whose size limit CUDA_CACHE_MAXSIZE may be too small), and it works only while the
driver's CUDA is at least as new as the PTX ISA version (PTX from CUDA 13.0 is ISA 9.0 and needs a
CUDA 13.0 driver). Code that relies on the target's own features may also run slower than a native build.
""",
    example="""
An extension built with sm_80 and compute_75 PTX on a GeForce RTX 2080 (7.5): `ED251 warning`, the
first launch JIT-compiles compute_75 (PTX ISA 9.0, needs a driver for CUDA >= 13.0).
""",
    references=[
        "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#just-in-time-compilation",
        "https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#release-notes-ptx-release-history",
    ],
)
def binary_ptx_jit_only(ctx: Context, r: Rule) -> List[Finding]:
    out = []
    for cc, gpus, label, name, verdicts in _judged_packages(ctx, "ptx"):
        jit = [(b, v) for b, v in verdicts if v.kind == "ptx"]
        floors = sorted({v.cuda_floor for _, v in jit if v.cuda_floor})
        targets = sorted({t for _, v in jit for t in v.targets})
        floor_text = (f"it needs a driver for CUDA >= {floors[-1]}" if floors
                      else "the CUDA its PTX ISA needs is not in envdoctor's table")
        drv = ctx.snap.driver.cuda_version
        msg = (f"{label}: no cubin for {_gpus_text(gpus, cc)}; the driver will JIT-compile its PTX "
               f"({', '.join(targets)}) at the first launch: a slow first start, and {floor_text}"
               + (f" (this driver: CUDA {drv})." if drv else "."))
        ev = [_file_evidence(b) for b, _ in jit[:SHOWN_FILES]]
        for isa in sorted({b.ptx_isa.get(t, "") for b, v in jit for t in v.targets} - {""}):
            ev.append(EvidenceItem(f"PTX ISA {isa}", f"first loaded by CUDA {load_facts().ptx_cuda.get(isa, '?')}",
                                   _source(f"ptx:{isa}")))
        out.append(r.finding(msg, evidence=ev, subject=label, fix=[
            f"For a fast start, install a build of {name} with sm_{cc.replace('.', '')} cubins "
            f"(e.g. TORCH_CUDA_ARCH_LIST=\"{cc}\").",
            "Otherwise keep the JIT cache large enough: CUDA_CACHE_MAXSIZE=4294967296."]))
    return out


_NUMBER = re.compile(r"\d+")


def _variant_key(b: CudaBinary) -> Optional[Tuple[str, str]]:
    """(package, the file's path with the numbers of its last two parts blanked) for one of several builds of a
    library a package ships and picks from at run time: bitsandbytes' libbitsandbytes_cuda118.so ... _cuda132.so
    (by torch's CUDA), torchcodec's libtorchcodec_core4.so ... core9.so (by the FFmpeg found), nccl's lib/cu12/ and
    lib/cu13/; the one that fits is dlopened, the others never are."""
    if not b.package:
        return None
    head, _, name = b.path.rpartition("/")
    parent, _, folder = head.rpartition("/")
    if not _NUMBER.search(folder + name):
        return None
    return b.package, f"{parent}/{_NUMBER.sub('#', folder)}/{_NUMBER.sub('#', name)}"


def _loadable_variants(ctx) -> set:
    """The variant groups (of two files or more) in which one file finds every library it needs: its siblings
    for other CUDA versions are alternatives, not libraries an import loads."""
    groups: Dict[Tuple[str, str], List[CudaBinary]] = {}
    for b in ctx.snap.binaries.binaries:
        key = _variant_key(b)
        if key is not None:
            groups.setdefault(key, []).append(b)
    return {k for k, files in groups.items() if len(files) > 1 and any(not _missing(ctx, f) for f in files)}


def _group_size(ctx, key) -> int:
    return sum(1 for b in ctx.snap.binaries.binaries if _variant_key(b) == key)


def _other_cuda(ctx, b: CudaBinary, missing: List[str]):
    """(CUDA major the binary was built for, the framework build that loads it) when it needs the CUDA runtime
    of another major than that framework's: an extension from another index than its framework."""
    wanted = [int(s.rsplit(".", 1)[1]) for s in missing if s.startswith("libcudart.so.") and s.rsplit(".", 1)[1].isdigit()]
    loaders = {lib.loaded_by.split(" ")[0].lower() for lib in b.libraries if lib.loaded_by}
    if not wanted or not loaders:
        return None
    for build in cuda_builds(ctx):
        if (build.fw.distribution or "").lower() in loaders and build.major != wanted[0]:
            return wanted[0], build
    return None


def _missing(ctx, b: CudaBinary) -> List[str]:
    driver_ok = ctx.snap.driver.state == "ok"
    return [lib.soname for lib in b.libraries
            if lib.path is None and (driver_ok or lib.soname not in DRIVER_LIBS)]


@rule(
    id="ED650",
    name="binary-missing-library",
    title="A CUDA binary needs a shared library the loader cannot find",
    severity="error",
    area="environment",
    rationale="""
The dynamic loader resolves each DT_NEEDED soname of a shared object through LD_PRELOAD, the object's
DT_RPATH (only when it has no DT_RUNPATH; inherited from the objects that loaded it), LD_LIBRARY_PATH,
its DT_RUNPATH, /etc/ld.so.cache and the default dirs. A soname found nowhere makes the import fail with
"libcudnn.so.8: cannot open shared object file: No such file or directory" - typically an extension
built against a CUDA or cuDNN the environment does not have (an nvidia-* wheel of another major, a
system toolkit that is not installed here), or a RUNPATH into a build tree that is gone. Judged in the process
that imports the binary: a torch extension needs libc10.so and libtorch.so with no RUNPATH to them, by design,
because `import torch` loaded them first (an object already loaded under a name satisfies it); and of several
per-CUDA builds of one library a package picks from at run time (bitsandbytes' libbitsandbytes_cuda1XY.so), one
that loads is enough.
""",
    example="""
flash_attn_2_cuda.so needs libcudart.so.11.0 in an environment with CUDA 12 wheels only: `ED650 error`.
""",
    references=[
        "https://man7.org/linux/man-pages/man8/ld.so.8.html",
        "https://github.com/pytorch/pytorch/issues/104808",
    ],
)
def binary_missing_library(ctx: Context, r: Rule) -> List[Finding]:
    out = []
    loadable = _loadable_variants(ctx)
    said: set = set()
    for b in ctx.snap.binaries.binaries:
        missing = _missing(ctx, b)
        key = _variant_key(b)
        if not missing or key in loadable or (key is not None and key in said and _group_size(ctx, key) > 1):
            continue
        if key is not None:
            said.add(key)
        owner = f" ({b.package} {b.package_version})" if b.package else ""
        searched: Optional[List[str]] = next((lib.searched for lib in b.libraries if lib.path is None), None)
        ev = [EvidenceItem(f"DT_NEEDED {s}", "not found", "probe:binaries") for s in missing]
        if searched:
            ev.append(EvidenceItem("searched", ", ".join(searched), "probe:binaries"))
        if b.runpath or b.rpath:
            ev.append(EvidenceItem("RUNPATH" if b.runpath else "RPATH", ":".join(b.runpath or b.rpath), "probe:binaries"))
        fix = [f"Install what provides {', '.join(missing)} (the nvidia-* wheel or CUDA library of the version "
               f"this binary was built for), or put its directory on LD_LIBRARY_PATH.",
               "Or reinstall the package in a build that matches the CUDA libraries of this environment."]
        msg = (f"{b.path}{owner} needs {', '.join(missing)}, which the dynamic loader finds nowhere "
               f"(RPATH/RUNPATH, LD_LIBRARY_PATH, ld.so.cache, default dirs): importing it fails with "
               f"\"{missing[0]}: cannot open shared object file\".")
        if key is not None and _group_size(ctx, key) > 1:
            siblings = [x.path.rpartition("/")[2] for x in ctx.snap.binaries.binaries
                        if _variant_key(x) == key and x is not b]
            msg += (f" None of its {len(siblings)} other builds of this library ({', '.join(siblings[:4])}"
                    f"{' ...' if len(siblings) > 4 else ''}), which need other versions of them, loads either.")
        other = _other_cuda(ctx, b, missing)
        if other is not None:
            major, build = other
            name = b.package or "this extension"
            msg += (f" It was built for CUDA {major} (libcudart.so.{major}), and {build.label}, which loads it, is a "
                    f"CUDA {build.major} build.")
            fix = [f"Install the build of {name} made for {build.label} (CUDA {build.major}), or a "
                   f"{build.family} build for CUDA {major} that {name} fits."] + fix[1:]
        for lib in b.libraries:
            if lib.via == "already loaded" and lib.loaded_by:
                ev.append(EvidenceItem(f"DT_NEEDED {lib.soname}", f"already loaded by {lib.loaded_by}: {lib.path}",
                                       "probe:binaries"))
        out.append(r.finding(msg, evidence=ev, subject=b.package or b.path, fix=fix))
    return out
