"""CUDA toolkit version sources: version.json, version.txt, cuda.h, `nvcc --version`, dist-info names.

Pure functions: text in, typed values out. Garbage returns None; the contract is in
envdoctor/parsers/__init__.py (ParseError only for oversized input).

- version.json (CUDA 11.1+): ``{"cuda": {"name": "CUDA SDK", "version": "12.4.1"}, "cuda_nvcc": {...}}``.
  Some releases stamp a date as the third field ("11.8.20220929"); that is reported as
  "11.8" (see `sdk_version`), the date is not a patch level.
- version.txt (CUDA <= 11.0): ``CUDA Version 11.0.207``.
- include/cuda.h: ``#define CUDA_VERSION 12040`` -> "12.4" (major*1000 + minor*10).
- nvcc: ``Cuda compilation tools, release 13.0, V13.0.88`` -> "13.0.88".
- wheel metadata dirs: ``nvidia_cuda_nvcc-13.0.88.dist-info`` -> ("nvidia-cuda-nvcc", "13.0.88").
"""
from __future__ import annotations

import json
import re
from typing import Dict, Optional, Tuple

from envdoctor.parsers import NUM, NUM_END, checked_text
from envdoctor.lazyre import lazy_re
from envdoctor.records import dataclass, field

_VERSION = rf"{NUM}(?:\.{NUM}){{1,3}}"
_VERSION_RE = lazy_re(rf"^{_VERSION}$", re.ASCII)


def _clean_version(value: object) -> Optional[str]:
    if not isinstance(value, str):
        return None
    value = value.strip()
    return value if _VERSION_RE.match(value) else None


def _is_date_stamp(part: str) -> bool:
    return len(part) >= 8 and part.isdigit()


def sdk_version(raw: Optional[str]) -> Optional[str]:
    """Normalise a version.json SDK version: "11.8.20220929" -> "11.8", "12.4.1" stays."""
    v = _clean_version(raw)
    if v is None:
        return None
    parts = v.split(".")
    if len(parts) >= 3 and _is_date_stamp(parts[2]):
        return ".".join(parts[:2])
    return v


@dataclass
class VersionJson:
    sdk: Optional[str] = None  # normalised "cuda" entry ("12.8.2", or "11.8" for a date-stamped one)
    sdk_raw: Optional[str] = None  # as written ("11.8.20220929")
    components: Dict[str, str] = field(default_factory=dict)  # "cuda_nvcc" -> "12.8.93"

    @property
    def nvcc(self) -> Optional[str]:
        return self.components.get("cuda_nvcc")

    @property
    def cudart(self) -> Optional[str]:
        return self.components.get("cuda_cudart")


def parse_version_json(text: Optional[str]) -> Optional[VersionJson]:
    text = checked_text(text)
    if text is None:
        return None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    out = VersionJson()
    for key, entry in data.items():
        if not isinstance(entry, dict):
            continue
        v = _clean_version(entry.get("version"))
        if v is not None:
            out.components[str(key)] = v
    cuda = data.get("cuda")
    if isinstance(cuda, dict):
        out.sdk_raw = _clean_version(cuda.get("version"))
        out.sdk = sdk_version(out.sdk_raw)
    if out.sdk is None and not out.components:
        return None
    return out


_VERSION_TXT_RE = lazy_re(rf"CUDA\s+Version\s+({_VERSION}){NUM_END}", re.ASCII)


def parse_version_txt(text: Optional[str]) -> Optional[str]:
    text = checked_text(text)
    if text is None:
        return None
    m = _VERSION_TXT_RE.search(text)
    return m.group(1) if m else None


_CUDA_H_RE = lazy_re(r"^[ \t]*#[ \t]*define[ \t]+CUDA_VERSION[ \t]+([0-9]{4,6})\b", re.MULTILINE | re.ASCII)


def parse_cuda_h(text: Optional[str]) -> Optional[str]:
    """`#define CUDA_VERSION 12040` -> "12.4"."""
    text = checked_text(text)
    if text is None:
        return None
    m = _CUDA_H_RE.search(text)
    if not m:
        return None
    n = int(m.group(1))
    major, minor = n // 1000, (n % 1000) // 10
    if major <= 0:
        return None
    return f"{major}.{minor}"


@dataclass
class NvccVersion:
    release: str  # "13.0"
    version: str  # "13.0.88" (the V... part), or the release when nvcc printed none


_NVCC_RE = lazy_re(rf"Cuda compilation tools,\s*release\s+({NUM}\.{NUM}){NUM_END}(?:,\s*V({_VERSION}){NUM_END})?", re.ASCII)


def parse_nvcc_version(text: Optional[str]) -> Optional[NvccVersion]:
    text = checked_text(text)
    if text is None:
        return None
    m = _NVCC_RE.search(text)
    if not m:
        return None
    release = m.group(1)
    return NvccVersion(release=release, version=m.group(2) or release)


_DIST_INFO_RE = lazy_re(rf"^([A-Za-z0-9][A-Za-z0-9._]*?)-({_VERSION})(?:[.+][A-Za-z0-9.+]*)?\.dist-info$", re.ASCII)


def parse_dist_info_name(name: Optional[str]) -> Optional[Tuple[str, str]]:
    """"nvidia_cuda_nvcc-13.0.88.dist-info" -> ("nvidia-cuda-nvcc", "13.0.88")."""
    if not name or not isinstance(name, str):
        return None
    m = _DIST_INFO_RE.match(name.strip().rstrip("/"))
    if not m:
        return None
    dist = re.sub(r"[-_.]+", "-", m.group(1)).lower()
    return dist, m.group(2)


_CONDA_META_RE = lazy_re(rf"^([a-z0-9][a-z0-9_.-]*?)-({_VERSION})-[^-]+\.json$", re.ASCII)


def parse_conda_meta_name(name: Optional[str]) -> Optional[Tuple[str, str]]:
    """conda-meta file names: "cuda-nvcc-12.4.131-0.json" -> ("cuda-nvcc", "12.4.131")."""
    if not name or not isinstance(name, str):
        return None
    m = _CONDA_META_RE.match(name.strip())
    return (m.group(1), m.group(2)) if m else None


def major_minor(version: Optional[str]) -> Optional[str]:
    """The X.Y series of a CUDA version as this parser reads it ("12.4.131" -> "12.4", "12.04" -> "12.4");
    envdoctor.facts.versions.major_minor says what a series is, and gives the same answer for every version
    _clean_version lets through (2 to 4 runs of ASCII digits: test_parsers_cuda.py checks it), computed here
    without packaging, which the probes would otherwise import only for this (~7 ms of `probe`)."""
    v = _clean_version(version)
    if v is None:
        return None
    major, minor = v.split(".")[:2]
    return f"{int(major)}.{int(minor)}"
