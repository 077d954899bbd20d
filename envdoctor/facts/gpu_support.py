"""Does a driver branch drive a GPU, and does a cuDNN release still support it? One judgement, read by
check (envdoctor.rules.gpu_support), gate (which runs check's rules on its target) and lock
(envdoctor.lock.resolve), so the three cannot disagree.

The data: matrices/gpu_support.toml (first and last driver branch per GPU architecture) and
matrices/cudnn.toml (each cuDNN range's minimum compute capability per CUDA major).
"""
from __future__ import annotations

from typing import Any, Optional

from envdoctor.knowledge.tables import driver_branch, normalize_cc, parse_version
from envdoctor.records import dataclass

__all__ = ["GpuSupportProblem", "cudnn_cap_for_gpu", "cudnn_supports_gpu", "driver_supports_gpu"]


@dataclass(frozen=True)
class GpuSupportProblem:
    """Why the pair does not work: `key` ("driver-too-old" | "driver-too-new" | "cudnn-drops-gpu"), a one-line
    `message`, a `fix` sentence, and the data row it rests on."""

    key: str
    message: str
    fix: str
    row: Any


def _cc_key(cc: str):
    return tuple(int(x) for x in cc.split("."))


def driver_supports_gpu(matrices: Any, driver: Optional[str], cc: Optional[str]) -> Optional[GpuSupportProblem]:
    """None when driver `driver` (like "535.104.05") can drive a GPU of compute capability `cc`, or when
    the data cannot tell; otherwise the problem (branch older than the architecture's first, or newer than a
    retired architecture's last)."""
    branch, norm = driver_branch(driver), normalize_cc(cc)
    if branch is None or norm is None or matrices is None:
        return None
    row = matrices.driver_branch_support(norm)
    if row is None:
        return None
    what = f"{row.family} GPUs (compute capability {norm})"
    if row.branch_min is not None and branch < row.branch_min:
        since = f" (their first CUDA, {row.first_cuda}, came with it)" if row.first_cuda else ""
        return GpuSupportProblem(
            "driver-too-old",
            f"driver {driver} is branch R{branch}, which cannot drive {what}: they need R{row.branch_min} or "
            f"newer{since}",
            f"Install a driver of branch {row.span()}.", row)
    if row.branch_last is not None and branch > row.branch_last:
        return GpuSupportProblem(
            "driver-too-new",
            f"driver {driver} is branch R{branch}, which no longer drives {what}: R{row.branch_last} is their "
            "last branch",
            f"Install a driver of branch {row.span()} (R{row.branch_last} is the newest that drives them).", row)
    return None


def cudnn_supports_gpu(matrices: Any, cudnn_version: Optional[str], cc: Optional[str],
                       cuda_major: Optional[int]) -> Optional[GpuSupportProblem]:
    """None when cuDNN `cudnn_version` (its build for CUDA `cuda_major`; None: the release's general floor)
    supports a GPU of compute capability `cc`, or when the data cannot tell; otherwise the problem, with the
    newest cuDNN range that still supports the GPU as the fix."""
    norm = normalize_cc(cc)
    if norm is None or matrices is None or parse_version(cudnn_version) is None:
        return None
    row = matrices.cudnn_release(cudnn_version)
    if row is None:
        return None
    need = row.min_cc(cuda_major)
    if _cc_key(need) <= _cc_key(norm):
        return None
    build = f" (its CUDA {cuda_major} build)" if cuda_major is not None else ""
    older = [r for r in matrices.cudnn_releases
             if (cuda_major is None or cuda_major in r.cuda_majors) and _cc_key(r.min_cc(cuda_major)) <= _cc_key(norm)]
    fix = (f"Use cuDNN {older[-1].label} ({older[-1].versions}) or older, the newest that supports compute capability "
           f"{norm}." if older else f"No cuDNN in the data supports compute capability {norm} for CUDA {cuda_major}.")
    return GpuSupportProblem(
        "cudnn-drops-gpu",
        f"cuDNN {cudnn_version}{build} needs compute capability >= {need} (cuDNN {row.label}); "
        f"a GPU of compute capability {norm} is not supported",
        fix, row)


def cudnn_cap_for_gpu(matrices: Any, cc: Optional[str], cuda_major: Optional[int]) -> Optional[str]:
    """The upper bound (like "<9.17") below which every cuDNN release of CUDA `cuda_major` still supports `cc`;
    None when none of the data's releases drops it, or none supports it (then no cap helps)."""
    norm = normalize_cc(cc)
    if norm is None or matrices is None:
        return None
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    lows, fits = [], False
    for r in matrices.cudnn_releases:
        if cuda_major is not None and cuda_major not in r.cuda_majors:
            continue
        if _cc_key(r.min_cc(cuda_major)) > _cc_key(norm):
            lows += [Version(s.version) for s in SpecifierSet(r.versions) if s.operator in (">=", "==", "~=")]
        else:
            fits = True
    # no cap when no release of this CUDA major supports the GPU (CUDA 13 and Pascal): no pin helps there
    return f"<{min(lows)}" if lows and fits else None
