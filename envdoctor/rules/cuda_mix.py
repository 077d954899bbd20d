"""ED662: frameworks built for different CUDA majors in one environment (torch +cu130 next to jax[cuda12]).

The judgement is ``envdoctor.facts.cuda_mix.mixed_majors``, the one lock uses to prefer one CUDA major and to warn
when it cannot; gate runs this rule on its planned environment, so the three say the same."""
from __future__ import annotations

from typing import List, Optional, Tuple

from envdoctor.facts.builds import cuda_builds
from envdoctor.facts.cuda_mix import REFERENCES, majors_of, mixed_majors
from envdoctor.facts.platform import platform_key
from envdoctor.frameworks import registry
from envdoctor.rules.base import EvidenceItem, Finding, Rule, rule
from envdoctor.context import Context


def _builds(ctx: Context) -> List[Tuple[str, Optional[int], Optional[str], str, str]]:
    """(label, CUDA major, cuDNN, CUDA, where that was read) of every framework's CUDA build: torch, TF, JAX and
    CuPy from facts/builds.py, the table frameworks (onnxruntime-gpu, paddlepaddle-gpu) as their modules read them."""
    out: List[Tuple[str, Optional[int], Optional[str], str, str]] = [
        (b.label, b.major, b.fw.cudnn_version, b.cuda, b.cuda_source) for b in cuda_builds(ctx)]
    platform = platform_key(ctx.snap) or "linux-x86_64"
    for fw in ctx.frameworks:
        installed = getattr(registry.find(fw.name), "installed_candidate", None)
        cand = installed(fw, platform, planned="gate" in ctx.extra) if installed is not None else None
        if cand is not None and cand.kind == "cuda" and cand.cuda:
            out.append((cand.label, cand.cuda_major, cand.cudnn, cand.cuda, cand.source))
    return out


@rule(
    id="ED662", name="cuda-majors-mixed", title="Frameworks built for different CUDA majors in one environment",
    severity="warning", area="environment",
    rationale="""
pip installs the CUDA 12 and CUDA 13 nvidia-* wheels side by side (nvidia-cudnn-cu12 and nvidia-cudnn-cu13 are
different distributions), and a process that imports one framework loads only its own libraries, so each framework
works alone. A process that imports both breaks: cuDNN 9 is libcudnn.so.9 and NCCL is libnccl.so.2 in every CUDA
major, the dynamic loader keeps one library per soname, and the first import's copy serves both ("the first one to
load it wins", jax-ml/jax#19004). The other framework then fails its CUDA start ("DNN library initialization
failed", a cuDNN version check) or falls back to the CPU. A warning, because separate processes are fine; lock
chooses one CUDA major whenever the data allows it and warns with the same words when it cannot.
""",
    example="torch 2.9.0+cu130 with jax[cuda12]: ED662; install jax[cuda13], or torch for CUDA 12, or use two "
            "environments.",
    references=REFERENCES,
)
def cuda_majors_mixed(ctx: Context, r: Rule) -> List[Finding]:
    builds = _builds(ctx)
    facts = [(label, mj, cudnn) for label, mj, cudnn, _, _ in builds]
    why = mixed_majors(facts)
    if why is None:
        return []
    fix = [f"keep one CUDA major: reinstall {', '.join(b[0] for b in builds if b[1] != mj)} as a CUDA {mj} build"
           for mj in reversed(majors_of(facts))]
    fix.append("or keep the frameworks in separate environments (or separate processes)")
    return [r.finding(why, subject=", ".join(b[0] for b in builds), fix=fix,
                      evidence=[EvidenceItem(f"{b[0]} built for CUDA", b[3], b[4]) for b in builds])]
