"""``envdoctor lock``: pinned requirements-cuda.txt / environment.yml that fit a machine or a stated target.

The pure API (reused by ``gate`` / ``onboard``)::

    from envdoctor.lock import Constraints, FrameworkRequest, GpuTarget, resolve
    result = resolve(Constraints(cuda="12.1", gpus=[GpuTarget("8.6")], python="3.11"), load_matrices())

Exports are loaded lazily so that registering the command stays cheap.
"""
from __future__ import annotations

from typing import Any

_EXPORTS = {
    "Candidate": "resolve", "Clash": "resolve", "Constraints": "resolve", "FrameworkRequest": "resolve",
    "GpuTarget": "resolve", "Lock": "resolve", "LockResult": "resolve", "Relaxation": "resolve",
    "SharedPin": "resolve", "resolve": "resolve", "validate": "resolve",
    "render": "render", "render_clash": "render", "parse_lock": "render", "check_lock": "render",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'envdoctor.lock' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"envdoctor.lock.{mod}"), name)

# envdoctor.lock(...) is the Python API's lock() (envdoctor.api): the package answers a call as the function
from envdoctor.packages import call_as  # noqa: E402

call_as(__name__)
