"""Version files that are plain ``name = 'value'`` lines, read as text, never imported:
onnxruntime/capi/build_and_package_info.py (``package_name``, ``cuda_version``, ``cudnn_version``) and
paddle/version/__init__.py (``cuda_version = '11.8'``, ``cudnn_version = '8.6.0'``; 'False' in a CPU build)."""
from __future__ import annotations

import re
from typing import Dict, Optional

from envdoctor.lazyre import lazy_re

_ASSIGNMENT = lazy_re(r"^(\w+)\s*=\s*['\"]([^'\"\n]*)['\"]\s*$", re.M)


def simple_assignments(text: Optional[str]) -> Dict[str, str]:
    """Every top-level ``name = 'string'`` line of ``text`` ({} for None)."""
    return {m.group(1): m.group(2) for m in _ASSIGNMENT.finditer(text)} if text else {}
