"""Build-time and debugging variables, the archs the default nvcc targets, and NCCL's environment.

TORCH_CUDA_ARCH_LIST (torch.utils.cpp_extension), CUDAARCHS and CMAKE_CUDA_ARCHITECTURES (CMake) decide
which GPUs an extension built here will have kernels for; `nvcc --list-gpu-arch` (CUDA >= 11.0) says
which virtual archs the default toolkit can compile. CUDA_LAUNCH_BLOCKING=1 serialises every launch.
NCCL_* are shown with secret-named ones masked (NCCL takes no credentials, plugins may).
"""
from __future__ import annotations

from envdoctor.parsers.breadth import parse_nvcc_archs
from envdoctor.probes._parsed import parsed
from envdoctor.probes.base import ProbeContext
from envdoctor.snapshot import Evidence, Snapshot

BUILD_VARS = ("TORCH_CUDA_ARCH_LIST", "CUDAARCHS", "CMAKE_CUDA_ARCHITECTURES", "CUDA_LAUNCH_BLOCKING",
              "TORCH_NVCC_FLAGS", "MAX_JOBS", "CUDA_MODULE_LOADING", "CUDA_CACHE_DISABLE")


def probe(ctx: ProbeContext, snap: Snapshot) -> None:
    be = snap.buildenv
    be.env = {k: ctx.env[k] for k in BUILD_VARS if ctx.env.get(k) is not None}
    nccl = [(k, v) for k, v in sorted(ctx.env.items()) if isinstance(k, str) and k.startswith("NCCL_")]
    if nccl:
        from envdoctor.redact import REDACTED, is_secret_name  # its patterns compile at import: only when needed

        be.nccl_env = {k: (REDACTED if is_secret_name(k) else str(v)) for k, v in nccl}
    else:
        be.nccl_env = {}
    tk = snap.default_toolkit
    if tk is None or not tk.nvcc or not ctx.root.is_live:
        return  # never execute an inspected image's nvcc
    be.nvcc = tk.nvcc
    res = ctx.runner.run_fixed([tk.nvcc, "--list-gpu-arch"], timeout=ctx.timeout)
    source = f"cmd:{tk.nvcc} --list-gpu-arch"
    be.evidence.append(Evidence(source, (res.stdout or res.stderr or res.reason)[:600]))
    if res.status == "ok":
        be.nvcc_archs = parsed(be.evidence, source, parse_nvcc_archs, res.stdout, default=[])
