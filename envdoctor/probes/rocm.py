"""ROCm: installed or not, where, which version, which AMD GPUs.

Install dirs: ROCM_PATH, HIP_PATH (its parent when it ends in /hip), /opt/rocm (usually a
link to /opt/rocm-X.Y.Z) and /opt/rocm-*; the first that exists is reported (symlinks
resolved), the others go to evidence.
Version: <path>/.info/version ("6.1.0-82" -> "6.1.0"), else include/rocm-core/rocm_version.h
(or include/rocm_version.h), else the directory name (rocm-6.1.0).
GPUs (live root only, with the timeout, failures tolerated): `rocm-smi --showproductname`,
else `amd-smi static --asic`, each from PATH or <path>/bin.
"""
from __future__ import annotations

import posixpath
import re
from typing import List, Optional

from envdoctor.parsers.rocm import (
    parse_amd_smi_static,
    parse_rocm_info_version,
    parse_rocm_smi_productname,
    parse_rocm_version_h,
)
from envdoctor.probes._parsed import parsed
from envdoctor.probes.base import ProbeContext
from envdoctor.probes.toolkits import find_on_path, is_dir, is_file, read_text, resolve_path
from envdoctor.snapshot import Evidence, Rocm, Snapshot


def _version_key(path: str):
    from packaging.version import Version  # only with /opt/rocm-* dirs: not at import

    from envdoctor.facts.versions import parse_version

    m = re.search(r"rocm-([0-9]{1,12}(?:\.[0-9]{1,12})*)(?![0-9])", path)
    return (parse_version(m.group(1)) if m else None) or Version("0")


def _candidates(ctx: ProbeContext) -> List[tuple]:
    out = []
    for var in ("ROCM_PATH", "HIP_PATH"):
        val = ctx.env.get(var, "").strip().rstrip("/")
        if not val.startswith("/"):
            continue
        if var == "HIP_PATH" and posixpath.basename(val) == "hip":
            val = posixpath.dirname(val)
        out.append((val, f"env:{var}"))
    out.append(("/opt/rocm", "file:/opt/rocm"))
    versioned = sorted(ctx.root.glob("/opt/rocm-*"), key=_version_key, reverse=True)
    out += [(p, f"file:{p}") for p in versioned]
    return out


def _version(ctx: ProbeContext, path: str, evidence: List[Evidence]) -> Optional[str]:
    info = posixpath.join(path, ".info/version")
    text = read_text(ctx.root, info)
    v = parsed(evidence, f"file:{info}", parse_rocm_info_version, text)
    if v:
        evidence.append(Evidence(f"file:{info}", (text or "").strip()[:100]))
        return v
    for rel in ("include/rocm-core/rocm_version.h", "include/rocm_version.h"):
        h = posixpath.join(path, rel)
        v = parsed(evidence, f"file:{h}", parse_rocm_version_h, read_text(ctx.root, h))
        if v:
            evidence.append(Evidence(f"file:{h}", f"ROCM_VERSION_MAJOR/MINOR/PATCH -> {v}"))
            return v
    m = re.search(r"rocm-([0-9]{1,12}\.[0-9]{1,12}(?:\.[0-9]{1,12})?)$", path)
    if m:
        evidence.append(Evidence("path", f"version from the directory name {posixpath.basename(path)}"))
        return m.group(1)
    return None


def _tool(ctx: ProbeContext, name: str, path: str) -> Optional[str]:
    found = find_on_path(ctx, name)
    if found:
        return found
    cand = posixpath.join(path, "bin", name) if path else ""
    return cand if cand and is_file(ctx.root, cand) else None


def _gpus(ctx: ProbeContext, path: str, evidence: List[Evidence]) -> List[str]:
    for name, argv_tail, parser in (
        ("rocm-smi", ["--showproductname"], parse_rocm_smi_productname),
        ("amd-smi", ["static", "--asic"], parse_amd_smi_static),
    ):
        exe = _tool(ctx, name, path)
        if not exe:
            continue
        res = ctx.runner.run([exe] + argv_tail, timeout=ctx.timeout)
        src = f"cmd:{name} {' '.join(argv_tail)}"
        if not res.ok:
            evidence.append(Evidence(src, f"{res.status}: {res.reason}"[:300]))
            continue
        gpus = parsed(evidence, src, parser, res.stdout, default=[])
        if gpus:
            evidence.append(Evidence(src, "; ".join(gpus)[:300]))
            return gpus
        evidence.append(Evidence(src, "no GPU in the output: " + res.stdout.strip()[:200]))
    return []


def probe(ctx: ProbeContext, snap: Snapshot) -> None:
    rocm = Rocm()
    primary: Optional[str] = None
    seen = set()
    for cand, how in _candidates(ctx):
        if not is_dir(ctx.root, cand):
            if how.startswith("env:"):
                rocm.evidence.append(Evidence(how, f"{cand}: no such directory"))
            continue
        real = resolve_path(ctx.root, cand)
        if real in seen:
            continue
        seen.add(real)
        if primary is None:
            primary = real
            rocm.evidence.append(Evidence(how, cand if cand == real else f"{cand} -> {real}"))
        else:
            rocm.evidence.append(Evidence(how, f"also installed: {real}"))
    if primary is not None:
        rocm.installed = True
        rocm.path = primary
        rocm.version = _version(ctx, primary, rocm.evidence)
    if ctx.root.is_live:
        rocm.gpus = _gpus(ctx, primary or "", rocm.evidence)
        if rocm.gpus:
            rocm.installed = True
    snap.rocm = rocm
