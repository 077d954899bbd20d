"""ED430-ED432: GPU paths other than NVIDIA CUDA, named; a ROCm build against the host's ROCm and its AMD GPUs."""
from __future__ import annotations

from typing import List

from envdoctor.facts.labels import row_source
from envdoctor.facts.versions import major_minor
from envdoctor.rules.base import EvidenceItem, Finding, Rule, rule
from envdoctor.context import Context

_WORDS = {"npu": "Ascend NPU (torch_npu: torch.npu)", "xpu": "Intel GPU (torch.xpu)",
          "mps": "Apple GPU (Metal Performance Shaders)", "rocm": "AMD GPU (ROCm/HIP)"}


@rule(
    id="ED430", name="other-accelerator", title="A GPU path other than NVIDIA CUDA is installed",
    severity="info", area="platform",
    rationale="""
Not every GPU build is a CUDA build: torch_npu drives Ascend NPUs, +xpu torch builds (and
intel-extension-for-pytorch) Intel GPUs, torch on Apple silicon uses MPS (torch >= 1.12:
torch.backends.mps.is_available()), ROCm builds AMD GPUs. envdoctor names the path instead of reporting
such an environment as "CPU only"; it does not judge their drivers.
""",
    example="torch 2.5.1+xpu on a machine without NVIDIA GPUs: ED430 'Intel GPU (torch.xpu)'.",
    references=["https://pytorch.org/docs/stable/notes/mps.html", "https://pytorch.org/docs/stable/notes/get_start_xpu.html",
                "https://github.com/Ascend/pytorch"],
)
def other_accelerator(ctx: Context, r: Rule) -> List[Finding]:
    out = []
    for a in ctx.snap.accelerators:
        if a.kind == "rocm":
            continue  # ED431 judges ROCm builds
        extra = ""
        if a.kind == "mps" and a.framework.startswith("torch "):
            extra = " MPS needs torch >= 1.12 and macOS 12.3+; check with torch.backends.mps.is_available()."
        out.append(r.finding(f"{a.framework}: the GPU path is {_WORDS.get(a.kind, a.kind)}. {a.detail}.{extra}",
                             subject=a.framework))
    return out


@rule(
    id="ED431", name="rocm-build-vs-host", title="A ROCm build was made for another ROCm than the host's",
    severity="warning", area="platform",
    rationale="""
ROCm builds of torch (torch/version.py `hip`, local version +rocm6.1) and TensorFlow bundle or expect
a given ROCm release. The host's ROCm (/opt/rocm/.info/version) of another major.minor is a common
cause of "hipErrorNoBinaryForGpu" and of the GPU silently not being found; the build then runs on the CPU.
""",
    example="torch 2.4.0+rocm6.1 on a host with ROCm 5.7: ED431.",
    references=["https://rocm.docs.amd.com/en/latest/compatibility/compatibility-matrix.html",
                "https://pytorch.org/get-started/locally/"],
)
def rocm_build_vs_host(ctx: Context, r: Rule) -> List[Finding]:
    out = []
    for a in ctx.snap.accelerators:
        if a.kind != "rocm":
            continue
        if not a.host_version:
            out.append(r.finding(f"{a.framework} is a ROCm {a.version or ''} build, but no ROCm install was found on the host.",
                                 severity="info", subject=a.framework))
            continue
        if a.version and major_minor(a.version) != major_minor(a.host_version):
            out.append(r.finding(f"{a.framework} was built for ROCm {a.version}; the host has ROCm {a.host_version}.",
                                 subject=a.framework, evidence=[EvidenceItem("host ROCm", a.host_version, "rocm probe")],
                                 fix=[f"install the {a.framework.split()[0]} build for ROCm {major_minor(a.host_version)}, "
                                      "or the matching ROCm release"]))
    return out


@rule(
    id="ED432", name="rocm-build-gpu-target", title="AMD does not list the AMD GPU for the ROCm release of the build",
    severity="warning", area="platform",
    rationale="""
ROCm builds carry GPU code for the LLVM targets (gfx942, gfx90a, gfx1100 ...) AMD supports in that ROCm
release; a GPU whose target the release does not list (MI300X with ROCm 5.7, an RX 7800 XT's gfx1101 in 6.x)
can get "hipErrorNoBinaryForGpu" or not be found, and the framework runs on the CPU. AMD's Linux compatibility
matrix says which ROCm release lists which target; envdoctor has it as data (matrices/amd_gpus.toml, ROCm 5.7
to 6.3.3) and judges each AMD GPU the host reports (rocm-smi / amd-smi) against the build's ROCm (torch
version.py `hip`, +rocmX.Y): a warning when the target is listed only by other ROCm releases, info when AMD
supports it in none (consumer GPUs such as gfx1101: the framework's own arch list decides) or deprecates it.
A release outside the range read is not judged.
""",
    example="torch 2.1.2+rocm5.6 on an AMD Instinct MI300X (gfx942, listed from ROCm 6.0): ED432 warning.",
    references=["https://rocm.docs.amd.com/en/latest/compatibility/compatibility-matrix.html",
                "https://rocm.docs.amd.com/en/latest/reference/gpu-arch-specs.html"],
)
def rocm_build_gpu_target(ctx: Context, r: Rule) -> List[Finding]:
    m = ctx.matrices
    out = []
    for a in ctx.snap.accelerators:
        rocm = major_minor(a.version) if a.kind == "rocm" else None
        if rocm is None:
            continue
        for name in ctx.snap.rocm.gpus:
            gfx = m.amd_gfx_for_gpu(name)
            target = m.amd_target(gfx) if gfx else None
            listed = target.listed_in(rocm) if target else None
            ev = [EvidenceItem("AMD GPU", name, "rocm probe"),
                  EvidenceItem("LLVM target", gfx or "?", "matrices/amd_gpus.toml")]
            if target is not None:
                ev.append(EvidenceItem(f"{target.gfx} in AMD's matrix", _span(target), row_source(m, target)))
            if listed is False and target is not None:
                severity = "warning"
                if target.status in ("unlisted", "unsupported"):
                    # AMD does not ship or test it, but a framework's own arch list may still carry code for it
                    severity = "info"
                    why = (f"AMD supports {target.gfx} ({target.arch}) in no ROCm release read (through "
                           f"{target.listed_through}: {target.status}); whether the build carries code for it is "
                           f"the framework's own arch list")
                    fix = [f"if the GPU is not found, use a GPU whose target AMD lists for ROCm {rocm}, or a build "
                           f"whose arch list names {target.gfx}"]
                else:
                    why = f"AMD's compatibility matrix lists {target.gfx} ({target.arch}) {_span(target)}"
                    fix = [f"install the {a.framework.split()[0]} build for a ROCm release that lists {target.gfx}"
                           + (f" (ROCm {target.rocm_first} or newer)" if target.rocm_first else "")]
                out.append(r.finding(f"{a.framework} is a ROCm {rocm} build, but {name} is {target.gfx}: {why}.",
                                     severity=severity, evidence=ev, fix=fix, subject=f"{a.framework} on {name}",
                                     cause=f"rocm-target:{target.gfx}:{rocm}"))
            elif listed and target is not None and target.status == "deprecated":
                out.append(r.finding(f"{name} ({target.gfx}) is deprecated in AMD's ROCm matrix: support is to be "
                                     f"removed in a later ROCm release than {target.listed_through}.",
                                     severity="info", evidence=ev, subject=f"{a.framework} on {name}"))
    return out


def _span(target) -> str:
    if target.status in ("unlisted", "unsupported"):
        return f"{target.status} (ROCm {target.read_from} to {target.listed_through} read)"
    first = f"from ROCm {target.rocm_first}" if target.rocm_first else f"since before ROCm {target.read_from}"
    last = f" to {target.rocm_last}" if target.rocm_last else f" (still listed in {target.listed_through})"
    return first + last
