"""Versions from shared-library file names.

"libcudart.so.12.4.127" -> ("libcudart", "12.4.127"); "libcudnn.so.8" -> ("libcudnn", "8");
"libcudart.so" -> ("libcudart", None); "libnvrtc-builtins.so.12.4" -> ("libnvrtc-builtins", "12.4").
Pure: anything that is not a lib*.so[.N...] name (ASCII digits, bounded) returns None.
"""
from __future__ import annotations

import re
from typing import Optional, Tuple

from envdoctor.parsers import NUM
from envdoctor.lazyre import lazy_re

_LIB_RE = lazy_re(rf"^(lib[A-Za-z0-9_+\-]*?)\.so((?:\.{NUM})*)$", re.ASCII)


def split_libname(filename: Optional[str]) -> Optional[Tuple[str, Optional[str]]]:
    if not filename or not isinstance(filename, str):
        return None
    base = filename.strip().rsplit("/", 1)[-1]
    m = _LIB_RE.match(base)
    if not m:
        return None
    suffix = m.group(2)
    return m.group(1), (suffix[1:] if suffix else None)


def lib_version(filename: Optional[str]) -> Optional[str]:
    parts = split_libname(filename)
    return parts[1] if parts else None


def more_precise(a: Optional[str], b: Optional[str]) -> Optional[str]:
    """The version with more components ("12.4.127" over "12"); a wins a tie."""
    if not a:
        return b
    if not b:
        return a
    return b if len(b.split(".")) > len(a.split(".")) else a
