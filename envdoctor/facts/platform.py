"""The platform a snapshot describes (or a command states as its target), in the one spelling each use needs.

Owns:
- `platform_key`: the matrices' platform key ("linux-x86_64", "linux-aarch64", "linux-ppc64le", "win-amd64",
  "win-arm64", "macos-arm64", "macos-x86_64"), from a snapshot (the interpreter's platform tag first, then the
  machine) or from a stated system and machine (`platform_key_of`).
- `marker_env` / `marker_env_for`: the one PEP 508 marker environment (python_full_version always X.Y.Z).
- `python_version` / `full_python`: the interpreter version as X.Y.Z.
- `distro_family` / `package_family`: which family a Linux distribution's os-release ID belongs to.
- `driver_os`: which driver table applies ("windows" under WSL 2 too, when asked).
Pure: reads snapshot fields only.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Optional, Union

from packaging.version import Version

from envdoctor.facts.versions import parse_version

if TYPE_CHECKING:
    from envdoctor.context import Context
    from envdoctor.snapshot import Snapshot

__all__ = [
    "distro_family", "driver_os", "full_python", "marker_env", "marker_env_for", "os_of", "package_family",
    "platform_key", "platform_key_of", "python_version",
]

Source = Union["Snapshot", "Context"]

# machine spellings (uname -m, platform.machine(), sysconfig tags) -> the matrices' arch name per OS
_ARCH = {
    "x86_64": "x86_64", "amd64": "x86_64", "x64": "x86_64",
    "aarch64": "aarch64", "arm64": "aarch64", "armv8l": "aarch64",
    "ppc64le": "ppc64le", "ppc64el": "ppc64le",
}
_OS_ARCH = {  # how each OS spells the arch in its key
    "linux": {"x86_64": "x86_64", "aarch64": "aarch64", "ppc64le": "ppc64le"},
    "windows": {"x86_64": "amd64", "aarch64": "arm64"},
    "macos": {"x86_64": "x86_64", "aarch64": "arm64"},
}
_OS_PREFIX = {"linux": "linux", "windows": "win", "macos": "macos"}


def _snap(source: Source) -> "Snapshot":
    inner = getattr(source, "snap", None)  # a rules Context: the snapshot it carries
    # duck-typed as it was: whatever carries no snapshot is taken for one
    return inner if inner is not None else source  # type: ignore[return-value]  # a Context always has .snap


def os_of(system: Optional[str]) -> str:
    """"linux" | "windows" | "macos" from platform.system()'s spelling ("Linux", "Windows", "Darwin")."""
    low = (system or "").strip().lower()
    if low.startswith("win"):
        return "windows"
    if low in ("darwin", "macos", "macosx"):
        return "macos"
    return "linux"


def platform_key_of(system: Optional[str], machine: Optional[str]) -> Optional[str]:
    """The platform key of an OS (platform.system() spelling) and a machine (uname -m / platform.machine()
    spelling); an empty machine means the usual one (x86_64); None for an arch no key names (i686, s390x)."""
    os_ = os_of(system)
    arch = _ARCH.get((machine or "x86_64").strip().lower())
    spelled = _OS_ARCH[os_].get(arch or "")
    return f"{_OS_PREFIX[os_]}-{spelled}" if spelled else None


def _from_tag(tag: str) -> Optional[str]:
    """The key of a sysconfig platform tag ("linux-x86_64", "win-amd64", "win-arm64", "macosx-11.0-arm64")."""
    low = tag.strip().lower()
    if low.startswith("linux-"):
        return platform_key_of("linux", low.split("-", 1)[1])
    if low.startswith("win-"):
        return platform_key_of("windows", low.split("-", 1)[1])
    if low.startswith(("macosx-", "macos-")):
        return platform_key_of("darwin", low.rsplit("-", 1)[1])  # universal2: no one arch, falls through
    return None


def platform_key(source: Source) -> Optional[str]:
    """The platform key of the inspected interpreter: its sysconfig tag when the snapshot has one (a 32-bit or
    emulated interpreter is what wheels are chosen for), else the OS and machine; None when no key fits."""
    snap = _snap(source)
    key = _from_tag(snap.python.platform_tag or "")
    if key is not None:
        return key
    return platform_key_of(snap.platform.system, snap.platform.machine)


def platform_of(snap: "Snapshot") -> Optional[str]:
    """The wheel platform of a stated target (gate's and ED690's): the snapshot's OS and machine only, and only the
    platforms the build tables list -- None for others and for a Linux snapshot that states no machine. Unlike
    platform_key it ignores the interpreter's tag and names no ppc64le / Windows ARM64 key (moved here from
    gate/plan.py so that ED690 need not import gate; folding it into platform_key would change those verdicts)."""
    system = (snap.platform.system or "").lower()
    arch = (snap.platform.machine or "").lower()
    if system == "linux":
        return "linux-aarch64" if arch in ("aarch64", "arm64") else ("linux-x86_64" if arch in ("x86_64", "amd64") else None)
    if system.startswith("win"):
        return "win-amd64" if arch in ("amd64", "x86_64", "") else None
    if system == "darwin":
        return "macos-arm64" if arch in ("arm64", "aarch64") else "macos-x86_64"
    return None


def driver_os(source: Source, wsl_is_windows: bool = False) -> str:
    """Which driver table applies: "windows" on Windows (and under WSL 2 when `wsl_is_windows`, whose GPU is the
    Windows driver's), else "linux"."""
    snap = _snap(source)
    if wsl_is_windows and snap.platform.wsl:
        return "windows"
    return "windows" if os_of(snap.platform.system) == "windows" else "linux"


def full_python(text: object) -> Optional[str]:
    """"3.13.0" for "3.13", "3.13.0", "3.13.0rc1", "3.13.0+"; None unless at least X.Y is there."""
    v = parse_version(str(text).rstrip("+") if text is not None else None)
    if v is None or len(v.release) < 2:
        return None
    rel = v.release + (0,)
    return f"{rel[0]}.{rel[1]}.{rel[2]}"


def python_version(source: Source) -> Optional[Version]:
    """The inspected interpreter's version as X.Y.Z (pre-release and local parts dropped); None when unknown."""
    full = full_python(_snap(source).python.version)
    return Version(full) if full else None


_SYS = {  # sys.platform, platform.system(), os.name
    "linux": ("linux", "Linux", "posix"),
    "windows": ("win32", "Windows", "nt"),
    "macos": ("darwin", "Darwin", "posix"),
}


def marker_env_for(system: Optional[str], machine: Optional[str], python: object,
                   implementation: str = "cpython") -> Dict[str, str]:
    """The PEP 508 marker environment of an interpreter: OS (platform.system() spelling), machine and Python
    ("3.12" or "3.12.4": python_full_version is always X.Y.Z)."""
    sys_platform, platform_system, os_name = _SYS[os_of(system)]
    full = full_python(python) or "3.0.0"
    impl = (implementation or "cpython").lower()
    return {
        "platform_system": platform_system,
        "sys_platform": sys_platform,
        "platform_machine": machine or "",
        "os_name": os_name,
        "python_version": ".".join(full.split(".")[:2]),
        "python_full_version": full,
        "implementation_name": impl,
        "platform_python_implementation": "CPython" if impl == "cpython" else ("PyPy" if impl == "pypy" else impl),
        "platform_release": "",
        "platform_version": "",
        "implementation_version": full,
    }


def marker_env(source: Source) -> Optional[Dict[str, str]]:
    """The marker environment of the inspected interpreter; None when the snapshot does not say its OS."""
    snap = _snap(source)
    if not (snap.platform.system or "").strip():
        return None
    return marker_env_for(snap.platform.system, snap.platform.machine, snap.python.version,
                          snap.python.implementation or "cpython")


# os-release IDs by family. `distro_family` is the distribution's own family (its driver installer differs:
# ubuntu-drivers, system76, RPM Fusion, EL's dnf module, mhwd); `package_family` the package manager behind it.
_FAMILIES = {
    "ubuntu": ("ubuntu", "linuxmint", "elementary", "zorin", "neon"),
    "pop": ("pop",),
    "debian": ("debian", "raspbian", "kali"),
    "fedora": ("fedora", "nobara"),
    "el": ("rhel", "centos", "rocky", "almalinux", "ol", "amzn", "scientific"),
    "suse": ("opensuse", "opensuse-leap", "opensuse-tumbleweed", "sles", "sled"),
    "arch": ("arch", "endeavouros"),
    "manjaro": ("manjaro",),
}
_PACKAGE_FAMILY = {"ubuntu": "debian", "pop": "debian", "debian": "debian", "fedora": "rpm", "el": "rpm",
                   "suse": "suse", "arch": "arch", "manjaro": "arch"}


def distro_family(distro_id: Optional[str]) -> str:
    """"ubuntu" | "pop" | "debian" | "fedora" | "el" | "suse" | "arch" | "manjaro" for an os-release ID; "" else."""
    d = (distro_id or "").strip().lower()
    for fam, ids in _FAMILIES.items():
        if d in ids:
            return fam
    return "suse" if d.startswith("opensuse") else ""


def package_family(distro_id: Optional[str]) -> str:
    """The package manager family: "debian" (dpkg/apt) | "rpm" (dnf) | "suse" (zypper) | "arch" (pacman; Manjaro
    too) | ""."""
    return _PACKAGE_FAMILY.get(distro_family(distro_id), "")
