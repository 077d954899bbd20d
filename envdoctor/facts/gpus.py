"""Facts about the GPUs a snapshot records, shared by the rules and the fleet report.

Owns: `hidden_gpus` (GPUs one layer sees and another does not), `Visible` / `visible_gpus` (the GPUs CUDA programs
see, CUDA_VISIBLE_DEVICES honoured), `gpu_label`, and the compiled-arch families a build carries for a GPU:
`arch_entries` (sm_/compute_ entries with their 'a'/'f' suffixes), `kernel_for` (SASS, same-major PTX, PTX across
majors, none), `newest_arch`, `variant_serves_cc`. Compute capabilities are read by envdoctor.facts.versions.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Iterable, List, Optional, Tuple

from envdoctor.facts.versions import cc_tuple
from envdoctor.lazyre import lazy_re
from envdoctor.records import dataclass, field
from envdoctor.snapshot import GPU, Snapshot

if TYPE_CHECKING:  # facts never import envdoctor.rules at module level: that package imports every rule module
    from envdoctor.rules.base import EvidenceItem
    from envdoctor.knowledge.matrices import Matrices
    from envdoctor.context import Context

# the nvidia probe's disagreement between layers' GPU counts
_COUNT_RE = lazy_re(r"^(.+?) lists (\d+) GPUs? but (.+?) lists (\d+) GPUs?(?: \(not in [^)]*\))?$", re.ASCII)


def hidden_gpus(snap: Snapshot) -> Optional[str]:
    """GPUs the kernel module or PCI sees but NVML / nvidia-smi do not (the probe records the counts)."""
    for text in snap.driver.disagreements:
        m = _COUNT_RE.match(text)
        if m and int(m.group(4)) > int(m.group(2)):
            return text
    return None


@dataclass
class Visible:
    gpus: List[GPU]
    certain: bool = True  # False: CUDA_VISIBLE_DEVICES may map indices differently
    note: str = ""
    evidence: List[EvidenceItem] = field(default_factory=list)


def visible_gpus(ctx: "Context") -> Visible:
    """The GPUs CUDA programs of this environment see (CUDA_VISIBLE_DEVICES honoured when it can be read)."""
    from envdoctor.rules.base import EvidenceItem

    gpus = list(ctx.snap.gpus)
    env = ctx.gpu_env
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    if cvd is None:
        return Visible(gpus)
    ev = [EvidenceItem("CUDA_VISIBLE_DEVICES", cvd, "env:CUDA_VISIBLE_DEVICES")]
    text = cvd.strip()
    if text in ("", "-1", "NoDevFiles", "none"):
        return Visible([], True, f"CUDA_VISIBLE_DEVICES={cvd!r} hides every GPU", ev)
    items = [t.strip() for t in text.split(",") if t.strip()]
    chosen: List[GPU] = []
    if all(t.isdigit() for t in items):
        ccs = {ctx.gpu_cc(g) for g in gpus}
        pci_order = env.get("CUDA_DEVICE_ORDER", "").strip().upper() == "PCI_BUS_ID"
        if not (pci_order or len(ccs) <= 1):
            # CUDA numbers devices fastest-first unless CUDA_DEVICE_ORDER=PCI_BUS_ID: indices are not nvidia-smi's.
            return Visible(gpus, False, f"CUDA_VISIBLE_DEVICES={cvd} (fastest-first numbering)", ev)
        for t in items:
            idx = int(t)
            match = [g for g in gpus if g.index == idx]
            if not match:
                break  # CUDA stops at the first invalid index
            chosen.extend(match)
        return Visible(chosen, True, f"CUDA_VISIBLE_DEVICES={cvd}", ev)
    for t in items:
        key = t.lower()
        match = [g for g in gpus if g.uuid and (g.uuid.lower() == key or g.uuid.lower().startswith(key))]
        if not match:
            return Visible(gpus, False, f"CUDA_VISIBLE_DEVICES={cvd}", ev)
        chosen.extend(match)
    return Visible(chosen, True, f"CUDA_VISIBLE_DEVICES={cvd}", ev)


def gpu_label(gpu: GPU, cc: Optional[str]) -> str:
    name = gpu.name or "unknown GPU"
    return f"GPU {gpu.index} {name}" + (f" (compute capability {cc})" if cc else "")


_ENTRY = lazy_re(r"^(sm|compute|lto)_(\d+?)(\d)([af]?)$")
_DOTTED = lazy_re(r"^(\d+)\.(\d+)([af]?)(\+ptx)?$")


def arch_entries(arch_list: Optional[Iterable[Any]]) -> List[Tuple[str, int, int, str]]:
    """[('sm', 8, 6, ''), ('compute', 9, 0, '')...] from 'sm_86', 'compute_90', 'sm_90a', '8.6', '9.0+PTX'."""
    out: List[Tuple[str, int, int, str]] = []
    for raw in arch_list or []:
        text = str(raw).strip().lower()
        mm = _ENTRY.match(text)
        if mm:
            kind = "sm" if mm.group(1) == "sm" else ("compute" if mm.group(1) == "compute" else "")
            if kind:
                out.append((kind, int(mm.group(2)), int(mm.group(3)), mm.group(4)))
            continue
        md = _DOTTED.match(text)
        if md:
            out.append(("sm", int(md.group(1)), int(md.group(2)), md.group(3)))
            if md.group(4):
                out.append(("compute", int(md.group(1)), int(md.group(2)), md.group(3)))
    return out


def kernel_for(arch_list: Optional[Iterable[Any]], cc: Optional[str]) -> Tuple[str, Optional[str]]:
    """How a GPU of compute capability `cc` gets kernels from a build compiled for `arch_list`:

    ("sass", "sm_80")         a cubin runs natively (same major, minor <= the GPU's; 'a' variants only exactly)
    ("ptx", "compute_90")     only by JIT-compiling PTX of an arch <= the GPU's (same major)
    ("ptx-major", "compute_80")  only by JIT across a major generation
    ("none", None)            no kernel image for this GPU ("no kernel image is available for execution")
    ("unknown", None)         the list or the cc cannot be read
    """
    target = cc_tuple(cc)
    entries = arch_entries(arch_list)
    if target is None or not entries:
        return ("unknown", None)
    for kind, major, minor, suffix in entries:
        if kind != "sm":
            continue
        if suffix == "a":
            if (major, minor) == target:
                return ("sass", f"sm_{major}{minor}{suffix}")
        elif major == target[0] and minor <= target[1]:
            return ("sass", f"sm_{major}{minor}{suffix}")
    best = None
    for kind, major, minor, suffix in entries:
        if kind != "compute":
            continue
        if suffix == "a" and (major, minor) != target:
            continue
        if suffix == "f" and major != target[0]:
            continue
        if (major, minor) <= target and (best is None or (major, minor) > best[:2]):
            best = (major, minor, suffix)
    if best is not None:
        name = f"compute_{best[0]}{best[1]}{best[2]}"
        return ("ptx" if best[0] == target[0] else "ptx-major", name)
    return ("none", None)


def variant_serves_cc(m: "Matrices", var: Any, cc: Optional[str], allow: Tuple[str, ...] = ("sass", "ptx")) -> bool:
    """Does a torch variant serve a GPU of `cc`: kernels in its arch list and a bundled cuDNN that still
    supports that compute capability (cuDNN 9 dropped Kepler, 9.17 pre-Turing)?"""
    if not cc:
        return True
    if kernel_for(var.compiled_archs(), cc)[0] not in allow:
        return False
    if var.cudnn:
        rel = m.cudnn_release(var.cudnn)
        if rel is not None:
            need, have = cc_tuple(rel.min_cc(var.cuda_major)), cc_tuple(cc)
            if need is not None and have is not None and have < need:
                return False
    return True


def newest_arch(arch_list: Optional[Iterable[Any]]) -> Optional[Tuple[int, int]]:
    ents = arch_entries(arch_list)
    return max(((e[1], e[2]) for e in ents), default=None)
