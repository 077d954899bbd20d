"""`--format prometheus`: node-exporter textfile-collector metrics.

Write them where node-exporter's --collector.textfile.directory points (`-o` writes atomically, as the collector
needs): one `envdoctor_finding` gauge per rule ID and severity (1 when the rule found something, 0 for a rule that
ran and found nothing, so an alert can tell "fixed" from "not collected"), counts per severity, and info metrics
(value 1, the facts in labels) for the driver, the CUDA toolkits and the frameworks.
"""
from __future__ import annotations

from collections import Counter
from typing import Dict, Iterable, List, Tuple

from envdoctor.formats.interface import FindingsDoc, RenderOptions

name = "prometheus"
description = "node-exporter textfile-collector metrics: a gauge per rule and severity, the machine's facts"


def _esc(value: object) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(labels: Dict[str, object]) -> str:
    return "{" + ",".join(f'{k}="{_esc(v)}"' for k, v in labels.items()) + "}"


def _metric(out: List[str], name: str, help_text: str, samples: Iterable[Tuple[Dict[str, object], float]]) -> None:
    out.append(f"# HELP {name} {help_text}")
    out.append(f"# TYPE {name} gauge")
    for labels, value in samples:
        out.append(f"{name}{_labels(labels) if labels else ''} {value:g}")


def render(doc: FindingsDoc, options: RenderOptions) -> str:
    snap = doc.machine if doc.command == "check" else doc.snapshot  # check's redacted one is built when asked
    findings = [x.finding for x in doc.items]
    out: List[str] = []
    found = Counter((f.id, f.severity) for f in findings)
    titles = {f.id: f.title for f in findings}
    samples = {key: float(n) for key, n in found.items()}
    for r in doc.rules:
        if not any(k[0] == r.id for k in samples):
            samples[(r.id, r.severity)] = 0.0
            titles.setdefault(r.id, r.title)
    _metric(out, "envdoctor_finding",
            f"envdoctor {doc.command} findings by rule ID and severity (0: the rule ran, found nothing).",
            [({"id": i, "severity": s, "title": titles.get(i, "")}, v) for (i, s), v in sorted(samples.items())])
    _metric(out, "envdoctor_findings", f"Number of envdoctor {doc.command} findings by severity.",
            [({"severity": s}, doc.count(s)) for s in ("error", "warning", "info")])
    if snap is not None:
        _machine_metrics(out, snap)
    if options.timestamp is not None:
        _metric(out, f"envdoctor_{doc.command}_timestamp_seconds", f"When envdoctor {doc.command} ran (Unix time).",
                [({}, options.timestamp)])
    return "\n".join(out) + "\n"


def _machine_metrics(out: List[str], snap) -> None:
    d = snap.driver
    _metric(out, "envdoctor_driver_info", "The NVIDIA driver as envdoctor saw it (value 1).",
            [({"state": d.state, "version": d.version or "", "kernel_module": d.kernel_module_version or "",
               "cuda": d.cuda_version or ""}, 1)])
    _metric(out, "envdoctor_gpus", "GPUs the NVIDIA driver lists.", [({}, len(snap.gpus))])
    _metric(out, "envdoctor_cuda_toolkit_info", "CUDA toolkits found (value 1).",
            [({"version": t.version or "", "path": t.path, "default": str(t.is_default).lower()}, 1) for t in snap.toolkits])
    _metric(out, "envdoctor_framework_info", "Frameworks installed in the judged Python environment (value 1).",
            [({"name": f.name, "version": f.version, "build": f.build, "cuda": f.cuda_version or ""}, 1)
             for f in snap.python.frameworks])
