"""GPU paths that are not NVIDIA CUDA, named so that they are never reported as "CPU only":
Ascend NPUs (the torch_npu extension), Intel GPUs (torch +xpu builds, intel-extension-for-pytorch), Apple
GPUs (torch's MPS backend on macOS arm64; tensorflow-metal) and AMD GPUs (ROCm builds, with the ROCm a
build was made for against the host's). Reads only what the python and rocm probes found."""
from __future__ import annotations

from envdoctor.probes.base import ProbeContext
from envdoctor.snapshot import Accelerator, Snapshot


def _local(version: str) -> str:
    return version.split("+", 1)[1].lower() if "+" in version else ""


def probe(ctx: ProbeContext, snap: Snapshot) -> None:
    out = []
    pk = snap.python.packages
    plat = (snap.python.platform_tag or "").lower()
    system = (snap.platform.system or "").lower()
    for fw in snap.python.frameworks:
        label = f"{fw.name} {fw.version}"
        if fw.name == "torch":
            if _local(fw.version).startswith("xpu") or fw.build == "xpu":
                out.append(Accelerator("xpu", label, detail="a torch build for Intel GPUs (torch.xpu)"))
            if fw.build == "rocm":
                out.append(Accelerator("rocm", label, version=fw.rocm_version or "",
                                       host_version=snap.rocm.version or "", detail="a torch ROCm (HIP) build"))
            if plat.startswith("macosx") and plat.endswith(("arm64", "universal2")) or (
                    system == "darwin" and (snap.platform.machine or "").lower() == "arm64"):
                out.append(Accelerator("mps", label, detail="torch on Apple silicon: the GPU path is MPS (torch.backends.mps)"))
        elif fw.name == "tensorflow" and fw.build == "rocm":
            out.append(Accelerator("rocm", label, version=fw.rocm_version or "", host_version=snap.rocm.version or "",
                                   detail="a TensorFlow ROCm build"))
        elif fw.name == "tensorflow" and fw.build == "metal":
            out.append(Accelerator("mps", label, detail="TensorFlow with tensorflow-metal (Apple GPU)"))
    if "torch-npu" in pk:
        out.append(Accelerator("npu", f"torch-npu {pk['torch-npu']}", version=pk["torch-npu"],
                               detail="Ascend NPU extension for torch (torch.npu)"))
    if "intel-extension-for-pytorch" in pk:
        v = pk["intel-extension-for-pytorch"]
        if "xpu" in v or not any(a.kind == "xpu" for a in out):
            out.append(Accelerator("xpu", f"intel-extension-for-pytorch {v}", version=v,
                                   detail="Intel Extension for PyTorch" + (" (GPU build)" if "xpu" in v else "")))
    snap.accelerators = out
