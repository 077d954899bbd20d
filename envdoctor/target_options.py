"""What the options that state a target machine mean, defined once for every command that takes one (no click:
the options themselves are envdoctor.cli_options.target_options).

One vocabulary (docs/target.md): ``--python PATH`` (an interpreter whose environment is the target),
``--python-version X.Y``, ``--platform``, ``--driver VER``, ``--gpu sm_XX|NAME`` (repeatable) and
``--cuda X.Y``. ``lock`` and ``gate`` take them all; ``probe`` and ``check`` take ``--python PATH``.

Module-level imports stay light: this module is imported at every start of ``envdoctor`` (packaging's
version parser only when a driver branch is resolved: start-up speed).
"""
from __future__ import annotations

import re
import sys
from typing import Any, List, Optional, Tuple

from envdoctor.errors import BadInput
from envdoctor.facts.platform import STATED_PLATFORMS, driver_os_of, platform_facts

PLATFORM_CHOICES = STATED_PLATFORMS  # --platform's choices (envdoctor.facts.platform owns the keys)
_PY_VERSION = re.compile(r"^\s*3\.\d{1,2}(\.\d+)?\s*$")
_DRIVER = re.compile(r"^\s*\d{3,4}(\.\d{1,3}){0,2}\s*$")


def note(message: str) -> None:
    """A note for the user on stderr (what a shortened option value was taken as)."""
    sys.stderr.write(f"envdoctor: note: {message}\n")


def python_series(version: str) -> str:
    """A Python version as its X.Y series, as written ("3.11.7" -> "3.11", "3.13" -> "3.13"): the one truncation
    every target option and lock uses."""
    return ".".join(str(version).strip().split(".")[:2])


def python_target(python_opt: Optional[str], python_version: Optional[str]) -> Tuple[Optional[str], Optional[str]]:
    """(interpreter path, X.Y) from --python / --python-version; ``--python 3.X`` still works, with a warning."""
    path, version = python_opt, None
    deprecated = python_opt if python_opt and _PY_VERSION.match(python_opt) else None  # `--python 3.X`
    if deprecated is not None:
        path, version = None, python_series(deprecated)
    if python_version is not None:
        if not _PY_VERSION.match(python_version):
            raise BadInput(f"--python-version {python_version!r} is not a Python version (e.g. 3.11)")
        if version and version != python_series(python_version):
            raise BadInput(f"--python {python_opt} and --python-version {python_version} disagree")
        version = python_series(python_version)
    if deprecated is not None:  # after the checks: bad input stays one line
        sys.stderr.write(f"envdoctor: warning: --python {deprecated.strip()} is deprecated for a version; "
                         f"use --python-version {version}\n")
    return path, version


# The glibc a stated Linux target is taken to have without --glibc: 2.35 is Ubuntu 22.04's, the oldest Linux the
# CUDA wheels' users commonly still run; manylinux_2_28 alone would refuse wheels built for 2.31 / 2.34.
GLIBC_DEFAULT = "2.35"
_GLIBC = re.compile(r"^\s*2\.\d{1,2}\s*$")


def check_glibc(text: Optional[str], platform: Optional[str]) -> Optional[str]:
    """--glibc X.Y validated; an error for a target that has no glibc (Windows, macOS)."""
    if text is None:
        return None
    if not _GLIBC.match(text):
        raise BadInput(f"--glibc {text!r} is not a glibc version (e.g. 2.35)")
    facts = platform_facts(platform)
    if facts is not None and facts.system != "Linux":
        raise BadInput(f"--glibc applies to Linux targets; --platform {platform} has no glibc")
    return text.strip()


def driver_os(platform: Optional[str]) -> str:
    """Whose driver numbering a target uses: WSL2 runs the Windows driver."""
    return driver_os_of(platform)


def known_drivers(m: Any, os_: str = "linux") -> List[str]:
    """Every driver version the data names for os_: toolkit, bundled and minor-version-compatibility drivers."""
    out: List[Optional[str]] = []
    for r in m.cuda_releases:
        out += [r.driver(os_), getattr(r, f"bundled_driver_{os_}", None)]
    out += [row.floor(os_) for row in m.mvc.values()]
    return [v for v in out if v]


def resolve_driver(m: Any, text: Optional[str], os_: str = "linux") -> Optional[str]:
    """--driver VER as a full version: a branch (580) or a branch and minor (580.65) is that branch's first
    release the data knows (580.65.06), said on stderr. A full version, or one the data has no release
    of, is taken as given."""
    from packaging.version import Version

    if text is None:
        return None
    value = text.strip()
    if not _DRIVER.match(value):
        raise BadInput(f"--driver {text!r} is not a driver version (e.g. 535.104.05, or a branch: 580)")
    given = tuple(int(p) for p in value.split("."))
    if len(given) >= 3:
        return value
    cands = sorted({v for v in known_drivers(m, os_) if tuple(Version(v).release[:len(given)]) == given},
                   key=Version)
    full = [v for v in cands if len(Version(v).release) > len(given)] or cands
    if not full or full[0] == value:
        return value
    note(f"--driver {value} taken as {full[0]}, the first release of {value} the compatibility data knows "
         f"(give the full version if yours is newer)")
    return full[0]


def check_cuda(m: Any, cuda: Optional[str]) -> Optional[str]:
    """--cuda X.Y (or a major, 12) validated against the data's CUDA lines."""
    if cuda is None:
        return None
    value = cuda.strip()
    series = m.cuda_series()
    if not re.match(r"^\d{1,2}(\.\d{1,2})?$", value) or (
            "." in value and value not in series) or ("." not in value and not any(s.split(".")[0] == value
                                                                                   for s in series)):
        raise BadInput(f"--cuda {cuda!r}: not a CUDA line the data knows ({', '.join(series)})")
    return value


# --gpu as an architecture: sm_86, compute_90a, 8.6
CC_TEXT = re.compile(r"^\s*(?:(?:sm|compute)_\d{2,3}[af]?|\d{1,2}\.\d)\s*$", re.IGNORECASE)


def resolve_gpu(matrices: Any, text: str) -> Tuple[str, str]:
    """(name, compute capability) of ``--gpu sm_80 | 8.0 | "NVIDIA A100-SXM4-80GB"``, for every command that states a
    target; ValueError naming the nearest GPU names the data knows and the architectures it knows."""
    from envdoctor.knowledge import normalize_cc

    value = str(text or "").strip()
    known = ", ".join("sm_" + k.replace(".", "") for k in sorted(
        getattr(matrices, "archs", {}) or {}, key=lambda c: tuple(int(x) for x in c.split("."))))
    if CC_TEXT.match(value):
        cc = normalize_cc(value)
        arch = matrices.arch(cc) if (cc is not None and matrices is not None) else None
        if cc is None or arch is None:
            raise ValueError(f"unknown GPU architecture {value!r}; the data knows {known}")
        return f"{arch.name} GPU (sm_{cc.replace('.', '')})", cc
    cc = matrices.cc_for_gpu_name(value) if (matrices is not None and value) else None
    if cc is None:
        near = matrices.nearest_gpu_names(value) if (matrices is not None and value) else []
        hint = f"did you mean {' or '.join(repr(x) for x in near)}? Or " if near else ""
        raise ValueError(f"unknown GPU {value!r}: neither a GPU name the data knows nor an architecture; "
                         f"{hint}name its architecture instead ({known})")
    return value, cc
