"""Smoke results as the doctor's findings (ED700-ED749), explained by the probe's facts where they fit.

`smoke_findings(results, snapshot)` is what `envdoctor check --smoke` folds into its report; the
same explanations (`explain`) become the `hint` of a failed step in `envdoctor smoke`. The rules
are registered with @rule in envdoctor.rules.smoke_rules (so `envdoctor rules` / `explain ED7xx` describe
them); they only produce findings here, from a smoke run.
"""
from __future__ import annotations

import re
from typing import Dict, List, Optional, Sequence, Tuple

from envdoctor.facts.versions import parse_version
from envdoctor.rules import smoke_rules
from envdoctor.rules.base import REGISTRY, EvidenceItem, Finding
from envdoctor.smoke.results import BAD, FrameworkResult, SmokeRun, StepResult

AREA = {"torch": "torch", "tensorflow": "tensorflow", "jax": "jax", "cupy": "python", "onnxruntime": "python"}
STEP_IDS = {"import": "ED701", "devices": "ED702", "matmul": "ED703", "conv": "ED704", "mixed_precision": "ED705",
            "compile": "ED706", "bench_matmul": "ED707", "bench_h2d": "ED707", "shutdown": "ED708",
            "each_gpu": "ED703", "session": "ED712", "allreduce": "ED713"}
NOTABLE_NOT_AVAILABLE = ("no_compiler", "no_triton", "old_gpu", "no_cudnn", "dtype", "python", "old", "platform")

_TITLES = {rid: r.title for rid, r in REGISTRY.items() if r.module == smoke_rules.__name__}


# -- explanations from the probe's facts ------------------------------------------------------

def _cudnn_majors(snap) -> Dict[int, List[str]]:
    """cuDNN major -> where it was seen (probe's cuDNN installs and the loader's libcudnn files)."""
    out: Dict[int, List[str]] = {}
    for c in getattr(snap, "cudnn", []) or []:
        v = parse_version(c.version)
        if v is not None:
            out.setdefault(v.major, []).append(f"{c.version} at {c.path or c.kind}")
    for lib in getattr(getattr(snap, "loader", None), "libraries", []) or []:
        if lib.name.startswith("libcudnn"):
            v = parse_version(lib.version)
            if v is not None:
                where = f"{lib.version} at {lib.path}"
                if not any(lib.path in w for w in out.get(v.major, [])):
                    out.setdefault(v.major, []).append(where)
    return out


def _framework_fact(snap, name: str):
    try:
        return snap.framework(name)
    except Exception:  # noqa: BLE001
        return None


def _gpu_ccs(snap) -> List[Tuple[str, str]]:
    return [(g.name, g.compute_capability) for g in getattr(snap, "gpus", []) or [] if g.compute_capability]


def explain(fw: FrameworkResult, step: StepResult, snap) -> Tuple[str, Optional[str], List[str], List[EvidenceItem]]:
    """(explanation, cause key, fixes, evidence) for a failed / crashed / timed-out step; ("", ...) when none fits."""
    text = "\n".join([step.detail] + list(fw.notes))
    low = text.lower()
    fact = _framework_fact(snap, fw.name) if snap is not None else None
    ev: List[EvidenceItem] = []
    if snap is None:
        return "", None, [], ev

    majors = _cudnn_majors(snap)
    if "cudnn" in low or (step.step == "conv" and step.device == "gpu"):
        if len(majors) >= 2:
            where = "; ".join(f"cuDNN {m}: {', '.join(w[:2])}" for m, w in sorted(majors.items()))
            for m, w in sorted(majors.items()):
                ev.append(EvidenceItem(f"cuDNN {m}.x", ", ".join(w), "probe:cudnn/loader"))
            return (f"two cuDNN majors on the loader path ({where}); the framework may load the wrong one",
                    "smoke-cudnn-majors",
                    ["Keep one cuDNN major on the loader path: remove the other from LD_LIBRARY_PATH / ldconfig, "
                     "or use the cuDNN wheel the framework pins"], ev)
        built = fact.cudnn_version if fact is not None else None
        bv = parse_version(built)
        if bv is not None and majors and bv.major not in majors:
            found = "; ".join(f"{', '.join(w[:2])}" for w in majors.values())
            ev.append(EvidenceItem(f"{fw.name} built for cuDNN", str(built), "probe:python"))
            ev.append(EvidenceItem("cuDNN found", found, "probe:cudnn/loader"))
            return (f"{fw.name} was built for cuDNN {bv.major}.x but the loader finds {found}", "smoke-cudnn-major-mismatch",
                    [f"Install cuDNN {bv.major}.x for {fw.name} (e.g. the nvidia-cudnn-cu* wheel it requires)"], ev)

    if any(n in low for n in ("no kernel image", "no_binary_for_gpu", "not compatible with the current pytorch",
                               "cuda capability sm_", "invalid device function")):
        archs = list(fact.arch_list or []) if fact is not None else []
        ccs = _gpu_ccs(snap)
        if archs and ccs:
            name, cc = ccs[0]
            ev.append(EvidenceItem(f"{fw.name} arch list", " ".join(archs), "probe:python"))
            ev.append(EvidenceItem("GPU compute capability", f"{name}: {cc}", "probe:nvidia"))
            return (f"{fw.name} has kernels for {archs[0]} ... {archs[-1]} only; GPU 0 ({name}) is sm_{cc.replace('.', '')}",
                    f"smoke-arch-{fw.name}", [f"Install a {fw.name} build that includes sm_{cc.replace('.', '')}"], ev)
        return ("the build has no kernels for this GPU's architecture", f"smoke-arch-{fw.name}", [], ev)

    if any(n in low for n in ("driver version is insufficient", "insufficient_driver", "insufficientdriver",
                               "unsupported_ptx_version", "unsupported toolchain", "driver is too old")):
        drv = getattr(snap, "driver", None)
        built = fact.cuda_version if fact is not None else None
        if drv is not None and drv.version:
            ev.append(EvidenceItem("driver", f"{drv.version} (CUDA <= {drv.cuda_version or '?'})", drv.source or "probe:nvidia"))
            return (f"the NVIDIA driver {drv.version} supports CUDA <= {drv.cuda_version or '?'}"
                    + (f" but {fw.name} was built for CUDA {built}" if built else ""), "smoke-driver-too-old",
                    ["Upgrade the NVIDIA driver, or install a build for an older CUDA"], ev)

    if "out of memory" in low or "resource_exhausted" in low or "out_of_memory" in low:
        return ("the GPU ran out of memory; other processes may hold it (see nvidia-smi)", None,
                ["$ nvidia-smi"], ev)

    if "libdevice" in low or "ptxas" in low:
        tk = getattr(snap, "default_toolkit", None)
        if tk is not None:
            ev.append(EvidenceItem("CUDA toolkit", f"{tk.version} at {tk.path}", "probe:toolkits"))
            return (f"XLA cannot find ptxas / libdevice; a CUDA toolkit is at {tk.path}", "smoke-xla-cuda-data",
                    [f"$ export XLA_FLAGS=--xla_gpu_cuda_data_dir={tk.path}"], ev)
        return ("XLA cannot find ptxas / libdevice and no CUDA toolkit was found", "smoke-xla-cuda-data",
                ["Install the nvidia-cuda-nvcc wheel the framework's CUDA extra pins, or a CUDA toolkit"], ev)

    missing = re.search(r"(lib[\w.+-]*?\.so(?:\.[\d.]+)?)[^\n]*?(?:cannot open shared object file|: not found)", text) or \
        re.search(r"Could not load dynamic library '([^']+)'", text)
    if missing:
        lib = missing.group(1)
        ldp = list(getattr(getattr(snap, "loader", None), "ld_library_path", []) or [])
        ev.append(EvidenceItem("LD_LIBRARY_PATH", ":".join(ldp) or "(unset)", "env:LD_LIBRARY_PATH"))
        return (f"the loader cannot find {lib} (LD_LIBRARY_PATH: {':'.join(ldp) or 'unset'})", f"smoke-missing-{lib}",
                [f"Install the package that ships {lib} (for pip builds: the nvidia-* wheels the framework requires)"], ev)

    if "python.h" in low:
        return ("the C++ compile needs Python's development headers", "smoke-python-headers",
                ["$ sudo apt-get install python3-dev   # or python3-devel on RHEL/Fedora"], ev)

    if step.status == "crashed":
        preload = list(getattr(getattr(snap, "loader", None), "ld_preload", []) or [])
        if preload:
            ev.append(EvidenceItem("LD_PRELOAD", " ".join(preload), "env:LD_PRELOAD"))
            return (f"LD_PRELOAD forces {' '.join(preload)} into the process; a crash there often comes from it",
                    "smoke-ld-preload", ["Run without LD_PRELOAD to check"], ev)
    if step.status == "timeout" and step.step in ("import", "devices"):
        drv = getattr(snap, "driver", None)
        if drv is not None and drv.state not in ("ok", "unknown", "not_installed"):
            ev.append(EvidenceItem("driver state", drv.state, drv.source or "probe:nvidia"))
            return (f"the NVIDIA driver is in state {drv.state}; GPU initialisation can hang then", "smoke-driver-state",
                    ["$ nvidia-smi"], ev)
    return "", None, [], ev


# -- findings -------------------------------------------------------------------------------------

def _subject(fw: FrameworkResult) -> str:
    return f"{fw.name} {fw.version}".strip()


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:300] if text.strip() else ""


def _step_evidence(fw: FrameworkResult, step: StepResult) -> List[EvidenceItem]:
    ev = [EvidenceItem(f"{step.label} status", step.status + (f" after {step.duration_ms / 1000:.1f} s" if step.duration_ms else ""),
                       f"smoke:{fw.name}")]
    if step.detail:
        ev.append(EvidenceItem(f"{step.label} detail", step.detail[:1200], f"smoke:{fw.name}"))
    for key in ("max_abs_err", "max_rel_err", "tolerance"):
        if key in step.numbers:
            ev.append(EvidenceItem(key, f"{step.numbers[key]:.3g}", f"smoke:{fw.name}"))
    if fw.outcome and fw.outcome != "exit 0":
        ev.append(EvidenceItem("process", fw.outcome, f"smoke:{fw.name}"))
    for note in fw.notes[:5]:
        ev.append(EvidenceItem("stderr", note, f"smoke:{fw.name}"))
    return ev


def _finding(rid: str, severity: str, fw: FrameworkResult, message: str, evidence=None, fix=None, cause=None) -> Finding:
    return Finding(id=rid, severity=severity, title=_TITLES[rid], message=message, area=AREA.get(fw.name, "python"),
                   evidence=list(evidence or []), fix=list(fix or []), cause=cause, subject=_subject(fw))


def _no_gpu_finding(fw: FrameworkResult, steps: Sequence[StepResult], snap, required: bool) -> Finding:
    dev = fw.step("devices")
    why = _first_line(dev.detail) if dev is not None else ""
    machine_gpus = list(getattr(snap, "gpus", []) or []) if snap is not None else []
    build = fw.build or ((dev.info.get("build") if dev is not None else "") or "")
    gpu_build = build.startswith(("cuda", "rocm"))
    evidence = [EvidenceItem("devices", why, f"smoke:{fw.name}")] + [EvidenceItem("stderr", n, f"smoke:{fw.name}")
                                                                      for n in fw.notes[:5]]
    if machine_gpus:
        evidence.append(EvidenceItem("GPUs on the machine", "; ".join(g.name for g in machine_gpus), "probe:nvidia"))
    name = f"{fw.name} ({build} build)" if build else fw.name
    if required:
        sev, msg = "error", f"{name} sees no GPU, and --require-gpu asks for one: {why}"
    elif machine_gpus and gpu_build:
        sev, msg = "warning", (f"{name} sees no GPU although the machine has {len(machine_gpus)}: {why}")
    elif machine_gpus:
        sev, msg = "info", f"{name} cannot use the machine's GPU: {why}"
    else:
        sev, msg = "info", f"{fw.name}: no GPU here, the GPU steps were not run ({why})"
    return _finding("ED710", sev, fw, msg, evidence, cause=f"smoke-no-gpu-{fw.name}")


def smoke_findings(results, snapshot) -> List[Finding]:
    """Findings for `check --smoke`: one per failed step (explained by the snapshot's facts where
    possible), one when a framework sees no GPU, notable unavailable steps, and an ok per passing framework."""
    run = results if isinstance(results, SmokeRun) else SmokeRun.from_dict(results)
    out: List[Finding] = []
    for problem in run.problems:
        out.append(Finding(id="ED710", severity="error", title=_TITLES["ED710"], message=problem, area="python",
                           subject=run.python))
    for fw in run.frameworks:
        bad = [s for s in fw.steps if s.status in BAD and s.code != "no_gpu" and
               not (s.device == "gpu" and s.detail.startswith("a GPU is required"))]
        no_gpu = [s for s in fw.steps if s.device == "gpu" and s.code == "no_gpu"]
        for step in bad:
            hint, cause, fix, ev = explain(fw, step, snapshot)
            message = f"{fw.name}: {step.label} {step.status.replace('_', ' ')}: {_first_line(step.detail)}"
            if hint:
                message += f" — {hint}"
            out.append(_finding(STEP_IDS.get(step.step, "ED701"), "error", fw, message,
                                _step_evidence(fw, step) + ev, fix, cause))
        if no_gpu:
            out.append(_no_gpu_finding(fw, no_gpu, snapshot, run.require_gpu))
        for step in fw.steps:
            if step.status == "not_available" and step.code in NOTABLE_NOT_AVAILABLE:
                out.append(_finding("ED711", "info", fw, f"{fw.name}: {step.label} not available: {_first_line(step.detail)}",
                                    _step_evidence(fw, step)))
        if not bad and fw.status not in BAD:
            ran = [s.label for s in fw.steps if s.status == "ok" and s.step not in ("import", "devices")]
            gpus = fw.gpus
            where = "; ".join(f"{g.get('name')} ({g.get('compute_capability') or g.get('arch') or '?'})" for g in gpus) \
                if gpus else "CPU only"
            out.append(_finding("ED700", "ok", fw, f"{_subject(fw)}: smoke test passed on {where}: {', '.join(ran)}",
                                [EvidenceItem("duration", f"{fw.duration_ms / 1000:.1f} s", f"smoke:{fw.name}")]))
    return out


def add_hints(run: SmokeRun, snapshot) -> None:
    """Fill `hint` of every failed step that the snapshot's facts explain (for `envdoctor smoke`)."""
    for fw in run.frameworks:
        for step in fw.steps:
            if step.status in BAD and not step.hint:
                hint, _, fix, _ = explain(fw, step, snapshot)
                if hint:
                    step.hint = hint + (f" (fix: {fix[0]})" if fix else "")
