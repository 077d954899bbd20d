"""ED150-ED159: the driver branch and cuDNN against the GPU itself (not against a framework's CUDA).

A driver branch drives a GPU architecture from the branch of its first CUDA (Blackwell: R570) and, for retired
architectures, up to their last branch (Kepler: R470; Maxwell, Pascal, Volta: R580). A cuDNN release drops old
GPUs (9.17 and newer need compute capability 7.5). The judgement is envdoctor.facts.gpu_support's, the one
lock uses, so check, gate (which runs these rules on its target) and lock agree.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

from envdoctor.facts.gpu_support import cudnn_cap_for_gpu, cudnn_supports_gpu, driver_supports_gpu
from envdoctor.facts.gpus import gpu_label, visible_gpus
from envdoctor.facts.labels import driver_source
from envdoctor.facts.labels import row_source
from envdoctor.facts.pins import cudnn_wheel_major
from envdoctor.facts.versions import parse_version
from envdoctor.rules.base import EvidenceItem, Finding, Rule, rule
from envdoctor.context import Context
from envdoctor.snapshot import GPU

_REFS = [
    "https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html",
    "https://docs.nvidia.com/deeplearning/cudnn/latest/reference/support-matrix.html",
]


def _gpus(ctx: Context) -> List[Tuple[GPU, str]]:
    """(GPU, compute capability) of each GPU whose capability is known, once per capability."""
    out, seen = [], set()
    for g in (visible_gpus(ctx).gpus if ctx.snap.driver.state == "ok" else ctx.snap.gpus):
        cc = ctx.gpu_cc(g)
        if cc and cc not in seen:
            seen.add(cc)
            out.append((g, cc))
    return out


def _driver_version(snap) -> Optional[str]:
    d = snap.driver
    for v in (d.version, getattr(d, "kernel_module_version", None)):
        if parse_version(v) is not None:
            return v
    return None


@rule(
    id="ED150",
    name="driver-branch-gpu",
    title="The NVIDIA driver branch cannot drive the GPU",
    severity="error",
    area="driver",
    rationale="""
Each driver branch drives a fixed set of GPU architectures. A new architecture needs the branch of the first
CUDA that supports it (Blackwell: R570, with CUDA 12.8; Ada and Hopper: R520, with CUDA 11.8), and a retired
one is driven only up to its last branch (Kepler: R470; Maxwell, Pascal and Volta: R580). Outside that range
the kernel module does not bind the GPU ("NVRM: The NVIDIA GPU ... is not supported by the ... driver") and no
framework sees it, whatever CUDA build is installed. The branch ranges are data (matrices/gpu_support.toml).
""",
    example="""
Driver 535.104.05 with an RTX 5090 (compute capability 12.0): `ED150 error` - R535 cannot drive Blackwell GPUs,
which need R570 or newer; fix: install a driver of branch R570 or newer.
""",
    references=_REFS,
)
def driver_branch_gpu(ctx: Context, r: Rule) -> List[Finding]:
    driver = _driver_version(ctx.snap)
    if driver is None:
        return []
    out = []
    for g, cc in _gpus(ctx):
        prob = driver_supports_gpu(ctx.matrices, driver, cc)
        if prob is None:
            continue
        label = gpu_label(g, None)
        ev = [EvidenceItem("NVIDIA driver", driver, driver_source(ctx.snap)),
              EvidenceItem(f"{label} compute capability", cc, "probe:nvidia"),
              EvidenceItem(f"{prob.row.family} driver branches", prob.row.span(), row_source(ctx.matrices, prob.row))]
        out.append(r.finding(f"{label}: {prob.message}.", evidence=ev, fix=[prob.fix], cause=f"driver-branch-gpu:{prob.key}",
                             subject=label))
    return out


def _cudnn_found(ctx: Context) -> List[Tuple[str, Optional[int], str, str]]:
    """(version, CUDA major or None, where, source) of every cuDNN the environment has: wheels, then the system."""
    out: List[Tuple[str, Optional[int], str, str]] = []
    for name, version in sorted(ctx.snap.python.packages.items()):
        major = cudnn_wheel_major(name)
        if major is not None and parse_version(version) is not None:
            out.append((version, major, f"{name} {version}", "python.packages"))
    wheel_major = {v: m for v, m, _, _ in out}
    for c in ctx.snap.cudnn:
        if c.version and parse_version(c.version) is not None:
            src = c.evidence[0].source if c.evidence else f"file:{c.path}"
            # the files of a cuDNN wheel (nvidia/cudnn/lib) are that wheel's: its CUDA major is the name's
            major = wheel_major.get(c.version) if "site-packages" in (c.path or "") else None
            out.append((c.version, major, f"{c.version} at {c.path}" if c.path else c.version, src))
    if not ctx.snap.cudnn:
        # a framework build that brings its own exact cuDNN (torch's Windows wheels bundle it; an index build's
        # cuDNN wheel a plan does not lay in) loads that one where no cuDNN of its CUDA major is installed
        majors = {m for _, m, _, _ in out}
        for fw in ctx.frameworks:
            v = parse_version(fw.cudnn_version)
            cv = parse_version(fw.cuda_version)
            if fw.build != "cuda" or v is None or len(v.release) < 3 or cv is None or cv.major in majors:
                continue
            src = fw.evidence[0].source if fw.evidence else f"python.frameworks:{fw.name}"
            out.append((str(fw.cudnn_version), cv.major, f"cuDNN {fw.cudnn_version} of {fw.distribution or fw.name} "
                                                         f"{fw.version}", src))
    return out


@rule(
    id="ED151",
    name="cudnn-drops-gpu",
    title="The installed cuDNN no longer supports the GPU",
    severity="error",
    area="cudnn",
    rationale="""
cuDNN releases drop old GPUs: NVIDIA's support matrix lists only compute capability 7.5 (Turing) and newer for
cuDNN 9.17, for both its CUDA 12 and CUDA 13 builds, and the CUDA 13 builds from 9.12 on. A framework that
loads such a cuDNN on a Pascal or Volta GPU fails at its first convolution (CUDNN_STATUS_ARCH_MISMATCH,
"no kernel image is available"). pip installs the newest cuDNN a framework's pin allows, so a fresh install on
an old GPU meets this unless the cuDNN wheel is pinned below the release that dropped it.
""",
    example="""
nvidia-cudnn-cu12 9.17.1.4 with a GTX 1080 (compute capability 6.1): `ED151 error`; fix:
`pip install "nvidia-cudnn-cu12<9.17"`.
""",
    references=_REFS,
)
def cudnn_drops_gpu(ctx: Context, r: Rule) -> List[Finding]:
    gpus = _gpus(ctx)
    if not gpus:
        return []
    out = []
    for version, major, where, src in _cudnn_found(ctx):
        for g, cc in gpus:
            prob = cudnn_supports_gpu(ctx.matrices, version, cc, major)
            if prob is None:
                continue
            if major is not None and cudnn_cap_for_gpu(ctx.matrices, cc, major) is None:
                # no cuDNN of this CUDA major supports the GPU (CUDA 13 and Pascal): the CUDA major itself is what
                # fails, and the framework build that brought it is judged for the GPU (ED200, jax's floor)
                continue
            label = gpu_label(g, None)
            fix = [prob.fix]
            if src.startswith("python.frameworks:") or where.startswith("cuDNN "):
                fix.append("The framework build brings this cuDNN itself: install a build of it whose cuDNN "
                           "still supports the GPU (an older release, or one for another CUDA).")
            elif major is not None:
                fix.append(f'$ pip install "nvidia-cudnn-cu{major}{cudnn_cap_for_gpu(ctx.matrices, cc, major)}"')
            ev = [EvidenceItem("cuDNN found", where, src),
                  EvidenceItem(f"{label} compute capability", cc, "probe:nvidia"),
                  EvidenceItem(f"cuDNN {prob.row.label} minimum compute capability", prob.row.min_cc(major),
                               row_source(ctx.matrices, prob.row))]
            out.append(r.finding(f"{label}: {prob.message} - the installed cuDNN is {where}.", evidence=ev, fix=fix,
                                 cause=f"{prob.key}:{version}", subject=where))
    return out
