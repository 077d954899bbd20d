"""The platform a snapshot describes (or a command states as its target), in the one spelling each use needs.

Owns:
- the platform keys and what each says of its target (`platform_facts`: platform.system() and platform.machine()
  spellings, WSL, the sysconfig tag, the wheel tags it installs and uv's name for it; `BUILD_PLATFORMS`,
  `STATED_PLATFORMS`, `TABLE_PLATFORMS`: which keys the build tables, --platform and the matrices use), which key a
  wheel's platform tag installs on (`wheel_tag_platform` / `wheel_tag_fits`), and the manylinux tag of a glibc;
- `platform_key`: the matrices' platform key ("linux-x86_64", "linux-aarch64", "linux-ppc64le", "win-amd64",
  "win-arm64", "macos-arm64", "macos-x86_64"), from a snapshot (the interpreter's platform tag first, then the
  machine) or from a stated system and machine (`platform_key_of`).
- `marker_env` / `marker_env_for`: the one PEP 508 marker environment (python_full_version always X.Y.Z).
- `python_version` / `full_python`: the interpreter version as X.Y.Z.
- `distro_family` / `package_family`: which family a Linux distribution's os-release ID belongs to.
- `platform_of` / `build_platform`: the key of a stated target (gate's, ED690's) and of the machine lock and onboard
  build for.
- `driver_os` / `driver_os_of`: which driver table applies ("windows" under WSL 2 too, when asked).
Pure: reads snapshot fields only. Light to import (no packaging until a version is read): envdoctor.target_options,
imported at every start, takes its --platform choices from here.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Dict, NamedTuple, Optional, Tuple, Union

from envdoctor.lazyre import lazy_re

if TYPE_CHECKING:
    from packaging.version import Version

    from envdoctor.context import Context
    from envdoctor.snapshot import Snapshot

__all__ = [
    "BUILD_PLATFORMS", "PlatformFacts", "STATED_PLATFORMS", "TABLE_PLATFORMS", "build_platform", "distro_family",
    "driver_os", "driver_os_of", "full_python", "manylinux_tag", "marker_env", "marker_env_for", "os_of",
    "package_family", "platform_facts", "platform_key", "platform_key_of", "platform_of", "python_version",
    "uv_python_platform", "wheel_tag_fits", "wheel_tag_platform",
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


class PlatformFacts(NamedTuple):
    """What a platform key says of its target."""

    key: str
    system: str  # platform.system(): "Linux" | "Windows" | "Darwin"
    machine: str  # platform.machine() (the marker environment's platform_machine)
    wsl: Optional[int]  # 2 under WSL 2 (Linux wheels, the Windows driver)
    tag: str  # the interpreter's sysconfig platform tag
    wheel_os: str  # how a wheel's platform tag starts: "linux" (manylinux, musllinux too), "win", "macosx"
    wheel_arch: str  # how it ends
    uv: str  # uv's --python-platform; on Linux "{manylinux}" stands for the glibc's manylinux tag (2_28)


_FACTS = {f.key: f for f in (
    PlatformFacts("linux-x86_64", "Linux", "x86_64", None, "linux-x86_64", "linux", "x86_64",
                  "x86_64-manylinux_{manylinux}"),
    PlatformFacts("linux-aarch64", "Linux", "aarch64", None, "linux-aarch64", "linux", "aarch64",
                  "aarch64-manylinux_{manylinux}"),
    PlatformFacts("win-amd64", "Windows", "AMD64", None, "win-amd64", "win", "amd64", "x86_64-pc-windows-msvc"),
    PlatformFacts("macos-arm64", "Darwin", "arm64", None, "macosx-11.0-arm64", "macosx", "arm64", "aarch64-apple-darwin"),
    PlatformFacts("macos-x86_64", "Darwin", "x86_64", None, "macosx-10.9-x86_64", "macosx", "x86_64",
                  "x86_64-apple-darwin"),
    PlatformFacts("wsl2", "Linux", "x86_64", 2, "linux-x86_64", "linux", "x86_64", "x86_64-manylinux_{manylinux}"),
)}
# the keys the framework build tables list (a build is published for each or not)
BUILD_PLATFORMS: Tuple[str, ...] = ("linux-x86_64", "linux-aarch64", "win-amd64", "macos-arm64")
# what --platform may name: a build platform, or WSL 2 (Linux wheels on the Windows driver)
STATED_PLATFORMS: Tuple[str, ...] = BUILD_PLATFORMS + ("wsl2",)
# every key the matrices may use
TABLE_PLATFORMS: Tuple[str, ...] = tuple(_FACTS)


def platform_facts(key: Optional[str]) -> Optional[PlatformFacts]:
    """What a platform key says of its target; None for a key none of the tables uses."""
    return _FACTS.get(key or "")


def driver_os_of(key: Optional[str], wsl: bool = False) -> str:
    """Whose driver numbering a target of this key uses: "windows" on Windows and under WSL 2, else "linux"."""
    facts = platform_facts(key)
    return "windows" if wsl or (facts is not None and (facts.system == "Windows" or bool(facts.wsl))) else "linux"


def wheel_tag_fits(tag: str, key: Optional[str]) -> bool:
    """Does a wheel's platform tag ("manylinux_2_28_x86_64", "win_amd64", "macosx_11_0_arm64") install on the
    platform of this key? A pure wheel ("any") does everywhere."""
    facts = platform_facts(key)
    if tag == "any":
        return True
    if facts is None or not tag.endswith("_" + facts.wheel_arch):
        return False
    starts = ("linux", "manylinux", "musllinux") if facts.wheel_os == "linux" else (facts.wheel_os,)
    return tag.startswith(starts)


def wheel_tag_platform(tag: str) -> Optional[str]:
    """The build platform a wheel's platform tag installs on; None for a pure wheel and for other platforms."""
    return next((key for key in BUILD_PLATFORMS if tag != "any" and wheel_tag_fits(tag, key)), None)


MANYLINUX_DEFAULT = "2_28"  # stated targets: the glibc of the manylinux_2_28 wheels torch and jaxlib publish
_UV_MANYLINUX = {f"2_{n}" for n in (17, 28, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40)}  # the tags uv names
_GLIBC = lazy_re(r"^(\d+)\.(\d+)")


def manylinux_tag(glibc: str) -> str:
    """The manylinux tag ("2_35") of a target's glibc ("2.35"): the newest tag uv names at or below it; the default
    (MANYLINUX_DEFAULT) when the glibc is unknown or older than any."""
    mm = _GLIBC.match(glibc or "")
    tag = f"{mm.group(1)}_{mm.group(2)}" if mm else MANYLINUX_DEFAULT
    if tag in _UV_MANYLINUX:
        return tag
    known = sorted(_UV_MANYLINUX, key=lambda t: int(t.split("_")[1]))
    lower = [t for t in known if int(t.split("_")[1]) <= int(tag.split("_")[1])] if mm else []
    return lower[-1] if lower else MANYLINUX_DEFAULT


def uv_python_platform(key: Optional[str], glibc: str = "") -> Optional[str]:
    """uv's --python-platform for the target of a key (Linux: with the manylinux tag of its glibc); None for a key
    no table uses."""
    facts = platform_facts(key)
    return facts.uv.format(manylinux=manylinux_tag(glibc)) if facts is not None else None



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


def build_platform(source: Source) -> Tuple[Optional[str], bool]:
    """(platform key, wsl) of the machine lock and onboard build for: the inspected interpreter's key when the build
    tables list it (None else), and whether it runs Linux wheels under WSL 2."""
    key = platform_key(source)
    wsl = bool(_snap(source).platform.wsl) and bool(key and key.startswith("linux-"))
    return (key if key in BUILD_PLATFORMS else None), wsl


def driver_os(source: Source, wsl_is_windows: bool = False) -> str:
    """Which driver table applies: "windows" on Windows (and under WSL 2 when `wsl_is_windows`, whose GPU is the
    Windows driver's), else "linux"."""
    snap = _snap(source)
    if wsl_is_windows and snap.platform.wsl:
        return "windows"
    return "windows" if os_of(snap.platform.system) == "windows" else "linux"


def full_python(text: object) -> Optional[str]:
    """"3.13.0" for "3.13", "3.13.0", "3.13.0rc1", "3.13.0+"; None unless at least X.Y is there."""
    from envdoctor.facts.versions import parse_version  # packaging: only once a version is read

    v = parse_version(str(text).rstrip("+") if text is not None else None)
    if v is None or len(v.release) < 2:
        return None
    rel = v.release + (0,)
    return f"{rel[0]}.{rel[1]}.{rel[2]}"


def python_version(source: Source) -> Optional[Version]:
    """The inspected interpreter's version as X.Y.Z (pre-release and local parts dropped); None when unknown."""
    from packaging.version import Version

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
