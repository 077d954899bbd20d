"""ED001: the plain statement of where the frameworks will run when there is no NVIDIA GPU."""
from __future__ import annotations

from envdoctor.rules.base import EvidenceItem, rule

_NO_GPU_STATES = ("not_installed", "unknown", "no_devices")


@rule(
    id="ED001",
    name="no-nvidia-gpu",
    title="No NVIDIA GPU: the frameworks run on the CPU",
    severity="info",
    area="gpu",
    rationale="""
A machine without an NVIDIA GPU and driver is a healthy CPU machine: torch, tensorflow and jax run
on the CPU there, whatever build is installed. envdoctor says so plainly instead of raising errors
about CUDA versions that cannot matter. When a driver is installed but broken, other rules
(ED010-ED019) explain that instead.
""",
    example="A laptop without an NVIDIA GPU, torch 2.13.0+cpu and jax installed: `ED001 info`, exit code 0.",
    references=["https://docs.nvidia.com/cuda/cuda-installation-guide-linux/"],
)
def no_nvidia_gpu(ctx, r):
    snap = ctx.snap
    if snap.gpus or snap.driver.state not in _NO_GPU_STATES:
        return []
    if snap.driver.state == "no_devices" and snap.driver.version:
        return []  # a driver without devices is ED01x's business
    if snap.rocm.installed and snap.rocm.gpus:
        return []
    names = [f"{fw.name} {fw.version}" for fw in ctx.frameworks if fw.name in ("torch", "tensorflow", "jax")]
    where = (", ".join(names) + " will run on the CPU") if names else "GPU frameworks would run on the CPU"
    toolkit = snap.default_toolkit
    extra = f" (a CUDA {toolkit.version} toolkit is installed at {toolkit.path}, but no driver to run it)" if toolkit and toolkit.version else ""
    ev = [EvidenceItem("driver state", snap.driver.state, snap.driver.source or "probe:nvidia")]
    if toolkit is not None:
        ev.append(EvidenceItem("CUDA toolkit", f"{toolkit.version} at {toolkit.path}", toolkit.version_source))
    return [r.finding(f"No NVIDIA GPU or driver found: {where}{extra}.", evidence=ev, subject="machine")]
