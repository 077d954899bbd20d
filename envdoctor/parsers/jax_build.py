"""jax / jaxlib builds, from version files and distribution names, never imported.

- jaxlib/version.py (same file as jax/version.py, and shipped again as
  jax_cuda12_plugin/version.py and jax_plugins/xla_cuda12/version.py):
  new layout `_version = "0.10.2"` plus `_release_version: str = '0.10.2'`
  (written by the release build), old layout `__version__ = "0.3.0"`.
- jaxlib up to 0.4.x shipped CUDA builds as local versions of jaxlib itself:
  '0.4.23+cuda12.cudnn89', '0.3.25+cuda11.cudnn805', '0.1.75+cuda111'.
- since 0.4.x CUDA comes as plugin distributions: jax-cuda12-plugin (kernels)
  and jax-cuda12-pjrt (the PJRT plugin), jax-cuda13-*, jax-rocm60-plugin ...
  A jaxlib with neither is a CPU build.

The contract of these functions is in envdoctor/parsers/__init__.py.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterable, Optional, Tuple

from envdoctor.parsers import NUM, checked_text, python_ast
from envdoctor.lazyre import lazy_re
from envdoctor.records import dataclass, replace

TYPE_CHECKING = False
if TYPE_CHECKING:  # ast is imported where a file is parsed: not at every start
    pass


@dataclass
class JaxVersionInfo:
    version: Optional[str] = None  # the release version if written, else _version / __version__
    base_version: Optional[str] = None  # _version
    release_version: Optional[str] = None  # _release_version (None in a source tree)
    git_hash: Optional[str] = None


_WANTED = ("_version", "_release_version", "__version__", "_git_hash")


def parse_jax_version_file(text: Optional[str]) -> Optional[JaxVersionInfo]:
    """Parse jaxlib/version.py (or jax/version.py or a plugin's copy); None if no version in it."""
    text = checked_text(text)
    if text is None:
        return None
    info = _parse_version_text(text)
    return None if info is None else replace(info)  # a copy: the caller may change its own


@lru_cache(maxsize=8)
def _parse_version_text(text: str) -> Optional[JaxVersionInfo]:
    """jax and jaxlib ship the same version.py: a check parses it once (ast.parse of 7 KB is ~1.5 ms)."""
    import ast

    values = {}
    try:
        tree = python_ast(text)
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                name, value = node.targets[0].id, node.value
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                name, value = node.target.id, node.value
            else:
                continue
            if name in _WANTED:
                try:
                    values[name] = ast.literal_eval(value)
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                    pass
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        for m in re.finditer(r"^(_version|_release_version|__version__|_git_hash)\s*(?::[^=\n]*)?=\s*['\"]([^'\"\n]+)['\"]", text, re.M | re.ASCII):
            values.setdefault(m.group(1), m.group(2))

    def s(key: str) -> Optional[str]:
        v = values.get(key)
        return v.strip() if isinstance(v, str) and v.strip() else None

    release = s("_release_version")
    base = s("_version")
    version = release or s("__version__") or base
    if version is None:
        return None
    return JaxVersionInfo(version=version, base_version=base, release_version=release, git_hash=s("_git_hash"))


_LABEL_RE = lazy_re(rf"^(cuda|rocm)({NUM})(?:[._]cudnn({NUM}))?$", re.ASCII)


def _dotted(digits: str) -> str:
    """'89' -> '8.9', '805' -> '8.0.5', '8' -> '8' (cuDNN tags: first digit major, then one digit each)."""
    return ".".join([digits[0]] + list(digits[1:])) if digits else digits


def jaxlib_label_build(version: Optional[str]) -> Tuple[str, Optional[str], Optional[str], Optional[str]]:
    """(build, cuda_version, cudnn_version, rocm_version) from an old jaxlib local label.

    '0.4.23+cuda12.cudnn89' -> ('cuda', '12', '8.9', None)
    '0.3.25+cuda11.cudnn805' -> ('cuda', '11', '8.0.5', None)
    '0.1.75+cuda111'         -> ('cuda', '11.1', None, None)
    no label                 -> ('unknown', None, None, None)
    """
    if not isinstance(version, str) or "+" not in version:
        return ("unknown", None, None, None)
    label = version.split("+", 1)[1].strip().lower()
    m = _LABEL_RE.match(label)
    if not m:
        return ("unknown", None, None, None)
    kind, digits, cudnn = m.group(1), m.group(2), m.group(3)
    if kind == "cuda":
        # a major only in 0.3+/0.4 ("cuda11.cudnn82", "cuda12.cudnn89");
        # major and minor in 0.1.x ("cuda92", "cuda101", "cuda111": the last digit is the minor)
        if cudnn is not None or len(digits) == 1 or (len(digits) == 2 and digits[0] == "1"):
            cuda = str(int(digits))
        else:
            cuda = f"{int(digits[:-1])}.{digits[-1]}"
        return ("cuda", cuda, _dotted(cudnn) if cudnn else None, None)
    return ("rocm", None, None, _dotted(digits))


_PLUGIN_RE = lazy_re(rf"^jax-(cuda|rocm)({NUM})-(plugin|pjrt)$", re.ASCII)


def plugin_dist(name: str) -> Optional[Tuple[str, str, str]]:
    """('cuda', '12', 'plugin') for 'jax-cuda12-plugin', ('rocm', '6.0', 'pjrt') for 'jax-rocm60-pjrt'.

    `name` is a normalized distribution name. The CUDA part is the major only.
    """
    m = _PLUGIN_RE.match(name.strip().lower()) if isinstance(name, str) else None
    if not m:
        return None
    kind, digits, part = m.group(1), m.group(2), m.group(3)
    version = digits if kind == "cuda" else _dotted(digits)
    return (kind, version, part)


def plugin_module_paths(name: str) -> Tuple[str, ...]:
    """Where a plugin distribution keeps its version.py, relative to site-packages."""
    parsed = plugin_dist(name)
    m = _PLUGIN_RE.match(name.strip().lower()) if parsed is not None else None
    if parsed is None or m is None:
        return ()
    kind, _, part = parsed
    digits = m.group(2)  # the digits as written ("60"; plugin_dist gives ROCm's dotted "6.0")
    if part == "plugin":
        return (f"jax_{kind}{digits}_plugin/version.py",)
    return (f"jax_plugins/xla_{kind}{digits}/version.py",)


def jax_build(jaxlib_version: Optional[str], installed: Iterable[str]) -> Tuple[str, Optional[str], Optional[str], Optional[str]]:
    """(build, cuda_version, cudnn_version, rocm_version) of jax as installed.

    `installed` is the normalized distribution names present. A CUDA plugin
    (highest major wins) makes it a CUDA build (keeping the cuDNN an old jaxlib's +cudaNN.cudnnNN label names);
    else an old jaxlib +cudaNN label;
    else a ROCm plugin; else CPU (when jaxlib is there at all).
    """
    names = list(installed)
    cuda_majors = []
    rocm_versions = []
    for n in names:
        p = plugin_dist(n)
        if p is None:
            continue
        if p[0] == "cuda":
            cuda_majors.append(p[1])
        else:
            rocm_versions.append(p[1])
    label = jaxlib_label_build(jaxlib_version)
    if cuda_majors:
        # the plugin decides the CUDA major; a jaxlib whose own label names a cuDNN (+cuda12.cudnn89) still says so
        cudnn = label[2] if label[0] == "cuda" else None
        return ("cuda", max(cuda_majors, key=int), cudnn, None)
    if label[0] != "unknown":
        return label
    if rocm_versions:
        return ("rocm", None, None, rocm_versions[0])
    if jaxlib_version:
        return ("cpu", None, None, None)
    return ("unknown", None, None, None)
