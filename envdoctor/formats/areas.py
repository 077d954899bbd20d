"""The machine's areas as check's text and Markdown show them: one line per area (Platform, NVIDIA driver, GPUs, ...)
with what the snapshot says about it, or why a probe behind it could not answer."""
from __future__ import annotations

from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

from envdoctor.formats.marks import mark, state
from envdoctor.records import dataclass, field
from envdoctor.rules.base import AREAS, SEVERITY_RANK, Finding
from envdoctor.snapshot import Snapshot

if TYPE_CHECKING:
    from envdoctor.formats.interface import FindingsDoc

AREA_TITLE = {
    "platform": "Platform", "driver": "NVIDIA driver", "gpu": "GPUs", "toolkit": "CUDA toolkit", "cudnn": "cuDNN",
    "torch": "PyTorch", "tensorflow": "TensorFlow", "jax": "JAX", "python": "Python environment",
    "environment": "Environment", "data": "Compatibility data",
}


# the probes each area line is made of: when one could not answer, the line says so and is never ✓
AREA_PROBES = {
    "platform": ("platform",), "driver": ("nvidia",), "gpu": ("nvidia", "rocm"), "toolkit": ("toolkits",),
    "cudnn": ("cudnn",), "python": ("python",), "environment": ("loader",),
}


# distributions whose findings are about a framework's area line (its companions and plugins count as it)
_FRAMEWORK_AREA = {"torch": "torch", "torchvision": "torch", "torchaudio": "torch", "triton": "torch",
                   "tensorflow": "tensorflow", "tensorflow-cpu": "tensorflow", "tensorflow-gpu": "tensorflow",
                   "tf-nightly": "tensorflow", "jax": "jax", "jaxlib": "jax"}


def framework_area(subject: str) -> Optional[str]:
    """The framework area a finding's subject ("torch 2.6.0+cu124 on GPU 0", "jax-cuda12-plugin 0.6.0") is about."""
    first = (subject or "").split(" ", 1)[0].lower().replace("_", "-")
    if first.startswith("jax-cuda"):
        return "jax"
    return _FRAMEWORK_AREA.get(first)


def failed_probes(area: str, snap: Snapshot) -> List[str]:
    """'name: why' for each probe behind `area` that could not answer (skipped on purpose is not a failure)."""
    from envdoctor.rules.summary import unanswered

    names = AREA_PROBES.get(area, ())
    return [f"{p.name} probe: {p.reason or p.status}" for p in unanswered(snap) if p.name in names]


def area_summary(area: str, snap: Snapshot) -> Optional[str]:
    failed = failed_probes(area, snap)
    if failed:
        known = known_summary(area, snap)
        return ((known + "; ") if known and known not in ("none", "unknown") else "") + \
            "could not determine (" + "; ".join(failed) + ")"
    return known_summary(area, snap)


def absent(area: str, snap: Snapshot) -> bool:
    """Does the area's line state an absence (no driver, no GPU), which is neither fine nor wrong in itself?"""
    if failed_probes(area, snap):
        return False
    if area == "driver":
        return not snap.driver.version and snap.driver.state == "not_installed"
    if area == "gpu":
        return not snap.gpus
    return False


def gpu_groups(gpus) -> str:
    """The GPUs as people read them: identical ones counted (``8 × NVIDIA A100-SXM4-80GB (sm_80)``, indexes
    ``0-7``), different ones each with their indexes, in index order."""
    groups: List[Tuple[str, List[str]]] = []
    for g in gpus:
        label = g.name + (f" (sm_{g.compute_capability.replace('.', '')})" if g.compute_capability else "")
        hit = next((grp for grp in groups if grp[0] == label), None)
        if hit is None:
            groups.append((label, [str(g.index)]))
        else:
            hit[1].append(str(g.index))
    if len(groups) == 1 and len(groups[0][1]) == 1:
        return f"{groups[0][1][0]}: {groups[0][0]}"
    return "; ".join(f"{_span(ix)}: " + (f"{len(ix)} × " if len(ix) > 1 else "") + label for label, ix in groups)


def _span(indexes: List[str]) -> str:
    nums = [int(i) for i in indexes if i.isdigit()]
    if len(nums) == len(indexes) > 2 and nums == list(range(nums[0], nums[0] + len(nums))):
        return f"{nums[0]}-{nums[-1]}"
    return ",".join(indexes)


def known_summary(area: str, snap: Snapshot) -> Optional[str]:
    p = snap.platform
    if area == "platform":
        bits = [p.distro_name or p.system or "unknown OS", p.machine]
        if p.wsl:
            bits.append(f"WSL{p.wsl}")
        return ", ".join(b for b in bits if b)
    if area == "driver":
        d = snap.driver
        if d.version:
            return f"{d.version}" + (f" (supports CUDA <= {d.cuda_version})" if d.cuda_version else "")
        return {"not_installed": "not installed", "module_not_loaded": "kernel module not loaded",
                "version_mismatch": "driver/library version mismatch"}.get(d.state, d.state)
    if area == "gpu":
        if not snap.gpus:
            return "none"
        return gpu_groups(snap.gpus)
    if area == "toolkit":
        if not snap.toolkits:
            return None
        return "; ".join(f"{t.version or '?'} at {t.path}" + (" (default)" if t.is_default and len(snap.toolkits) > 1 else "")
                         for t in snap.toolkits)
    if area == "cudnn":
        if not snap.cudnn:
            return None
        return "; ".join(f"{c.version or '?'} ({c.kind})" for c in snap.cudnn)
    if area in ("torch", "tensorflow", "jax"):
        fw = snap.framework(area)
        if fw is None:
            return None
        build = fw.build + (f" {fw.cuda_version}" if fw.cuda_version else "") + (f" {fw.rocm_version}" if fw.rocm_version else "")
        comp = [f"{o.name} {o.version}" for o in snap.python.frameworks
                if o.name != area and o.name.startswith(area) or (area == "torch" and o.name in ("torchvision", "torchaudio", "triton"))]
        return f"{fw.version} ({build} build)" + (f"; {', '.join(comp)}" if comp else "")
    if area == "python":
        py = snap.python
        if not py.executable:
            return None
        return f"{py.version} at {py.executable}" if py.version else py.executable
    return None


# --------------------------------------------------------------------------- check's summary, for every format that draws it


@dataclass
class AreaLine:
    """One area of check's summary: its title, what the snapshot says, its state (the worst severity that counts,
    "ok" otherwise), its mark, the findings under it and those about it shown under another area."""

    area: str
    title: str
    summary: Optional[str]
    state: str
    sign: str
    findings: List[Finding] = field(default_factory=list)
    others: List[Finding] = field(default_factory=list)


def area_lines(doc: "FindingsDoc") -> List[AreaLine]:
    """check's summary by area, as text and the notebook view draw it (areas with nothing to say are left out)."""
    snap = doc.machine
    by_area: Dict[str, List[Finding]] = {a: [] for a in AREAS}
    elsewhere: Dict[str, List[Finding]] = {}  # framework area -> findings about it shown under another area
    for x in doc.items:
        by_area.setdefault(x.finding.area, []).append(x.finding)
        about = framework_area(x.finding.subject)
        if about and about != x.finding.area:
            elsewhere.setdefault(about, []).append(x.finding)
    out: List[AreaLine] = []
    for area in AREAS:
        found = by_area.get(area, [])
        summary = area_summary(area, snap)
        if summary is None and not found:
            continue
        # a framework's line is never fine while a finding about it (shown under GPUs, say) is not
        others = [f for f in elsewhere.get(area, []) if SEVERITY_RANK.get(f.severity, 0) >= SEVERITY_RANK["warning"]]
        worst = state([f.severity for f in found] + [f.severity for f in others])
        if failed_probes(area, snap) and SEVERITY_RANK[worst] < SEVERITY_RANK["warning"]:
            worst = "warning"  # a part envdoctor could not determine is never shown as fine
        # an absence (no driver on a CPU machine) is not ticked as fine: a neutral mark, unless a finding says more
        sign = "-" if worst == "ok" and absent(area, snap) else mark(worst)
        out.append(AreaLine(area, AREA_TITLE.get(area, area), summary, worst, sign, found, others))
    return out


@dataclass
class Verdict:
    """check's last word: its severity ("error", "warning" or "ok"), the sentence, what could not be determined."""

    severity: str
    text: str
    unknown: List[str] = field(default_factory=list)


def verdict(doc: "FindingsDoc") -> Verdict:
    from envdoctor.rules.summary import PROBE_FACTS, unanswered

    errors, warnings = doc.count("error"), doc.count("warning")
    unknown = [f"{PROBE_FACTS.get(p.name, (f'the {p.name} part of the machine',))[0]} ({p.name} probe: "
               f"{p.reason or p.status})" for p in unanswered(doc.machine)]
    if errors or warnings:
        parts = []
        if errors:
            parts.append(f"{errors} error{'s' if errors != 1 else ''}")
        if warnings:
            parts.append(f"{warnings} warning{'s' if warnings != 1 else ''}")
        return Verdict("error" if errors else "warning", f"Doctor found {' and '.join(parts)}.", unknown)
    if not unknown:
        return Verdict("ok", "No issues found!")
    # ED002 ignored, say: what could not be determined is still no all-clear
    return Verdict("warning", "No issues found in what envdoctor could determine.", unknown)
