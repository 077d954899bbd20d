"""torch/version.py (and torchvision/torchaudio version.py), read as text, never imported.

Layouts seen in real wheels::

    __version__ = '1.3.1'                      # 1.x: plain assignments
    cuda = '10.1'
    hip = None                                 # from ~1.5 on

    from typing import Optional                # 2.x: annotated
    __version__ = '2.14.1+cu130'
    cuda: Optional[str] = '13.0'
    hip: Optional[str] = None
    rocm: Optional[str] = None                 # recent
    xpu: Optional[str] = None

The CUDA arch list is not in this file (it is compiled into libtorch), so it is
never reported from here.

torchvision/version.py computes `cuda` at import time (it imports
torchvision.extension), so only its `__version__` local label (+cu130) tells.
The contract of these parsers is in envdoctor/parsers/__init__.py.
"""
from __future__ import annotations

import ast
import re
from typing import Dict, Optional, Tuple

from envdoctor.parsers import NUM, checked_text, dotted_version, python_ast
from envdoctor.lazyre import lazy_re
from envdoctor.records import dataclass

_NAMES = ("__version__", "cuda", "hip", "rocm", "xpu", "git_version", "debug")


@dataclass
class TorchVersionInfo:
    version: Optional[str] = None  # "2.14.1+cu130"
    cuda: Optional[str] = None  # "13.0" (None when the file's value is not a dotted version)
    hip: Optional[str] = None  # "6.0.32830-d62f6a171"
    rocm: Optional[str] = None
    xpu: Optional[str] = None
    git_version: Optional[str] = None
    debug: Optional[bool] = None
    local_label: Optional[str] = None  # "cu130", "cpu", "rocm6.0"


def _constant_assignments(text: str) -> Dict[str, object]:
    """Top-level `name = <literal>` / `name: T = <literal>` assignments of the names we want."""
    out: Dict[str, object] = {}
    try:
        tree = python_ast(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return _regex_assignments(text)
    for node in tree.body:
        target: Optional[str] = None
        value: Optional[ast.expr] = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            target, value = node.target.id, node.value
        if target is None or value is None or target not in _NAMES:
            continue
        try:
            out[target] = ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
    return out


_ASSIGN_RE = lazy_re(
    r"^(__version__|cuda|hip|rocm|xpu|git_version|debug)\s*(?::[^=\n]*)?=\s*(?:'([^'\n]*)'|\"([^\"\n]*)\"|(None|True|False))\s*$",
    re.M | re.ASCII,
)


def _regex_assignments(text: str) -> Dict[str, object]:
    """Fallback for a file that does not parse (e.g. a trailing statement we cannot compile)."""
    out: Dict[str, object] = {}
    for m in _ASSIGN_RE.finditer(text):
        name = m.group(1)
        if m.group(4) is not None:
            out[name] = {"None": None, "True": True, "False": False}[m.group(4)]
        else:
            out[name] = m.group(2) if m.group(2) is not None else m.group(3)
    return out


def _str_or_none(value: object) -> Optional[str]:
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def local_label(version: Optional[str]) -> Optional[str]:
    """The local version label after '+': '2.1.0+cu121' -> 'cu121'."""
    if not isinstance(version, str) or "+" not in version:
        return None
    label = version.split("+", 1)[1].strip()
    return label or None


_CU_RE = lazy_re(r"^cu([0-9]{2,3})$", re.ASCII)
_ROCM_RE = lazy_re(rf"^rocm({NUM}(?:\.{NUM})*)$", re.ASCII)


def cuda_from_cu_tag(tag: str) -> Optional[str]:
    """'cu121' -> '12.1', 'cu118' -> '11.8', 'cu92' -> '9.2', 'cu130' -> '13.0' (the last digit is the minor)."""
    m = _CU_RE.match(tag.strip().lower()) if isinstance(tag, str) else None
    if not m:
        return None
    digits = m.group(1)
    return f"{int(digits[:-1])}.{digits[-1]}"


def build_from_label(label: Optional[str]) -> Tuple[str, Optional[str], Optional[str]]:
    """(build, cuda_version, rocm_version) from a local label of the torch family.

    'cu121' -> ('cuda', '12.1', None); 'cpu' / 'cpu.cxx11.abi' -> ('cpu', None, None);
    'rocm6.0' -> ('rocm', None, '6.0'); anything else -> ('unknown', None, None).
    """
    if not isinstance(label, str) or not label:
        return ("unknown", None, None)
    parts = label.lower().split(".")
    head = parts[0]
    if head == "cpu":
        return ("cpu", None, None)
    cuda = cuda_from_cu_tag(head)
    if cuda:
        return ("cuda", cuda, None)
    m = _ROCM_RE.match(label.lower())
    if m:
        return ("rocm", None, m.group(1))
    return ("unknown", None, None)


def parse_torch_version(text: Optional[str]) -> Optional[TorchVersionInfo]:
    """Parse torch/version.py text; None when it holds no __version__."""
    text = checked_text(text)
    if text is None:
        return None
    values = _constant_assignments(text)
    version = _str_or_none(values.get("__version__"))
    if version is None:
        return None
    debug = values.get("debug")
    return TorchVersionInfo(
        version=version,
        cuda=dotted_version(values.get("cuda")),
        hip=_str_or_none(values.get("hip")),
        rocm=_str_or_none(values.get("rocm")),
        xpu=_str_or_none(values.get("xpu")),
        git_version=_str_or_none(values.get("git_version")),
        debug=debug if isinstance(debug, bool) else None,
        local_label=local_label(version),
    )


def _rocm_from_hip(hip: str) -> Optional[str]:
    version = dotted_version(hip, prefix=True)
    return ".".join(version.split(".")[:2]) if version and "." in version else None


def torch_build(info: TorchVersionInfo) -> Tuple[str, Optional[str], Optional[str]]:
    """(build, cuda_version, rocm_version) of a torch build described by its version.py.

    cuda set -> cuda; hip/rocm set -> rocm (ROCm version from `rocm`, the +rocmX.Y
    label, else HIP major.minor); xpu set -> unknown (not a CUDA/ROCm build);
    all unset -> cpu.
    """
    label_build, label_cuda, label_rocm = build_from_label(info.local_label)
    if info.cuda:
        return ("cuda", info.cuda, None)
    if info.hip or info.rocm:
        rocm = dotted_version(info.rocm, prefix=True) or label_rocm or (_rocm_from_hip(info.hip) if info.hip else None)
        return ("rocm", None, rocm)
    if info.xpu:
        return ("unknown", None, None)
    if label_build in ("cuda", "rocm"):  # the file disagrees with its label: trust the label's kind
        return (label_build, label_cuda, label_rocm)
    return ("cpu", None, None)


def parse_simple_version_py(text: Optional[str]) -> Optional[str]:
    """`__version__ = '...'` of a torchvision/torchaudio/cupy style version file (never executed)."""
    text = checked_text(text)
    if text is None:
        return None
    values = _regex_assignments(text)
    return _str_or_none(values.get("__version__"))
