"""`envdoctor check` for people, in the manner of `flutter doctor`: a line per area
with [✓] / [!] / [✗], and the details and fixes under the failing ones."""
from __future__ import annotations

from typing import Callable, Dict, List, Optional

from envdoctor.report import Report
from envdoctor.rules.base import AREAS, SEVERITY_RANK, Finding
from envdoctor.snapshot import Snapshot

MARK = {"error": "✗", "warning": "!", "info": "✓", "ok": "✓"}
COLOR = {"error": "red", "warning": "yellow", "info": "green", "ok": "green"}
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


def failed_probes(area: str, snap: Snapshot) -> List[str]:
    """'name: why' for each probe behind `area` that could not answer (skipped on purpose is not a failure)."""
    from envdoctor.rules.summary import PROBE_ANSWERED

    out = []
    for name in AREA_PROBES.get(area, ()):
        p = snap.probe(name)
        if p is not None and p.status not in PROBE_ANSWERED:
            out.append(f"{name} probe: {p.reason or p.status}")
    return out


def _area_summary(area: str, snap: Snapshot) -> Optional[str]:
    failed = failed_probes(area, snap)
    if failed:
        known = _known_summary(area, snap)
        return ((known + "; ") if known and known not in ("none", "unknown") else "") + \
            "could not determine (" + "; ".join(failed) + ")"
    return _known_summary(area, snap)


def _known_summary(area: str, snap: Snapshot) -> Optional[str]:
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
        return "; ".join(f"{g.index}: {g.name}" + (f" (sm_{g.compute_capability.replace('.', '')})" if g.compute_capability else "")
                         for g in snap.gpus)
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


def render_report_text(report: Report, verbose: bool = False, color: bool = False) -> str:
    import click

    def style(text: str, sev: str) -> str:
        return click.style(text, fg=COLOR.get(sev)) if color else text

    by_area: Dict[str, List[Finding]] = {a: [] for a in AREAS}
    for f in report.findings:
        by_area.setdefault(f.area, []).append(f)
    lines: List[str] = ["Doctor summary" + ("" if verbose else " (run with -v for the evidence):")]
    for area in AREAS:
        found = by_area.get(area, [])
        summary = _area_summary(area, report.snapshot)
        if summary is None and not found:
            continue
        worst = max((f.severity for f in found), key=lambda s: SEVERITY_RANK[s], default="ok")
        if failed_probes(area, report.snapshot) and SEVERITY_RANK[worst] < SEVERITY_RANK["warning"]:
            worst = "warning"  # a part envdoctor could not determine is never shown as fine
        head = f"[{MARK[worst]}] {AREA_TITLE.get(area, area)}" + (f": {summary}" if summary else "")
        lines.append(style(head, worst))
        for f in found:
            lines.extend(_finding_lines(f, verbose, style))
    errors, warnings = report.count("error"), report.count("warning")
    lines.append("")
    if errors or warnings:
        parts = []
        if errors:
            parts.append(f"{errors} error{'s' if errors != 1 else ''}")
        if warnings:
            parts.append(f"{warnings} warning{'s' if warnings != 1 else ''}")
        sev = "error" if errors else "warning"
        lines.append(style(f"{MARK[sev]} Doctor found {' and '.join(parts)}.", sev))
    else:
        lines.append(style("• No issues found!", "ok"))
    if report.data_collected:
        lines.append(f"  (compatibility data collected {report.data_collected})")
    for w in report.data_warnings:
        lines.append(style(f"  data warning: {w}", "warning"))
    return "\n".join(lines) + "\n"


def _finding_lines(f: Finding, verbose: bool, style: Callable[[str, str], str]) -> List[str]:
    out = [style(f"    {MARK[f.severity]} {f.id} {f.message}", f.severity)]
    for c in f.consequences:
        out.append(f"        also caused by this: {c}")
    for step in f.fix:
        out.append(f"        fix: {step}")
    if verbose:
        for e in f.evidence:
            out.append(f"        evidence: {e.fact} = {e.value}" + (f"  [{e.source}]" if e.source else ""))
    return out
