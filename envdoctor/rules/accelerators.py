"""ED430-ED431: GPU paths other than NVIDIA CUDA, named; a ROCm build against the host's ROCm."""
from __future__ import annotations

from envdoctor.rules.base import EvidenceItem, rule
from envdoctor.rules.context import major_minor

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
def other_accelerator(ctx, r):
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
def rocm_build_vs_host(ctx, r):
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
