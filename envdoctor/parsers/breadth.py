"""Parsers for the breadth probes: nvidia-smi process/memory queries, `nvcc --list-gpu-arch`, /proc/cpuinfo,
compiler version banners, JSON with comments (VS Code settings) and PYTORCH_CUDA_ALLOC_CONF.

The package contract holds (envdoctor.parsers): typed values or None / empty, ParseError only for input
over MAX_INPUT_CHARS, ASCII-only numbers.
"""
from __future__ import annotations

import json
import re
from typing import Dict, List, Optional, Tuple

from envdoctor.parsers import ascii_int, checked_text, dotted_version
from envdoctor.parsers.nvidia_smi import _int_mib, parse_query_csv
from envdoctor.lazyre import lazy_re

COMPUTE_APPS_FIELDS = ("gpu_uuid", "pid", "process_name", "used_gpu_memory")
GPU_MEMORY_FIELDS = ("index", "uuid", "memory.used", "memory.total", "utilization.gpu")

_ARCH_RE = lazy_re(r"^(compute|sm|lto)_([0-9]{2,4}[a-z]?)$", re.ASCII)
_UUID_RE = lazy_re(r"^(GPU|MIG)-[0-9A-Fa-f-]{8,}$", re.ASCII)


def parse_compute_apps(text: Optional[str]) -> List[Dict[str, object]]:
    """Rows of `nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name,used_memory --format=csv`:
    {"gpu_uuid", "pid", "name", "used_mib"}; rows without a pid are dropped."""
    out: List[Dict[str, object]] = []
    for row in parse_query_csv(text, COMPUTE_APPS_FIELDS):
        pid = ascii_int(row.get("pid"))
        if pid is None:
            continue
        uuid = row.get("uuid") or ""  # parse_query_csv names the gpu_uuid column "uuid"
        name = row.get("process_name") or ""
        out.append({"gpu_uuid": uuid if _UUID_RE.match(uuid) else "", "pid": pid,
                    "name": "" if name == "[Not Found]" else name[:300], "used_mib": _int_mib(row.get("used_gpu_memory"))})
    return out


def parse_gpu_memory(text: Optional[str]) -> List[Dict[str, object]]:
    """Rows of `nvidia-smi --query-gpu=index,uuid,memory.used,memory.total,utilization.gpu --format=csv`."""
    out: List[Dict[str, object]] = []
    for row in parse_query_csv(text, GPU_MEMORY_FIELDS):
        index = ascii_int(row.get("index"))
        if index is None:
            continue
        uuid = row.get("uuid") or ""
        out.append({"index": index, "uuid": uuid if _UUID_RE.match(uuid) else "",
                    "used_mib": _int_mib(row.get("memory.used")), "total_mib": _int_mib(row.get("memory.total"))})
    return out


def parse_nvcc_archs(text: Optional[str]) -> List[str]:
    """`nvcc --list-gpu-arch` (one compute_XY per line) -> ["compute_75", ...]; other lines are ignored."""
    text = checked_text(text)
    if text is None:
        return []
    out = []
    for line in text.splitlines():
        word = line.strip()
        if _ARCH_RE.match(word) and word not in out:
            out.append(word)
    return out


def arch_number(word: str) -> Optional[Tuple[int, str]]:
    """'compute_90a' / 'sm_90' / '9.0' / '9.0a' / '90' -> (90, 'a'); None for anything else."""
    w = word.strip().lower()
    m = _ARCH_RE.match(w)
    if m:
        digits = re.match(r"([0-9]+)([a-z]?)", m.group(2), re.ASCII)
        return (int(digits.group(1)), digits.group(2)) if digits else None
    m = re.fullmatch(r"([0-9]{1,2})\.([0-9])([a-z]?)(\+ptx)?", w, re.ASCII)
    if m:
        return int(m.group(1)) * 10 + int(m.group(2)), m.group(3)
    m = re.fullmatch(r"([0-9]{2,4})([a-z]?)(-real|-virtual)?", w, re.ASCII)
    if m:
        return int(m.group(1)), m.group(2)
    return None


def parse_arch_list(value: Optional[str]) -> Tuple[List[Tuple[int, str]], List[str]]:
    """TORCH_CUDA_ARCH_LIST ('7.5;8.0;8.6+PTX', '7.5 8.6'), CUDAARCHS / CMAKE_CUDA_ARCHITECTURES
    ('75;86-real', 'native', 'all', 'all-major'): (archs read, words not understood). The keywords
    native / all / all-major are returned among the words, not as archs."""
    if not isinstance(value, str) or len(value) > 4096:
        return [], []
    archs: List[Tuple[int, str]] = []
    bad: List[str] = []
    for word in re.split(r"[;\s,]+", value.strip()):
        if not word:
            continue
        num = arch_number(word)
        if num is None:
            bad.append(word)
        elif num not in archs:
            archs.append(num)
    return archs, bad


_CPU_FLAGS_WANTED = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
                     "avx512_bf16", "amx_tile", "amx_bf16", "asimd", "sve", "sve2")


def parse_cpuinfo(text: Optional[str]) -> Tuple[str, List[str]]:
    """/proc/cpuinfo -> (model name of the first CPU, the flags that matter to framework builds that it has)."""
    text = checked_text(text)
    if text is None:
        return "", []
    model = ""
    flags: List[str] = []
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key = key.strip().lower()
        if not model and key in ("model name", "hardware", "cpu model", "processor") and not value.strip().isdigit():
            model = value.strip()[:200]
        elif not flags and key in ("flags", "features"):
            have = set(value.split())
            flags = [f for f in _CPU_FLAGS_WANTED if f in have]
        if model and flags:
            break
    return model, flags


_VERSION_LINE = {
    "gcc": re.compile(r"^(?:gcc|cc|[\w.+-]*gcc[\w.+-]*)\s+\(.*\)\s+([0-9][0-9.]*)", re.ASCII),
    "clang": re.compile(r"clang version\s+([0-9][0-9.]*)", re.ASCII),
    "cmake": re.compile(r"^cmake3? version\s+([0-9][0-9.]*)", re.ASCII),
    "ninja": re.compile(r"^([0-9]+\.[0-9]+(?:\.[0-9]+)?)(?:\.git)?\s*$", re.ASCII),
}


def parse_tool_version(tool: str, text: Optional[str]) -> Optional[str]:
    """The version in the first lines of `gcc --version`, `clang --version`, `cmake --version`, `ninja --version`."""
    text = checked_text(text)
    pattern = _VERSION_LINE.get(tool)
    if text is None or pattern is None:
        return None
    for line in text.splitlines()[:5]:
        m = pattern.search(line.strip())
        if m:
            return dotted_version(m.group(1).rstrip("."), prefix=True)
    return None


def parse_jsonc(text: Optional[str]) -> Optional[dict]:
    """VS Code's JSON with comments (// and /* */) and trailing commas -> the object, or None."""
    text = checked_text(text)
    if text is None:
        return None
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        else:
            out.append(c)
            i += 1
    cleaned = re.sub(r",(\s*[}\]])", r"\1", "".join(out))
    try:
        data = json.loads(cleaned)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def parse_alloc_conf(value: Optional[str]) -> Tuple[List[Tuple[str, str]], List[str]]:
    """PYTORCH_CUDA_ALLOC_CONF 'key:value,key2:value2' -> ([(key, value)], [syntax problems]).

    torch splits on ',' and ':' (roundup_power2_divisions also takes '[256:1,512:2,>:4]'); an item without
    ':' is a problem."""
    if not isinstance(value, str) or not value.strip():
        return [], []
    if len(value) > 4096:
        return [], ["longer than 4096 characters"]
    items, problems, depth, cur = [], [], 0, ""
    for ch in value:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth = max(0, depth - 1)
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    items.append(cur)
    out = []
    for item in items:
        item = item.strip()
        if not item:
            problems.append("an empty item (two commas, or a trailing comma)")
            continue
        key, sep, val = item.partition(":")
        if not sep or not key.strip() or not val.strip():
            problems.append(f"'{item}' is not key:value")
            continue
        out.append((key.strip(), val.strip()))
    return out, problems
