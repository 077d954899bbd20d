"""ED100-ED149: the NVIDIA driver against the CUDA version each installed framework build was compiled for.

How a CUDA build meets a driver (NVIDIA's CUDA compatibility guide):
- every CUDA major X from 11 on has a minor-version-compatibility (MVC) floor (CUDA 12.x: 525.60.13 on
  Linux): an application built with any 12.y toolkit *runs* on any driver at or above that floor. Below
  the floor it does not start ("The NVIDIA driver on your system is too old", "CUDA driver version is
  insufficient for CUDA runtime version"). That is an error.
- between the floor and the toolkit driver of the exact X.Y (CUDA 12.4: 550.54.14) the build runs on its
  prebuilt kernels; what needs the newer driver is JIT compilation of PTX produced by the newer toolkit
  (CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "the provided PTX was compiled with an unsupported toolchain")
  and a few newer-toolkit features. A 12.4 torch on a 535 (CUDA 12.2) driver is a setup real users run
  daily, so this is a warning only where PTX JIT actually matters (a GPU without SASS in the build), and
  an info otherwise.

The facts it reads live in envdoctor.facts (builds, driver, gpus); the alternative torch/TF/JAX builds from
the matrices (torch_choice, tf_choice, jax_choice) are still here, read by arch and machine too, until the
frameworks modules own them.
"""
from __future__ import annotations

from typing import List, Tuple

from packaging.version import Version

from envdoctor.facts.builds import CudaBuild, build_arch, cuda_builds
from envdoctor.facts.choices import jax_command, spec_target, tf_command, torch_choice, unknown_note
from envdoctor.facts.driver import DriverFacts, cuda_floor, driver_evidence, driver_facts, driver_native, driver_runs
from envdoctor.facts.gpus import Visible, gpu_label, kernel_for, variant_serves_cc, visible_gpus  # noqa: F401
from envdoctor.facts.labels import row_source
from envdoctor.facts.versions import major_minor as xy
from envdoctor.facts.versions import major_minor_version as vxy
from envdoctor.facts.versions import parse_version
from envdoctor.frameworks import registry
from envdoctor.frameworks.base import Candidate
from envdoctor.rules.base import EvidenceItem, Finding, Rule, rule
from envdoctor.context import Context

# --------------------------------------------------------------------------- ED100

_REFS = [
    "https://docs.nvidia.com/deploy/cuda-compatibility/",
    "https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html",
    "https://github.com/lllyasviel/Fooocus/issues/1313",
    "https://github.com/tensorflow/docs/pull/1902",
    "https://github.com/jax-ml/jax/issues/21950",
]


def _alternative(ctx, build: CudaBuild, df: DriverFacts, vis: Visible) -> Tuple[List[str], List[EvidenceItem]]:
    """A build of the same framework whose CUDA this driver runs (fix lines, matrix evidence)."""
    m = ctx.matrices
    fixes: List[str] = []
    ev: List[EvidenceItem] = []
    ccs = [c for c in (ctx.gpu_cc(g) for g in vis.gpus) if c]
    if build.family == "torch":
        def fits(var) -> bool:
            if driver_runs(ctx, df, var.cuda) is not True:
                return False
            return all(variant_serves_cc(m, var, cc, ("sass", "ptx", "ptx-major")) for cc in ccs)

        ch = torch_choice(ctx, build.fw, fits)
        if ch is not None:
            fixes.append(f"or install a torch build for CUDA {ch.variant.cuda_major}.x, which this driver runs: "
                         f"{ch.label()}:")
            fixes.append(ch.command(ctx))
            ev.append(EvidenceItem(f"torch {ch.release.version} {ch.variant.name}", f"CUDA {ch.variant.cuda}",
                                   row_source(m, ch.variant)))
    elif build.family in ("tensorflow", "jax"):
        # the same judgement lock and gate make (frameworks/): the newest build that fits the whole target
        spec = registry.get(build.family)
        target = spec_target(ctx, df.version, ccs)
        jv = ctx.framework("jax") if build.family == "jax" else None

        def runs(cand: Candidate) -> bool:
            if not cand.cuda:
                return False
            return driver_runs(ctx, df, cand.cuda if build.family == "tensorflow" else str(cand.cuda_major)) is True

        cand = spec.choose(m, target, f"=={jv.version}", accept=runs) if jv is not None else None
        if cand is None or cand.unknown:  # the installed release first, but not on facts the data lacks
            other = spec.choose(m, target, accept=runs)
            cand = other if cand is None or (other is not None and not other.unknown) else cand
        if cand is not None and build.family == "tensorflow":
            rel = m.tf_release(cand.version)
            fixes.append(f"or install TensorFlow {rel.tested} (built for CUDA {rel.cuda}, which this driver runs"
                         f"{unknown_note(cand)}):")
            fixes.append(tf_command(rel))
            ev.append(EvidenceItem(f"tensorflow {rel.version}", f"CUDA {rel.cuda}", row_source(m, rel)))
        elif cand is not None:
            rel = m.jax_release(cand.version)
            plugin = rel.plugins[cand.build]
            fixes.append(f"or install jax {rel.version} with its CUDA {plugin.cuda_major} plugin ({plugin.package}"
                         f"{unknown_note(cand)}):")
            if build.fw.distribution and build.fw.distribution != plugin.package:
                fixes.append(f"$ pip uninstall -y {build.fw.distribution}")
            fixes.append(jax_command(rel, plugin))
            ev.append(EvidenceItem(f"jax {rel.version} {plugin.name} plugin", f"driver >= {plugin.driver_min}",
                                   row_source(m, plugin)))
    elif build.family == "cupy":
        majors = sorted(m.mvc) if m is not None else []
        runnable = [mj for mj in majors if driver_runs(ctx, df, str(mj)) is True]
        if runnable:
            want = f"cupy-cuda{max(runnable)}x"
            if want != (build.fw.distribution or ""):
                fixes.append(f"or install the CuPy build for CUDA {max(runnable)}:")
                fixes.append(f"$ pip uninstall -y {build.fw.distribution} && pip install {want}")
    return fixes, ev


@rule(
    id="ED100",
    name="driver-too-old",
    title="NVIDIA driver too old for a framework's CUDA build",
    severity="error",
    area="driver",
    rationale="""
Every framework build is compiled against one CUDA toolkit, and the NVIDIA driver must support that
CUDA version. Since CUDA 11, a build of CUDA X.y runs on any driver at or above the
minor-version-compatibility floor of major X (CUDA 12: 525.60.13 on Linux); below that floor the CUDA
runtime refuses to start ("The NVIDIA driver on your system is too old", "CUDA driver version is
insufficient for CUDA runtime version") and the framework falls back to the CPU or fails. Between the
floor and the toolkit driver of the exact X.Y the build runs on its prebuilt kernels; only PTX JIT of
newer-toolkit PTX needs the newer driver, which ED100 reports as a warning when a GPU depends on PTX and
otherwise as an info. The CUDA version the driver reports itself (NVML / nvidia-smi) is trusted as well,
so forward-compatibility packages and drivers newer than the data are judged correctly.
""",
    example="""
Driver 470.86 (CUDA 11.4) with torch 2.1.0+cu121: `ED100 error` - CUDA 12.x builds need driver >= 525.60.13;
fix: upgrade the driver, or `pip install torch==2.1.0 --index-url https://download.pytorch.org/whl/cu118`.
""",
    references=_REFS,
)
def driver_too_old(ctx: Context, r: Rule) -> List[Finding]:
    df = driver_facts(ctx)
    if df is None:
        return []
    builds = cuda_builds(ctx)
    if not builds:
        return []
    m = ctx.matrices
    vis = visible_gpus(ctx)
    failing = [b for b in builds if driver_runs(ctx, df, b.cuda) is False]
    floors = [f for f in (cuda_floor(m, b.cuda, df.os) for b in failing) if f and parse_version(f) is not None]
    top_floor = max(floors, key=Version) if floors else None
    out = []
    for b in builds:
        runs = driver_runs(ctx, df, b.cuda)
        if runs is None:
            continue
        floor = cuda_floor(m, b.cuda, df.os)
        ev = driver_evidence(df) + [EvidenceItem(f"{b.label} built for CUDA", b.cuda, b.cuda_source)]
        if runs is False:
            mvc_row = m.mvc.get(b.major)
            if mvc_row is not None:
                ev.append(EvidenceItem(f"CUDA {b.major}.x minor-version-compatibility floor ({df.os})",
                                       str(floor), row_source(m, mvc_row)))
            need_txt = f"NVIDIA driver >= {floor}" if floor else f"a driver that supports CUDA {b.cuda}"
            what = f"CUDA {b.cuda}" if b.has_minor else f"CUDA {b.major}.x"
            msg = (f"{b.label} is built for {what}, which needs {need_txt}; "
                   f"this machine has {df.describe()}.")
            fixes = []
            target = top_floor or floor
            if target:
                tk = m.min_driver_for_cuda(xy(b.cuda), df.os) if b.has_minor else None
                extra = f" (>= {tk} for every CUDA {xy(b.cuda)} feature)" if tk and Version(tk) > Version(target) else ""
                fixes.append(f"Upgrade the NVIDIA driver to >= {target}{extra}.")
            alt_fix, alt_ev = _alternative(ctx, b, df, vis)
            fixes.extend(alt_fix)
            ev.extend(alt_ev)
            out.append(r.finding(msg, evidence=ev, fix=fixes, cause="driver-too-old", subject=b.label))
            continue
        if not b.has_minor:
            native = None
        else:
            native = driver_native(ctx, df, b.cuda)
        if native is not False:
            # JAX: XLA's ptxas (pip nvidia-cuda-nvcc) newer than the driver slows compilation only.
            continue
        tk = m.min_driver_for_cuda(xy(b.cuda), df.os)
        cuda_row = m.cuda_release(xy(b.cuda))
        if cuda_row is not None and tk:
            ev.append(EvidenceItem(f"CUDA {xy(b.cuda)} toolkit driver ({df.os})", tk, row_source(m, cuda_row)))
        if floor:
            mvc_row = m.mvc.get(b.major)
            if mvc_row is not None:
                ev.append(EvidenceItem(f"CUDA {b.major}.x minor-version-compatibility floor ({df.os})", floor,
                                       row_source(m, mvc_row)))
        ptx_gpus = []
        presumed = False
        if b.family in ("torch", "tensorflow"):
            info = build_arch(ctx, b)
            if info is not None:
                presumed = info.presumed
                for g in vis.gpus:
                    kind, name = kernel_for(info.arch_list, ctx.gpu_cc(g))
                    if kind in ("ptx", "ptx-major"):
                        ptx_gpus.append((g, name))
                if ptx_gpus:
                    ev.append(EvidenceItem(f"{b.label} compiled archs", " ".join(info.arch_list), info.source))
        need = tk or f"a CUDA {xy(b.cuda)} driver"
        if ptx_gpus:
            gtxt = ", ".join(f"{gpu_label(g, ctx.gpu_cc(g))} needs PTX {n}" for g, n in ptx_gpus)
            msg = (f"{b.label} is built with CUDA {xy(b.cuda)} and this machine has {df.describe()}: it runs through "
                   f"minor-version compatibility, but {gtxt}, and JIT of CUDA {xy(b.cuda)} PTX needs driver >= {need} "
                   f"(else 'the provided PTX was compiled with an unsupported toolchain').")
            fixes = [f"Upgrade the NVIDIA driver to >= {need}."]
            if b.family == "torch":
                cur = vxy(df.max_cuda)

                def fits(var, _ccs=[ctx.gpu_cc(g) for g, _ in ptx_gpus]) -> bool:
                    if cur is not None and (vxy(var.cuda) or Version("99")) > cur:
                        return False
                    return all(variant_serves_cc(m, var, c, ("sass",)) for c in _ccs)

                ch = torch_choice(ctx, b.fw, fits)
                if ch is not None:
                    fixes.append(f"or install {ch.label()}, which has native kernels for this GPU:")
                    fixes.append(ch.command(ctx))
            if presumed:
                msg += " (The arch list is presumed by envdoctor's data, not read from the build.)"
            out.append(r.finding(msg, severity="info" if presumed else "warning", evidence=ev, fix=fixes,
                                 cause="driver-older-than-build", subject=b.label))
        else:
            msg = (f"{b.label} is built with CUDA {xy(b.cuda)}; driver {df.describe()} runs it through CUDA "
                   f"minor-version compatibility (needs >= {floor}), which is fine for its prebuilt kernels. "
                   f"PTX JIT of CUDA {xy(b.cuda)} PTX and some newer-toolkit features need driver >= {need}.")
            out.append(r.finding(msg, severity="info", evidence=ev,
                                 fix=[f"Nothing to do for prebuilt kernels; upgrade the driver to >= {need} "
                                      f"before JIT-compiling CUDA {xy(b.cuda)} PTX (custom kernels, Triton)."],
                                 cause="driver-older-than-build", subject=b.label))
    return out
