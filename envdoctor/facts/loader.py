"""What the dynamic loader and the driver's layers show about libcuda, WSL 2 and a driver that cannot be used.

Owns: `DRIVER_CAUSE` (the cause key every "the NVIDIA driver cannot be used" finding shares, so check folds
them and onboard stops on them), `wsl2`, `under_wsl_lib` (a path the Windows driver maps into WSL 2),
`libcuda_resolution` (libcuda.so.1 candidates in the loader's order), `driver_messages` and `is_mismatch`
(a "Driver/library version mismatch" in any layer), `reachable` (would the loader find a cuDNN library by
name) and `userspace_driver` (the release of the user-space libraries,
where a layer told it).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional

from envdoctor.lazyre import lazy_re

if TYPE_CHECKING:
    from envdoctor.snapshot import Cudnn, Library, Snapshot

__all__ = [
    "DRIVER_CAUSE", "MISMATCH_TEXT", "driver_messages", "is_mismatch", "libcuda_resolution", "reachable",
    "under_wsl_lib", "userspace_driver", "wsl2",
]

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


# "nvidia-smi's NVML library says 580.178" / "NVML says 550.107.02" (the probe's disagreements) and
# "NVML library version: 550.107" (nvidia-smi's own mismatch message): the user-space side of a mismatch
_USERSPACE_RES = (lazy_re(r"(?:NVML library|NVML) says (\d+\.\d+(?:\.\d+)?)"),
                  lazy_re(r"NVML library version:\s*(\d+\.\d+(?:\.\d+)?)"))


def userspace_driver(snap: "Snapshot") -> Optional[str]:
    """The user-space driver release (libnvidia-ml): the first release a layer's message or disagreement names
    that is not the kernel module's; else the driver version NVML / nvidia-smi (the user-space side) reported, or
    one that differs from the kernel module's; None when nothing tells."""
    d = snap.driver
    kernel = d.kernel_module_version
    for text in list(d.disagreements) + list(d.messages):
        for pattern in _USERSPACE_RES:
            m = pattern.search(text)
            if m and m.group(1) != kernel:
                return m.group(1)
    if d.version and (d.source in ("nvml", "nvidia-smi") or (kernel and d.version != kernel)):
        return d.version
    return None


_TRUSTED_DIRS = ("/lib", "/usr/lib", "/lib64", "/usr/lib64", "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
                 "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib/sbsa-linux",
                 "/usr/lib/powerpc64le-linux-gnu")


def reachable(snap: "Snapshot", c: "Cudnn") -> bool:
    """Would the dynamic loader find this library by name: LD_LIBRARY_PATH, the ldconfig cache, a trusted dir,
    or the conda env's lib directory of a conda interpreter?"""
    if c.kind == "wheel":
        return True
    if c.kind != "library" or not c.path:
        return False
    for e in c.evidence:
        if e.source.startswith("env:LD_LIBRARY_PATH") or e.source.startswith("cmd:ldconfig"):
            return True
    d = c.path.rsplit("/", 1)[0] if "/" in c.path else ""
    if d in _TRUSTED_DIRS or d in (snap.loader.ld_library_path or []):
        return True
    for lib in snap.loader.libraries:
        if lib.name == "libcudnn" and (lib.path == c.path or lib.path.rsplit("/", 1)[0] == d):
            return True
    prefix = snap.python.prefix or ""
    return bool(snap.python.kind == "conda" and prefix and d == prefix.rstrip("/") + "/lib")
