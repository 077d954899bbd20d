"""`envdoctor probe` for people: the snapshot, one line per fact (not a findings format: no registry entry)."""
from __future__ import annotations

from typing import List

from envdoctor.formats.safe_text import printable
from envdoctor.snapshot import Snapshot


def render_snapshot_text(snap: Snapshot) -> str:
    lines: List[str] = []
    add = lines.append
    p = snap.platform
    add(f"envdoctor {snap.envdoctor_version} snapshot (schema {snap.schema_version}), {snap.created}")
    if snap.root not in ("/", ""):
        add(f"root: {snap.root}")
    osdesc = p.distro_name or p.system or "unknown OS"
    extra = []
    if p.wsl:
        extra.append(f"WSL{p.wsl}")
    if p.container:
        extra.append(f"container: {p.container}")
    add(f"Platform     {osdesc}, {p.machine or '?'}, kernel {p.kernel or '?'}" + (f", glibc {p.glibc}" if p.glibc else "")
        + (f" ({', '.join(extra)})" if extra else ""))
    d = snap.driver
    if d.version:
        add(f"Driver       NVIDIA {d.version}" + (f", supports CUDA <= {d.cuda_version}" if d.cuda_version else "")
            + f" [{d.state}; via {d.source or '?'}]")
    else:
        add(f"Driver       none found [{d.state}]")
    for msg in d.messages:
        add(f"             {msg}")
    for dis in d.disagreements:
        add(f"             disagreement: {dis}")
    if snap.gpus:
        for g in snap.gpus:
            mem = f", {g.memory_total_mib} MiB" if g.memory_total_mib else ""
            cc = f"compute capability {g.compute_capability}" if g.compute_capability else "compute capability ?"
            add(f"GPU {g.index:<8} {g.name}, {cc}{mem}")
    else:
        add("GPUs         none")
    if snap.rocm.installed:
        add(f"ROCm         {snap.rocm.version or '?'} at {snap.rocm.path}" + (f", GPUs: {', '.join(snap.rocm.gpus)}" if snap.rocm.gpus else ""))
    if snap.toolkits:
        for tk in snap.toolkits:
            mark = " (default)" if tk.is_default else ""
            add(f"CUDA toolkit {tk.version or '?'} at {tk.path}{mark} [version from {tk.version_source or '?'}; found by {', '.join(tk.found_by) or '?'}]")
    else:
        add("CUDA toolkit none")
    if snap.cudnn:
        for c in snap.cudnn:
            add(f"cuDNN        {c.version or '?'} ({c.kind}) {c.path}")
    else:
        add("cuDNN        none found")
    py = snap.python
    if py.executable:
        add(f"Python       {py.version} {py.executable} [{py.kind or '?'}]")
    else:
        add("Python       unknown")
    for fw in py.frameworks:
        build = fw.build
        if fw.cuda_version:
            build += f" {fw.cuda_version}"
        if fw.rocm_version:
            build += f" {fw.rocm_version}"
        if fw.cudnn_version:
            build += f", cuDNN {fw.cudnn_version}"
        dist = f" ({fw.distribution})" if fw.distribution != fw.name else ""
        add(f"  {fw.name}{dist} {fw.version}: {build} build")
    nv = sorted(k for k in py.packages if k.startswith(("nvidia-", "cuda-")))
    if nv:
        add("  nvidia wheels: " + ", ".join(f"{k}=={py.packages[k]}" for k in nv))
    lo = snap.loader
    if lo.ld_library_path:
        add("LD_LIBRARY_PATH " + ":".join(lo.ld_library_path))
    if lo.ld_preload:
        add("LD_PRELOAD   " + " ".join(lo.ld_preload))
    for k, v in sorted(lo.gpu_env.items()):
        add(f"env          {k}={v}")
    _binaries(snap, add)
    bad = [s for s in snap.probes if s.status != "ok"]
    if bad:
        add("Probes that could not answer:")
        for s in bad:
            add(f"  {s.name}: {s.status}" + (f" ({s.reason})" if s.reason else ""))
    # a snapshot's values are any bytes a machine (or a crafted file) gave: no terminal escape goes out raw
    return printable("\n".join(lines)) + "\n"


def _binaries(snap: Snapshot, add) -> None:
    bn = snap.binaries
    if not bn.scanned:
        return
    add(f"CUDA binaries {len(bn.binaries)} of {bn.scanned} shared objects carry device code"
        + (f" ({bn.incomplete})" if bn.incomplete else ""))
    for b in bn.binaries:
        owner = f"{b.package} {b.package_version}".strip() or "no package"
        ptx = " ".join(f"{t} (PTX ISA {b.ptx_isa.get(t, '?')})" for t in b.ptx) or "-"
        add(f"  {owner}: {b.path}")
        add(f"    SASS {' '.join(b.sass) or '-'}; PTX {ptx}" + (f"; unreadable: {b.unreadable}" if b.unreadable else ""))
        for lib in b.libraries:
            where = f"{lib.path} [{lib.via}]" if lib.path else "NOT FOUND"
            add(f"    {lib.soname} -> {where}" + (f" ({lib.package})" if lib.package else ""))
    for u in bn.unreadable:
        add(f"  unreadable: {u.path}" + (f" ({u.package})" if u.package else "") + f": {u.reason}")
