"""The one registry of frameworks: ``SPECS`` (name -> spec, in lock's order), ``get(name)``, ``names()``.

Adding a framework is one module with a ``SPEC`` and one line here."""
from __future__ import annotations

from typing import Dict, Optional, Tuple

from envdoctor.frameworks import cupy, jax, onnxruntime, paddle, tensorflow, torch
from envdoctor.frameworks.base import FrameworkSpec

SPECS: Dict[str, FrameworkSpec] = {s.name: s for s in (torch.SPEC, tensorflow.SPEC, jax.SPEC, cupy.SPEC,
                                                    onnxruntime.SPEC, paddle.SPEC)}


def get(name: str) -> FrameworkSpec:
    """The spec named ``name``; KeyError for an unknown one."""
    return SPECS[name]


def find(name: str) -> Optional[FrameworkSpec]:
    return SPECS.get(name)


def names(lockable: bool = False) -> Tuple[str, ...]:
    """Every framework's name; ``lockable``: only those whose candidates the matrices can list (lock's choices)."""
    return tuple(n for n, s in SPECS.items() if s.lockable or not lockable)


def spec_of_distribution(distribution: str) -> Optional[FrameworkSpec]:
    """The framework that owns a distribution name (``tensorflow-cpu`` -> tensorflow), or None."""
    for s in SPECS.values():
        if s.classify(distribution) is not None:
            return s
    return None
