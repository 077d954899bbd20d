"""The one registry of frameworks: ``SPECS`` (name -> spec, in lock's order), ``get(name)``, ``names()``.

A framework of envdoctor's own is one module of this package with a ``SPEC`` and one line below.  A framework
that lives outside envdoctor is named by the environment variable ``ENVDOCTOR_FRAMEWORKS``: ``module:ATTR``
entries separated by commas (``myfw.spec:SPEC``), each an importable module's spec; a table-backed spec
(:class:`~envdoctor.frameworks.table_spec.TableSpec`) without a ``matrices_dir`` reads its table from its module's
own folder.  An environment variable rather than an entry-point group: reading it costs nothing when it is
unset, where scanning every installed distribution's entry points would cost each ``check`` its start-up time.
"""
from __future__ import annotations

import importlib
import os
from typing import Dict, Optional, Tuple

from envdoctor.errors import BadInput
from envdoctor.frameworks import cupy, jax, onnxruntime, paddle, tensorflow, torch
from envdoctor.frameworks.base import FrameworkSpec

ENV_VAR = "ENVDOCTOR_FRAMEWORKS"

SPECS: Dict[str, FrameworkSpec] = {s.name: s for s in (torch.SPEC, tensorflow.SPEC, jax.SPEC, cupy.SPEC,
                                                    onnxruntime.SPEC, paddle.SPEC)}


def _external(entry: str) -> FrameworkSpec:
    """The spec ``entry`` ("module:ATTR") names, or BadInput saying why it cannot be used."""
    module_name, sep, attr = entry.partition(":")
    if not sep or not module_name or not attr:
        raise BadInput(f"{ENV_VAR}: {entry!r} is not 'module:ATTR'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise BadInput(f"{ENV_VAR}: cannot import {module_name} ({exc})") from None
    spec = getattr(module, attr, None)
    if not isinstance(spec, FrameworkSpec) or not spec.name:
        raise BadInput(f"{ENV_VAR}: {entry} is not a named framework spec (a FrameworkSpec instance)")
    if spec.name in SPECS:
        raise BadInput(f"{ENV_VAR}: {entry} names {spec.name!r}, a framework envdoctor already has")
    if hasattr(spec, "matrices_dir") and getattr(spec, "matrices_dir") is None and getattr(module, "__file__", None):
        spec.matrices_dir = os.path.dirname(os.path.abspath(str(module.__file__)))
    return spec


def _register_external(value: str) -> None:
    for entry in (e.strip() for e in value.split(",")):
        if entry:
            spec = _external(entry)
            SPECS[spec.name] = spec


_register_external(os.environ.get(ENV_VAR, ""))


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
