"""Frameworks of different CUDA majors in one environment: the one judgement lock, gate and check share.

pip installs both majors' libraries side by side (nvidia-cudnn-cu12 and nvidia-cudnn-cu13 are different
distributions), and a process that imports only one of the frameworks loads only that framework's libraries. What
breaks is a process that imports both: cuDNN 9 is ``libcudnn.so.9`` and NCCL is ``libnccl.so.2`` in either CUDA
major, and the loader keeps one library per soname, so the first import's copy serves both frameworks ("the first
one to load it wins"); the other then fails its CUDA start (``DNN library initialization failed``, a cuDNN /
CUDA version check, or a silent CPU fallback).  That is a warning, not an error: the environment works as long as
each process imports one of them.  Reports: jax-ml/jax#19004, jax-ml/jax#18032, apple/axlearn#858,
NVIDIA/cudnn-frontend#211 (URLs in REFERENCES).
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from envdoctor.facts.libraries import FAMILIES
from envdoctor.facts.versions import parse_version

REFERENCES = [
    "https://github.com/jax-ml/jax/issues/19004",
    "https://github.com/jax-ml/jax/issues/18032",
    "https://github.com/apple/axlearn/issues/858",
    "https://github.com/NVIDIA/cudnn-frontend/issues/211",
]


# (label, CUDA major, cuDNN version): one framework's CUDA build, as lock (a Candidate) or check (a CudaBuild) knows it
Build = Tuple[str, Optional[int], Optional[str]]


def majors_of(builds: Sequence[Build]) -> List[int]:
    """The distinct CUDA majors of the builds, lowest first (builds of unknown major left out)."""
    return sorted({b[1] for b in builds if b[1] is not None})


def shared_sonames(builds: Sequence[Build]) -> List[str]:
    """The libraries both sides ask for by one soname: NCCL's fixed one (facts/libraries.py's table), and cuDNN's
    when every build names a cuDNN of one major."""
    names = [f"{f.lib}.so.{f.fixed_major}" for f in FAMILIES.values() if f.fixed_major is not None and f.wheel]
    cudnn = {str(v.major) for v in (parse_version(b[2]) for b in builds if b[1] is not None and b[2]) if v is not None}
    known = all(b[2] for b in builds if b[1] is not None)
    lib = FAMILIES["cudnn"].lib
    if known and len(cudnn) == 1:
        names.insert(0, f"{lib}.so.{cudnn.pop()}")
    elif not known and len(cudnn) <= 1:  # a build that does not name its cuDNN may bring the same major
        names.append(f"{lib}.so.N where both bring one cuDNN major")
    return names


def mixed_majors(builds: Sequence[Build]) -> Optional[str]:
    """Why the builds make a poor environment together, or None when they share one CUDA major."""
    if len(majors_of(builds)) < 2:
        return None
    parts = [f"{label} uses CUDA {mj}" for label, mj, _ in builds if mj is not None]
    return ("; ".join(parts) + ": a process that imports both loads one copy of " + ", ".join(shared_sonames(builds))
            + " (the soname is the same in every CUDA major) for both, so the first import wins and the other can fail "
            "its CUDA start (\"DNN library initialization failed\") or fall back to the CPU; each works in a process "
            "that imports only it")
