"""The facts a maintainer asks for first (collect_env's questions), as Markdown lines for `check --format markdown`.
Reads the report's (already redacted) snapshot."""
from __future__ import annotations

from typing import List


def _md(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def maintainer_facts(snap) -> List[str]:
    rows = []
    h = snap.host
    if h.cpu_model or h.cpu_flags:
        rows.append(("CPU", f"{h.cpu_model or '?'}; flags: {' '.join(h.cpu_flags) or 'none of avx/avx2/avx512'}"))
    if h.compilers:
        rows.append(("compilers", ", ".join(f"{k} {v}" for k, v in sorted(h.compilers.items()))))
    numpy = snap.python.packages.get("numpy")
    if numpy:
        rows.append(("numpy", numpy))
    for g in snap.memory.gpus:
        held = [p for p in snap.memory.processes if p.gpu_index == g.index]
        who = "; ".join(f"pid {p.pid} {p.cmdline or p.name or '?'} {p.used_mib} MiB"
                        + (f" ({p.user})" if p.user else "") for p in held[:4])
        rows.append((f"GPU {g.index} memory", f"{g.used_mib} / {g.total_mib} MiB used" + (f": {who}" if who else "")))
    env = dict(snap.memory.allocator_env)
    env.update(snap.buildenv.env)
    env.update(snap.buildenv.nccl_env)
    if env:
        rows.append(("environment", ", ".join(f"{k}={v}" for k, v in sorted(env.items()))))
    if snap.buildenv.nvcc_archs:
        rows.append(("nvcc targets", " ".join(snap.buildenv.nvcc_archs)))
    for k in snap.kernels.kernels:
        fws = ", ".join(f"{fw.name} {fw.version}" for fw in k.frameworks if fw.name in ("torch", "tensorflow", "jax"))
        rows.append((f"kernel {k.name}" if k.source == "kernelspec" else "VS Code interpreter",
                     f"{k.interpreter or '-'} ({k.status}{': ' + k.reason if k.reason else ''})" + (f": {fws}" if fws else "")))
    inst = snap.installers
    gpu_conda = [f"{p.name} {p.version}" for p in inst.conda_packages]
    if gpu_conda:
        rows.append(("conda packages", ", ".join(gpu_conda)))
    fw_inst = [f"{fw.distribution}: {inst.dists[fw.distribution]}" for fw in snap.python.frameworks if fw.distribution in inst.dists]
    if fw_inst:
        rows.append(("installed by", ", ".join(fw_inst)))
    for a in snap.accelerators:
        rows.append(("accelerator", f"{a.kind}: {a.framework}" + (f" (built for {a.version}, host {a.host_version or 'none'})"
                                                                  if a.kind == "rocm" else "")))
    if not rows:
        return []
    return ["", "### What a maintainer asks first", "", "| fact | value |", "| --- | --- |"] + [
        f"| {_md(k)} | {_md(v)} |" for k, v in rows]
