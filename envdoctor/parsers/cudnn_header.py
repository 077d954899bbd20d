"""cuDNN version from its headers: cudnn_version.h (cuDNN >= 8) or cudnn.h (cuDNN <= 7).

The version is built from CUDNN_MAJOR / CUDNN_MINOR / CUDNN_PATCHLEVEL, never from
CUDNN_VERSION: that number is MAJOR*1000+MINOR*100+PATCH up to cuDNN 8 but
MAJOR*10000+MINOR*100+PATCH from cuDNN 9, so it cannot be decoded alone.
Pure: garbage (or a cuDNN 8 cudnn.h, which only includes cudnn_version.h) returns None.
"""
from __future__ import annotations

import re
from typing import Optional


def _define(text: str, name: str) -> Optional[int]:
    m = re.search(rf"^[ \t]*#[ \t]*define[ \t]+{name}[ \t]+(\d+)\b", text, re.MULTILINE)
    return int(m.group(1)) if m else None


def parse_cudnn_header(text: Optional[str]) -> Optional[str]:
    """"#define CUDNN_MAJOR 9 / CUDNN_MINOR 6 / CUDNN_PATCHLEVEL 0" -> "9.6.0"."""
    if not text or not isinstance(text, str):
        return None
    major = _define(text, "CUDNN_MAJOR")
    minor = _define(text, "CUDNN_MINOR")
    if major is None or minor is None:
        return None
    patch = _define(text, "CUDNN_PATCHLEVEL")
    return f"{major}.{minor}" if patch is None else f"{major}.{minor}.{patch}"
