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

REFERENCES = [
    "https://github.com/jax-ml/jax/issues/19004",
    "https://github.com/jax-ml/jax/issues/18032",
    "https://github.com/apple/axlearn/issues/858",
    "https://github.com/NVIDIA/cudnn-frontend/issues/211",
]


def majors_of(builds: Sequence[Tuple[str, Optional[int]]]) -> List[int]:
    """The distinct CUDA majors of (label, CUDA major) builds, lowest first (builds of unknown major left out)."""
    return sorted({mj for _, mj in builds if mj is not None})


def mixed_majors(builds: Sequence[Tuple[str, Optional[int]]]) -> Optional[str]:
    """Why (label, CUDA major) builds make a poor environment together, or None when they share one CUDA major."""
    majors = majors_of(builds)
    if len(majors) < 2:
        return None
    parts = [f"{label} uses CUDA {mj}" for label, mj in builds if mj is not None]
    return ("; ".join(parts) + ": one process that imports both loads one libcudnn.so.9 / libnccl.so.2 (the same "
            "soname in every CUDA major) for both, so the first import wins and the other framework can fail its "
            "CUDA start (\"DNN library initialization failed\") or fall back to the CPU; each works in a process "
            "that imports only it")
