"""ED001: the plain statement of where the frameworks will run when there is no NVIDIA GPU;
ED002: a probe that failed (that part of the machine is unknown, never "absent");
ED003: a rule that failed (envdoctor could not judge; the engine reports it, see rules/engine.py)."""
from __future__ import annotations

from typing import List

from envdoctor.rules.base import EvidenceItem, Finding, Rule, rule
from envdoctor.context import Context

# only states the nvidia probe concluded; "unknown" (or a probe that failed) never means "no GPU"
_NO_GPU_STATES = ("not_installed", "no_devices")
# a probe's status other than these means it could not determine its part ("skipped": not probed on purpose)
PROBE_ANSWERED = ("ok", "skipped")
# what each probe determines, and the report area it belongs to
PROBE_FACTS = {
    "platform": ("the platform (OS, glibc, WSL, container)", "platform"),
    "nvidia": ("whether there is an NVIDIA driver and GPU", "driver"),
    "toolkits": ("the CUDA toolkits", "toolkit"),
    "python": ("the Python environment and its frameworks", "python"),
    "rocm": ("the ROCm installation", "gpu"),
    "cudnn": ("the cuDNN libraries", "cudnn"),
    "loader": ("what the library loader finds (LD_LIBRARY_PATH, loader cache)", "environment"),
    "kernels": ("the Jupyter kernels and the Python each runs", "python"),
}


def unanswered(snap) -> list:
    """A ProbeStatus for every probe that could not determine its part: the snapshot's failed records, and the
    nvidia probe's when the snapshot holds no driver answer (no `driver` section, or state "unknown") yet no record
    says it failed. The live probe never leaves "unknown" without one (it fails, ED002), so such a snapshot is
    old, cut short or edited: its driver is as unknown as a failed probe's, never an all-clear."""
    from envdoctor.snapshot import ProbeStatus

    out = [p for p in snap.probes if p.status not in PROBE_ANSWERED]
    nvidia = snap.probe("nvidia")
    if snap.driver.state == "unknown" and (nvidia is None or nvidia.status == "ok"):
        out.append(ProbeStatus("nvidia", "unknown", "no driver answer in the snapshot (state unknown, no failure "
                                                    "recorded)"))
    return out


def failed_probe(snap, name: str):
    """The ProbeStatus of probe `name` when it could not determine its part, else None."""
    return next((p for p in unanswered(snap) if p.name == name), None)


@rule(
    id="ED001",
    name="no-nvidia-gpu",
    title="No NVIDIA GPU: the frameworks run on the CPU",
    severity="info",
    area="gpu",
    rationale="""
A machine without an NVIDIA GPU and driver is a healthy CPU machine: torch, tensorflow and jax run
on the CPU there, whatever build is installed. envdoctor says so plainly instead of raising errors
about CUDA versions that cannot matter. When a driver is installed but broken, other rules
(ED010-ED019) explain that instead.
""",
    example="A laptop without an NVIDIA GPU, torch 2.13.0+cpu and jax installed: `ED001 info`, exit code 0.",
    references=["https://docs.nvidia.com/cuda/cuda-installation-guide-linux/"],
)
def no_nvidia_gpu(ctx: Context, r: Rule) -> List[Finding]:
    snap = ctx.snap
    if snap.gpus or snap.driver.state not in _NO_GPU_STATES or failed_probe(snap, "nvidia") is not None:
        return []  # a failed nvidia probe is ED002's: unknown, not absent
    if snap.driver.state == "no_devices" and snap.driver.version:
        return []  # a driver without devices is ED01x's business
    if snap.rocm.installed and snap.rocm.gpus:
        return []
    names = [f"{fw.name} {fw.version}" for fw in ctx.frameworks if fw.name in ("torch", "tensorflow", "jax")]
    where = (", ".join(names) + " will run on the CPU") if names else "GPU frameworks would run on the CPU"
    toolkit = snap.default_toolkit
    extra = f" (a CUDA {toolkit.version} toolkit is installed at {toolkit.path}, but no driver to run it)" if toolkit and toolkit.version else ""
    ev = [EvidenceItem("driver state", snap.driver.state, snap.driver.source or "probe:nvidia")]
    if toolkit is not None:
        ev.append(EvidenceItem("CUDA toolkit", f"{toolkit.version} at {toolkit.path}", toolkit.version_source))
    return [r.finding(f"No NVIDIA GPU or driver found: {where}{extra}.", evidence=ev, subject="machine")]


@rule(
    id="ED002",
    name="probe-failed",
    title="envdoctor could not determine part of the machine",
    severity="warning",
    area="environment",
    rationale="""
Each part of the snapshot comes from a probe (the NVIDIA driver and GPUs, the CUDA toolkits, cuDNN,
the Python environment, the loader, the platform). When a probe fails (a tool printed something
envdoctor cannot read, timed out, or the probe itself raised), that part of the machine is unknown,
not absent: envdoctor says so, and no other rule concludes "no GPU" or "no driver" from it. The
report's area line for that part is never shown as fine. Probes skipped on purpose (the Python
environment of an image root without --python, facts a gate target did not state) are not failures.
""",
    example="A fake nvidia-smi that prints `inf` for memory.total: `ED002 warning could not determine whether "
            "there is an NVIDIA driver and GPU: the nvidia probe failed (OverflowError: ...)` instead of "
            "`ED001 No NVIDIA GPU`.",
    references=["docs/report.md", "docs/snapshot.md"],
)
def probe_failed(ctx: Context, r: Rule) -> List[Finding]:
    out = []
    for p in unanswered(ctx.snap):
        what, area = PROBE_FACTS.get(p.name, (f"the {p.name} part of the machine", "environment"))
        why = p.reason or p.status
        rest = "What it did not read" if p.status == "partial" else "That part of the machine"
        out.append(r.finding(
            f"envdoctor could not determine {what}: the {p.name} probe {_STATUS_WORDS.get(p.status, p.status)} ({why}). "
            f"{rest} is unknown, not absent.",
            area=area, subject=f"probe {p.name}",
            evidence=[EvidenceItem(f"probe {p.name}", f"{p.status}: {why}", f"probe:{p.name}")],
            fix=["Run `envdoctor probe --format json` and see `probes`; a tool that prints something unexpected "
                 "is worth a bug report with its output."]))
    return out


_STATUS_WORDS = {"error": "failed", "timeout": "timed out", "unknown": "could not answer",
                 "partial": "answered only in part"}


@rule(
    id="ED003",
    name="rule-failed",
    title="envdoctor could not judge",
    severity="warning",
    area="environment",
    rationale="""
A rule that raises while judging (a fact shaped unlike anything it was written for, a bug) never sinks
the report, but its part of the machine is then unchecked: the report says so with a warning naming the
rule (its ID is the finding's subject), so `--strict` fails and nobody reads "No issues found!" into it.
""",
    example="ED300 raised TypeError on an odd snapshot: `ED003 warning envdoctor could not judge ED300 (...)`.",
    references=["docs/report.md"],
)
def rule_failed(ctx: Context, r: Rule) -> List[Finding]:
    return []  # produced by the engine (envdoctor.rules.engine.crash_finding) for a rule that raised
