"""Files of the NVIDIA kernel driver: /proc/driver/nvidia/version, /proc/driver/nvidia/gpus/*/information,
/sys/module/nvidia/version.

Pure functions: text in, typed values out. Garbage returns None; the contract is in
envdoctor/parsers/__init__.py.

/proc/driver/nvidia/version, as seen in real files (tests/fixtures/nvidia/):

    NVRM version: NVIDIA UNIX x86_64 Kernel Module  384.98  Thu Oct 26 15:16:01 PDT 2017
    NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  565.57.01  Release Build  (dvs-builder@...)  <date>
    NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  35.3.1  Release Build  (...)   (Jetson: an L4T version)
    GCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)

/proc/driver/nvidia/gpus/<bus>/information: "Key: value" lines (spaces or tabs), e.g.
``Model: NVIDIA L4``, ``GPU UUID: GPU-...``, ``Bus Location: 0000:70:00.0``, ``Device Minor: 0``.
"""
from __future__ import annotations

import re
from typing import Dict, Optional

from envdoctor.parsers import BUS_ID_RE, NUM, NUM_END, ascii_int, checked_text
from envdoctor.lazyre import lazy_re
from envdoctor.records import dataclass, field

_VERSION_RE = lazy_re(rf"^{NUM}(?:\.{NUM}){{1,3}}$", re.ASCII)
_UUID_RE = lazy_re(r"^GPU-[0-9A-Za-z-]+$", re.ASCII)

_ARCHES = ("x86_64", "aarch64", "ppc64le", "ppc64", "arm64", "armv7l", "sbsa", "s390x", "x86")


@dataclass
class ProcDriverVersion:
    version: str  # "565.57.01"
    flavor: str  # "open" (Open Kernel Module) | "proprietary"
    arch: Optional[str] = None  # "x86_64", "aarch64" when the line says
    gcc: Optional[str] = None  # "13.3.0"
    line: str = ""  # the NVRM line as written


@dataclass
class ProcGpuInfo:
    model: Optional[str] = None
    uuid: Optional[str] = None
    bus_location: Optional[str] = None
    device_minor: Optional[int] = None
    video_bios: Optional[str] = None
    excluded: Optional[bool] = None
    fields: Dict[str, str] = field(default_factory=dict)


def _usable(text: object) -> Optional[str]:
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    text = checked_text(text)
    if text is None or "\x00" in text:
        return None
    return text


def parse_proc_version(text: Optional[str]) -> Optional[ProcDriverVersion]:
    text = _usable(text)
    if text is None:
        return None
    nvrm = None
    for line in text.splitlines()[:20]:
        if line.strip().startswith("NVRM version:"):
            nvrm = line.strip()
            break
    if nvrm is None:
        return None
    body = nvrm[len("NVRM version:"):]
    idx = body.find("Kernel Module")
    if idx < 0:
        return None
    words = body.split()
    version = None
    # The version is the first version-shaped word after "Module" (and after "for <arch>").
    after = body[idx + len("Kernel Module"):].split()
    if after[:1] == ["for"]:
        after = after[2:]
    for word in after[:3]:
        if _VERSION_RE.match(word):
            version = word
            break
    if version is None:
        return None
    arch = next((w for w in words if w in _ARCHES), None)
    flavor = "open" if "Open Kernel Module" in body else "proprietary"
    gcc = None
    m = re.search(rf"^GCC version:.*?gcc version\s+({NUM}(?:\.{NUM})+){NUM_END}", text, re.MULTILINE | re.ASCII)
    if m:
        gcc = m.group(1)
    return ProcDriverVersion(version=version, flavor=flavor, arch=arch, gcc=gcc, line=nvrm)


def parse_gpu_information(text: Optional[str]) -> Optional[ProcGpuInfo]:
    text = _usable(text)
    if text is None:
        return None
    fields: Dict[str, str] = {}
    for line in text.splitlines()[:100]:
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key = key.strip()
        if not key or len(key) > 40:
            continue
        fields[key] = value.strip()
    if not fields.get("Model") and not fields.get("GPU UUID") and not fields.get("Bus Location"):
        return None
    info = ProcGpuInfo(fields=fields)
    info.model = fields.get("Model") or None
    uuid = fields.get("GPU UUID", "")
    info.uuid = uuid if _UUID_RE.match(uuid) else None
    bus = fields.get("Bus Location", "")
    info.bus_location = bus if BUS_ID_RE.match(bus) else None
    info.device_minor = ascii_int(fields.get("Device Minor"))
    info.video_bios = fields.get("Video BIOS") or None
    excluded = fields.get("GPU Excluded", "").lower()
    info.excluded = True if excluded == "yes" else False if excluded == "no" else None
    return info


def parse_module_version(text: Optional[str]) -> Optional[str]:
    """/sys/module/nvidia/version: one line with the loaded module's version."""
    text = _usable(text)
    if text is None:
        return None
    first = text.strip().splitlines()[0].strip() if text.strip() else ""
    return first if _VERSION_RE.match(first) else None
