"""What the dynamic loader and the driver's layers show about libcuda, WSL 2 and a driver that cannot be used.

Owns: `DRIVER_CAUSE` (the cause key every "the NVIDIA driver cannot be used" finding shares, so check folds
them and onboard stops on them), `wsl2`, `under_wsl_lib` (a path the Windows driver maps into WSL 2),
`libcuda_resolution` (libcuda.so.1 candidates in the loader's order), `driver_messages` and `is_mismatch`
(a "Driver/library version mismatch" in any layer).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, List

if TYPE_CHECKING:
    from envdoctor.snapshot import Library, Snapshot

__all__ = ["DRIVER_CAUSE", "MISMATCH_TEXT", "driver_messages", "is_mismatch", "libcuda_resolution", "under_wsl_lib", "wsl2"]

DRIVER_CAUSE = "nvidia-driver-unusable"  # shared by every "the driver cannot be used" finding
MISMATCH_TEXT = "driver/library version mismatch"
_LOADER_ORDER = {"LD_PRELOAD": 0, "LD_LIBRARY_PATH": 1, "ldconfig": 2}


def wsl2(snap: "Snapshot") -> bool:
    return snap.platform.wsl == 2


def under_wsl_lib(path: str) -> bool:
    """Is this a library the Windows driver maps into WSL 2 (/usr/lib/wsl/...)?"""
    return path.startswith("/usr/lib/wsl/")


def libcuda_resolution(snap: "Snapshot") -> List["Library"]:
    """libcuda.so.1 candidates in the order the dynamic loader tries them (LD_PRELOAD, LD_LIBRARY_PATH, cache)."""
    libs = [lib for lib in snap.loader.libraries
            if lib.name == "libcuda" and lib.version and lib.via in _LOADER_ORDER and "/stubs/" not in lib.path]
    return sorted(libs, key=lambda lib: _LOADER_ORDER[lib.via])  # stable: keeps the probe's order within one way


def driver_messages(snap: "Snapshot", *needles: str) -> List[str]:
    """The driver layers' messages (stripped), those containing any of `needles` (case-insensitive) when given."""
    out = []
    for m in snap.driver.messages:
        if not needles or any(n.lower() in m.lower() for n in needles):
            out.append(m.strip())
    return out


def is_mismatch(snap: "Snapshot") -> bool:
    """A kernel module and user-space libraries of different driver versions, as any layer reports it."""
    d = snap.driver
    return (d.state == "version_mismatch" or d.nvml == "mismatch" or d.nvidia_smi == "mismatch"
            or bool(driver_messages(snap, MISMATCH_TEXT)))
