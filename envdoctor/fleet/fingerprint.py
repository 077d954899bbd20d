"""The facts of a snapshot that matter for compatibility, and the fingerprint that groups nodes by them.

Left out on purpose: the node name and time, GPU UUIDs / serials / bus ids, probe durations, evidence
excerpts, paths and environment values (noise from node to node). The rules of a configuration are run on one
representative snapshot of it (the first one ingested), so they read its paths and environment.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from typing import Dict, Optional

from envdoctor.facts.gpus import hidden_gpus  # noqa: F401 - part of this module's interface
from envdoctor.facts.loader import userspace_driver
from envdoctor.snapshot import Snapshot


def reboot_pending(snap: Snapshot) -> Optional[str]:
    """Why the node needs a reboot (kernel module and user-space driver differ), or None."""
    d = snap.driver
    kernel, user = d.kernel_module_version, userspace_driver(snap)
    mismatch = d.state == "version_mismatch" or d.nvml == "mismatch" or d.nvidia_smi == "mismatch"
    if not mismatch and not (kernel and user and kernel != user):
        return None
    return (f"kernel module {kernel or 'unknown'} loaded, user-space driver {user or 'another release'} installed"
            + (" (Driver/library version mismatch)" if mismatch else ""))


def facts(snap: Snapshot) -> Dict[str, str]:
    """Flat, ordered fact -> value (strings; "" for unknown)."""
    p, d = snap.platform, snap.driver
    out: Dict[str, str] = {
        "platform": f"{p.system} {p.machine}".strip(),
        "distro": f"{p.distro_id} {p.distro_version}".strip(),
        "kernel": p.kernel,
        "glibc": p.glibc,
        "container": p.container or "",
        "driver.state": d.state,
        "driver.version": d.version or "",
        "driver.kernel_module": d.kernel_module_version or "",
        "driver.userspace": userspace_driver(snap) or "",
        "driver.cuda": d.cuda_version or "",
    }
    models = Counter(f"{g.name} (cc {g.compute_capability or '?'})" for g in snap.gpus)
    out["gpus"] = ", ".join(f"{n} x{c}" for n, c in sorted(models.items()))
    out["gpu_count"] = str(len(snap.gpus))
    out["toolkits"] = ", ".join(sorted(f"{t.version or '?'}{' (default)' if t.is_default else ''}" for t in snap.toolkits))
    out["cudnn"] = ", ".join(sorted({c.version or "?" for c in snap.cudnn}))
    py = snap.python
    out["python"] = f"{py.implementation} {py.version}".strip()
    for fw in sorted(py.frameworks, key=lambda f: f.name):
        build = fw.build + (f" cuda {fw.cuda_version}" if fw.cuda_version else "") + (
            f" cudnn {fw.cudnn_version}" if fw.cudnn_version else "") + (f" rocm {fw.rocm_version}" if fw.rocm_version else "")
        out[f"framework.{fw.name}"] = f"{fw.distribution} {fw.version} ({build})"
    if snap.rocm.installed:
        out["rocm"] = snap.rocm.version or "?"
    return out


def _digest(data: Dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def fingerprint(f: Dict[str, str]) -> str:
    return _digest(f)


def base_fingerprint(f: Dict[str, str]) -> str:
    """The fingerprint without the GPU count: nodes that differ only in how many GPUs they see share it."""
    return _digest({k: (re.sub(r" x\d+", "", v) if k == "gpus" else v) for k, v in f.items() if k != "gpu_count"})


def diff(majority: Dict[str, str], other: Dict[str, str]) -> Dict[str, tuple]:
    """fact -> (majority's value, other's value) for every fact that differs."""
    keys = list(majority) + [k for k in other if k not in majority]
    return {k: (majority.get(k, ""), other.get(k, "")) for k in keys if majority.get(k, "") != other.get(k, "")}
