"""cuDNN version from its headers: cudnn_version.h (cuDNN >= 8) or cudnn.h (cuDNN <= 7).

The version is built from CUDNN_MAJOR / CUDNN_MINOR / CUDNN_PATCHLEVEL, never from
CUDNN_VERSION: that number is MAJOR*1000+MINOR*100+PATCH up to cuDNN 8 but
MAJOR*10000+MINOR*100+PATCH from cuDNN 9, so it cannot be decoded alone.
Pure: garbage (or a cuDNN 8 cudnn.h, which only includes cudnn_version.h) returns None; the
contract is in envdoctor/parsers/__init__.py.
"""
from __future__ import annotations

import re
from typing import Optional

from envdoctor.parsers import ascii_int, checked_text


def define_int(text: str, name: str) -> Optional[int]:
    """The value of `#define NAME <digits>` in a C header; None when absent or not a bounded ASCII number."""
    m = re.search(rf"^[ \t]*#[ \t]*define[ \t]+{name}[ \t]+([0-9]+)\b", text, re.MULTILINE | re.ASCII)
    return ascii_int(m.group(1)) if m else None


def parse_cudnn_header(text: Optional[str]) -> Optional[str]:
    """"#define CUDNN_MAJOR 9 / CUDNN_MINOR 6 / CUDNN_PATCHLEVEL 0" -> "9.6.0"."""
    text = checked_text(text)
    if text is None:
        return None
    major = define_int(text, "CUDNN_MAJOR")
    minor = define_int(text, "CUDNN_MINOR")
    if major is None or minor is None:
        return None
    patch = define_int(text, "CUDNN_PATCHLEVEL")
    return f"{major}.{minor}" if patch is None else f"{major}.{minor}.{patch}"
