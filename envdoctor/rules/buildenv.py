"""ED630-ED641: build-time arch variables against the GPUs and nvcc, CUDA_LAUNCH_BLOCKING, NCCL's environment,
mixed GPU generations."""
from __future__ import annotations

from typing import Any, Dict, List

from envdoctor.parsers.breadth import arch_number, parse_arch_list
from envdoctor.rules.base import EvidenceItem, Finding, Rule, rule
from envdoctor.context import Context

ARCH_VARS = ("TORCH_CUDA_ARCH_LIST", "CUDAARCHS", "CMAKE_CUDA_ARCHITECTURES")


def _cc_num(cc):
    n = arch_number(cc) if cc else None
    return n[0] if n else None


def _runs_on(archs, cc: int, ptx: bool) -> bool:
    """SASS for XY runs on the same major with minor >= Y ('a' targets only on exactly XY); PTX JITs forward."""
    for num, suffix in archs:
        if suffix == "a" and num == cc:
            return True
        if not suffix and num // 10 == cc // 10 and num <= cc:
            return True
        if ptx and num <= cc:
            return True
    return False


@rule(
    id="ED630", name="arch-list-vs-gpus", title="TORCH_CUDA_ARCH_LIST / CUDAARCHS leaves out a GPU here, or names archs nvcc cannot build",
    severity="warning", area="toolkit",
    rationale="""
Extensions built here (torch.utils.cpp_extension, CMake projects, pip installs from source such as
flash-attn or apex) get device code only for the archs TORCH_CUDA_ARCH_LIST / CUDAARCHS /
CMAKE_CUDA_ARCHITECTURES name. A GPU of this machine missing from the list fails later with "no kernel
image is available for execution on the device"; an arch the local nvcc cannot target ("nvcc fatal :
Unsupported gpu architecture 'compute_50'") fails the build. Compared per GPU, with nvcc --list-gpu-arch.
""",
    example="TORCH_CUDA_ARCH_LIST=8.0 on a machine with an RTX 4090 (8.9): ED630.",
    references=["https://pytorch.org/docs/stable/cpp_extension.html",
                "https://cmake.org/cmake/help/latest/prop_tgt/CUDA_ARCHITECTURES.html",
                "https://docs.nvidia.com/cuda/cuda-compiler-driver-nvcc/index.html#options-for-steering-gpu-code-generation"],
)
def arch_list_vs_gpus(ctx: Context, r: Rule) -> List[Finding]:
    be = ctx.snap.buildenv
    out = []
    nvcc = {n for n in (arch_number(a) for a in be.nvcc_archs) if n}
    for var in ARCH_VARS:
        value = be.env.get(var)
        if value is None:
            continue
        archs, words = parse_arch_list(value)
        special = [w for w in words if w.lower() in ("native", "all", "all-major")]
        unknown = [w for w in words if w not in special]
        problems = [f"'{w}' is not an arch" for w in unknown]
        ptx = var == "TORCH_CUDA_ARCH_LIST" and "+ptx" in value.lower() or "-virtual" in value
        if not special:
            for g in ctx.gpus:
                cc = _cc_num(ctx.gpu_cc(g))
                if cc is not None and archs and not _runs_on(archs, cc, ptx):
                    problems.append(f"GPU {g.index} ({g.name}, {ctx.gpu_cc(g)}) is not covered")
        if nvcc:
            nums = {n for n, _ in nvcc}
            problems += [f"nvcc {be.nvcc} cannot target {n // 10}.{n % 10}{s}" for n, s in archs if n not in nums]
        if problems:
            out.append(r.finding(f"{var}={value}: " + "; ".join(problems) + ".", subject=var,
                                 evidence=[EvidenceItem(var, value, f"env:{var}")]
                                 + ([EvidenceItem("nvcc --list-gpu-arch", " ".join(be.nvcc_archs), f"cmd:{be.nvcc} --list-gpu-arch")] if nvcc else []),
                                 fix=[f"$ export {var}=\"" + ";".join(sorted({cc for cc in map(ctx.gpu_cc, ctx.gpus) if cc})) + "\""
                                      if ctx.gpus and var == "TORCH_CUDA_ARCH_LIST" else f"$ unset {var} (builds then target this machine's GPUs)"]))
    return out


@rule(
    id="ED632", name="cuda-launch-blocking", title="CUDA_LAUNCH_BLOCKING=1 is set",
    severity="info", area="environment",
    rationale="""
CUDA_LAUNCH_BLOCKING=1 makes every kernel launch synchronous: right for locating the kernel behind an
asynchronous "CUDA error: device-side assert triggered", but everything runs much slower while it is
left set in a shell profile or a job script.
""",
    example="CUDA_LAUNCH_BLOCKING=1 exported in ~/.bashrc: ED632.",
    references=["https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#cuda-environment-variables"],
)
def cuda_launch_blocking(ctx: Context, r: Rule) -> List[Finding]:
    v = ctx.snap.buildenv.env.get("CUDA_LAUNCH_BLOCKING") or ctx.gpu_env.get("CUDA_LAUNCH_BLOCKING")
    if v is None or v.strip() in ("", "0"):
        return []
    return [r.finding(f"CUDA_LAUNCH_BLOCKING={v}: every kernel launch waits for the GPU (debugging only).",
                      fix=["$ unset CUDA_LAUNCH_BLOCKING"], evidence=[EvidenceItem("CUDA_LAUNCH_BLOCKING", v, "env:CUDA_LAUNCH_BLOCKING")])]


@rule(
    id="ED640", name="nccl-environment", title="NCCL's environment is set",
    severity="info", area="environment",
    rationale="""
NCCL_P2P_DISABLE, NCCL_IB_DISABLE / NCCL_IB_HCA, NCCL_SOCKET_IFNAME, NCCL_DEBUG and the like change how
multi-GPU and multi-node collectives run (P2P off: all traffic through host memory; a wrong
NCCL_SOCKET_IFNAME: init hangs). They are the first thing a distributed-training bug report is asked for.
""",
    example="NCCL_P2P_DISABLE=1 NCCL_SOCKET_IFNAME=eth0: ED640 lists them.",
    references=["https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"],
)
def nccl_environment(ctx: Context, r: Rule) -> List[Finding]:
    env = ctx.snap.buildenv.nccl_env
    if not env:
        return []
    msg = "NCCL settings: " + ", ".join(f"{k}={v}" for k, v in sorted(env.items())) + "."
    if env.get("NCCL_P2P_DISABLE", "").strip() == "1" and len(ctx.gpus) > 1:
        msg += " P2P is off: GPU-to-GPU traffic goes through host memory."
    return [r.finding(msg, evidence=[EvidenceItem(k, v, f"env:{k}") for k, v in sorted(env.items())])]


@rule(
    id="ED641", name="mixed-gpu-generations", title="GPUs of several generations in one machine",
    severity="info", area="gpu",
    rationale="""
A machine with GPUs of different compute capabilities is judged per GPU (ED2xx check every GPU
against each build's archs): a build can work on one GPU and fail with "no kernel image" on another,
and CUDA_VISIBLE_DEVICES decides which one a job gets. Collective libraries also run at the speed of the
slowest GPU.
""",
    example="GPU 0: RTX 4090 (8.9), GPU 1: GTX 1080 Ti (6.1): ED641.",
    references=["https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#compute-capabilities"],
)
def mixed_gpu_generations(ctx: Context, r: Rule) -> List[Finding]:
    ccs: Dict[str, List[Any]] = {}
    for g in ctx.gpus:
        cc = ctx.gpu_cc(g)
        if cc:
            ccs.setdefault(cc, []).append(f"GPU {g.index} {g.name}")
    if len(ccs) < 2:
        return []
    return [r.finding("Compute capabilities here: " + "; ".join(f"{cc}: {', '.join(v)}" for cc, v in sorted(ccs.items()))
                      + ". Builds are judged per GPU.")]
