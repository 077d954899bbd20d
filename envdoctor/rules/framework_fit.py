"""ED690: an installed build of a framework that is one module of envdoctor/frameworks/ (onnxruntime-gpu,
paddlepaddle-gpu), judged by the same ``fits`` that lock and gate use: driver (minor-version compatibility, PTX
JIT), GPU (the build's CUDA, the vendor's floor), cuDNN on the GPU, Python.  The facts are the framework's
matrices table (matrices/onnxruntime.toml, matrices/paddle.toml) and the installed files."""
from __future__ import annotations

from typing import Any, List

from envdoctor.facts.choices import unknown_note
from envdoctor.facts.platform import platform_of
from envdoctor.facts.versions import parse_version
from envdoctor.frameworks import registry
from envdoctor.frameworks.base import GpuTarget, Target
from envdoctor.rules.base import EvidenceItem, Finding, Rule, rule

AREA_OF = {"driver": "driver", "python": "python", "platform": "platform", "cuda": "driver"}


def _target(ctx: Any) -> Target:
    snap = ctx.snap
    pv = parse_version(ctx.python_version)
    gpus = [GpuTarget(cc, g.name or "") for g in ctx.gpus for cc in [ctx.gpu_cc(g)] if cc]
    return Target(frameworks=[], driver=ctx.driver_version if ctx.driver_ok else None, gpus=gpus,
                  python=f"{pv.major}.{pv.minor}" if pv is not None else None,
                  platform=platform_of(snap) or "linux-x86_64", wsl=bool(snap.platform.wsl))


@rule(
    id="ED690", name="framework-build-fit", title="A framework build does not fit this machine (driver, GPU, cuDNN, Python)",
    severity="error", area="gpu",
    rationale="""
onnxruntime-gpu and paddlepaddle-gpu are judged by their framework modules (envdoctor/frameworks/onnxruntime.py,
paddle.py) with the same judgement `lock` uses to choose a build and `gate` uses on a requirements file: the
build's CUDA against the driver (minor-version compatibility; PTX JIT needs the toolkit's driver), the GPU against
what the build's CUDA can produce and the vendor's own floor (PaddlePaddle: compute capability 3.5), the cuDNN the
build brings against the GPU, and the release's Python tags. The build's CUDA and cuDNN come from its installed
files (onnxruntime/capi/build_and_package_info.py, paddle/version/__init__.py), else from the matrices row.
""",
    example="paddlepaddle-gpu 2.6.2 (CUDA 11.8) on driver 450.51.06: ED690 error, the driver cannot run it (needs >= 450.80.02).",
    references=["https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html#requirements",
                "https://www.paddlepaddle.org.cn/documentation/docs/en/install/pip/linux-pip_en.html"],
)
def framework_build_fit(ctx: Any, r: Rule) -> List[Finding]:
    out: List[Finding] = []
    target = None
    for fw in ctx.frameworks:
        spec = registry.find(fw.name)
        installed = getattr(spec, "installed_candidate", None)
        if spec is None or installed is None or ctx.matrices is None:
            continue
        if target is None:
            target = _target(ctx)
        cand = installed(fw, target.platform, planned="gate" in ctx.extra)
        if cand is None:
            continue
        skip = getattr(spec, "check_skips", ()) if ctx.has_nvidia_gpu else ()  # the owning rule needs a usable GPU
        for prob in spec.fits(ctx.matrices, cand, target):
            kind = prob.key.split(":")[0]
            if kind in skip:
                continue
            ev = [EvidenceItem(f"{cand.label} built for CUDA", str(cand.cuda), cand.source)]
            if cand.cudnn:
                ev.append(EvidenceItem(f"{cand.label} cuDNN", cand.cudnn, cand.source))
            fixes = []
            choice = spec.choose(ctx.matrices, target)
            if choice is not None and choice.version != cand.version:
                fixes.append(f"Install the newest {spec.name} build that fits this machine "
                             f"(`envdoctor lock --{spec.name}`{unknown_note(choice)}):")
                fixes.extend(f"$ pip install \"{line}\"" for line in spec.install_requirements(choice))
            out.append(r.finding(f"{prob.message}.", evidence=ev, fix=fixes, cause=f"build-{kind}",
                                 subject=cand.label, area=AREA_OF.get(kind, "gpu")))
    return out
