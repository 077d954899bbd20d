"""Can a GPU run a binary's device code? NVIDIA's rules, read from matrices/ptx_isa.toml.

`[[target]]` rows say, per kind (sass, ptx) and suffix ("", "a", "f"), which compute capabilities an
entry for X.Y runs on; `[[ptx]]` rows map a PTX ISA version to the first CUDA release whose driver
JIT-compiles it. Rows without a source and a verified note are ignored.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Dict, List, Optional, Sequence, Tuple

from packaging.version import Version

from envdoctor.facts.versions import parse_version
from envdoctor.records import dataclass, field

TABLE = "ptx_isa.toml"
RUNS_ON = ("same-major-newer-minor", "exact", "newer")
_TARGET_RE = re.compile(r"^(sm|compute)_(\d+)(\d)([af]?)$")


@dataclass(frozen=True)
class Facts:
    runs_on: Dict[Tuple[str, str], str]  # (kind, suffix) -> rule
    ptx_cuda: Dict[str, str]  # PTX ISA -> CUDA
    sources: Dict[str, str] = field(default_factory=dict)  # "target:sass:a" / "ptx:9.0" -> source URL
    vendor: List[str] = field(default_factory=list)  # globs of the distributions that are NVIDIA's CUDA libraries
    outside_fatbin: Dict[str, str] = field(default_factory=dict)  # distribution -> what was measured (and source)
    vendor_source: str = ""


def _ok(row) -> bool:
    return isinstance(row, dict) and all(isinstance(row.get(k), str) and row[k].strip() for k in ("source", "verified"))


@lru_cache(maxsize=1)
def load_facts() -> Facts:
    from envdoctor.knowledge import bundled_dir
    from envdoctor.knowledge.load import parse_toml_cached

    try:
        data = parse_toml_cached((bundled_dir() / TABLE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    runs_on: Dict[Tuple[str, str], str] = {}
    ptx: Dict[str, str] = {}
    sources: Dict[str, str] = {}
    for row in data.get("target", []):
        if _ok(row) and row.get("kind") in ("sass", "ptx") and row.get("suffix") in ("", "a", "f") \
                and row.get("runs_on") in RUNS_ON:
            runs_on[(row["kind"], row["suffix"])] = row["runs_on"]
            sources[f"target:{row['kind']}:{row['suffix']}"] = row["source"]
    for row in data.get("ptx", []):
        if _ok(row) and isinstance(row.get("isa"), str) and isinstance(row.get("cuda"), str):
            ptx[row["isa"]] = row["cuda"]
            sources[f"ptx:{row['isa']}"] = row["source"]
    vendor = [row["pattern"] for row in data.get("vendor", []) if _ok(row) and isinstance(row.get("pattern"), str)]
    outside = {row["distribution"]: f"{row.get('measured', '')} ({row['source']})"
               for row in data.get("outside_fatbin", []) if _ok(row) and isinstance(row.get("distribution"), str)}
    vendor_source = next((row["source"] for row in data.get("vendor", []) if _ok(row)), "")
    return Facts(runs_on, ptx, sources, vendor, outside, vendor_source)


_CU_NAME = re.compile(r"-cu(\d{2})$")
_CU_DIR = re.compile(r"/nvidia/cu(\d{2})/")


def vendor_cuda_major(distribution: str, path: str, facts: Optional[Facts] = None) -> Tuple[bool, Optional[int]]:
    """(is `distribution` one of NVIDIA's CUDA libraries, the CUDA major it belongs to or None): the major from
    the name (nvidia-cufft-cu12) or from the folder the file lies in (nvidia/cu13/lib/libcufft.so.12)."""
    import fnmatch

    name = (distribution or "").lower()
    if not name or not any(fnmatch.fnmatchcase(name, p) for p in (facts or load_facts()).vendor):
        return False, None
    m = _CU_NAME.search(name) or _CU_DIR.search(path or "")
    return True, int(m.group(1)) if m else None


def parse_target(target: str) -> Optional[Tuple[str, int, int, str]]:
    """'sm_90a' -> ('sass', 9, 0, 'a'); 'compute_120' -> ('ptx', 12, 0, ''); None if not a target."""
    m = _TARGET_RE.match(target.strip().lower())
    if not m:
        return None
    return ("sass" if m.group(1) == "sm" else "ptx", int(m.group(2)), int(m.group(3)), m.group(4))


def runs(target: str, cc: Tuple[int, int], facts: Optional[Facts] = None) -> bool:
    """Does the entry `target` (sm_80, compute_90, sm_100f ...) run on a GPU of compute capability `cc`?"""
    parsed = parse_target(target)
    if parsed is None:
        return False
    kind, major, minor, suffix = parsed
    rule = (facts or load_facts()).runs_on.get((kind, suffix))
    if rule == "exact":
        return cc == (major, minor)
    if rule == "same-major-newer-minor":
        return cc[0] == major and cc[1] >= minor
    if rule == "newer":
        return cc >= (major, minor)
    return False  # no rule in the data: never claim it runs


@dataclass
class Verdict:
    """How a GPU gets kernels from one binary: `sass` (a cubin runs), `ptx` (only by JIT), or `none`."""

    kind: str
    targets: List[str] = field(default_factory=list)  # the entries that serve the GPU
    cuda_floor: Optional[str] = None  # for `ptx`: the CUDA (driver) its PTX ISA needs; None if unknown
    too_new_ptx: List[str] = field(default_factory=list)  # PTX that fits the GPU but not the driver


def judge(sass: Sequence[str], ptx: Sequence[str], ptx_isa: Dict[str, str], cc: Tuple[int, int],
          driver_cuda: Optional[str] = None, facts: Optional[Facts] = None) -> Verdict:
    facts = facts or load_facts()
    hit = [t for t in sass if runs(t, cc, facts)]
    if hit:
        return Verdict("sass", hit)
    drv = parse_version(driver_cuda)
    usable: List[Tuple[str, Optional[str]]] = []
    too_new: List[str] = []
    for t in ptx:
        if not runs(t, cc, facts):
            continue
        floor = facts.ptx_cuda.get(ptx_isa.get(t, ""))
        fv = parse_version(floor)
        if drv is not None and fv is not None and drv < fv:
            too_new.append(t)
            continue
        usable.append((t, floor))
    if usable:
        known = [f for _, f in usable if f]
        floor = min(known, key=Version) if known else None
        return Verdict("ptx", [t for t, _ in usable], floor, too_new)
    return Verdict("none", [], None, too_new)


__all__ = ["Facts", "Verdict", "judge", "load_facts", "parse_target", "runs"]
