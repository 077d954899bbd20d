"""ED660-ED661: conda and pip mixed in one environment."""
from __future__ import annotations

from typing import List

from envdoctor.lazyre import lazy_re
from envdoctor.rules.base import EvidenceItem, Finding, Rule, rule
from envdoctor.context import Context

_CONDA_CUDA = lazy_re(r"^(cudatoolkit|cuda-(cudart|runtime|libraries|nvrtc|toolkit)|cudnn|nccl)$")
_CONDA_FW = {"pytorch": "torch", "tensorflow": "tensorflow", "tensorflow-base": "tensorflow", "jaxlib": "jaxlib",
             "jax": "jax", "numpy": "numpy", "torchvision": "torchvision"}


@rule(
    id="ED660", name="conda-cuda-next-to-pip-wheels", title="conda's CUDA libraries next to pip's nvidia-* wheels in one environment",
    severity="warning", area="environment",
    rationale="""
A conda environment whose cudatoolkit / cuda-* / cudnn packages put CUDA libraries into <prefix>/lib,
with pip-installed framework wheels that bring their own nvidia-* wheels: two copies of cuDNN, cuBLAS
and the runtime, and which one a framework loads depends on RUNPATH, LD_LIBRARY_PATH (conda activation
scripts often set it) and import order. Mismatches show as "undefined symbol" or cuDNN version errors.
""",
    example="conda cudatoolkit 11.8 and cudnn 8.9 with a pip torch 2.3 +cu121 and nvidia-cudnn-cu12 8.9.2.26: ED660.",
    references=["https://docs.conda.io/projects/conda/en/stable/user-guide/tasks/manage-pkgs.html#installing-non-conda-packages",
                "https://pytorch.org/get-started/locally/"],
)
def conda_cuda_next_to_pip(ctx: Context, r: Rule) -> List[Finding]:
    inst = ctx.snap.installers
    conda_cuda = [p for p in inst.conda_packages if _CONDA_CUDA.match(p.name)]
    wheels = sorted(d for d, who in inst.dists.items() if d.startswith("nvidia-") and who.lower() != "conda"
                    and d not in ("nvidia-ml-py", "nvidia-ml-py3"))
    if not conda_cuda or not wheels:
        return []
    return [r.finding(f"conda packages {', '.join(f'{p.name} {p.version}' for p in conda_cuda)} and pip wheels "
                      f"{', '.join(wheels)} both bring CUDA libraries into {inst.conda_prefix}.",
                      evidence=[EvidenceItem("conda-meta", p.file, f"file:{p.file}") for p in conda_cuda[:3]]
                      + [EvidenceItem("INSTALLER", f"{w}: {inst.dists[w]}", "dist-info/INSTALLER") for w in wheels[:3]],
                      fix=["use one installer for the GPU stack: a fresh env with only conda packages, or only pip wheels",
                           "$ conda remove cudatoolkit cudnn  (when the frameworks come from pip)"])]


@rule(
    id="ED661", name="framework-installed-twice", title="A framework installed twice (conda and pip, or two copies on sys.path)",
    severity="warning", area="python",
    rationale="""
`pip install torch` into a conda env that has conda's pytorch (or a --user install over a venv's) leaves
two records of one package: conda-meta says one version, the dist-info that imports says another, and
the next `conda install` or `pip uninstall` removes files of the other. The copy that imports is the
first on sys.path; envdoctor judges that one and says which it is.
""",
    example="conda-meta pytorch 2.1.0 (cuda118) and a pip torch 2.3.1 dist-info in the same site-packages: ED661.",
    references=["https://www.anaconda.com/blog/using-pip-in-a-conda-environment",
                "https://packaging.python.org/en/latest/specifications/recording-installed-packages/#the-installer-file"],
)
def framework_installed_twice(ctx: Context, r: Rule) -> List[Finding]:
    inst = ctx.snap.installers
    out = []
    for p in inst.conda_packages:
        dist = _CONDA_FW.get(p.name)
        if dist is None:
            continue
        who = inst.dists.get(dist, "")
        fw = ctx.snap.framework(dist)
        installed = fw.version if fw is not None else ctx.snap.python.packages.get(dist)
        if who and who.lower() != "conda" and installed:
            out.append(r.finding(f"conda's {p.name} {p.version} ({p.build}) is recorded in conda-meta, but the {dist} "
                                 f"that imports is {installed}, installed by {who}.", subject=dist,
                                 evidence=[EvidenceItem("conda-meta", f"{p.name} {p.version} {p.build} {p.channel}", f"file:{p.file}"),
                                           EvidenceItem("INSTALLER", f"{dist}: {who}", "dist-info/INSTALLER")],
                                 fix=[f"keep one: $ pip uninstall {dist} && conda install --force-reinstall {p.name}",
                                      f"or $ conda remove --force {p.name} and keep pip's {dist}"]))
    for dist, copies in sorted(inst.copies.items()):
        if dist in ("torch", "tensorflow", "jax", "jaxlib", "numpy") or dist.startswith(("nvidia-", "tensorflow")):
            out.append(r.finding(f"{dist} is installed {len(copies)} times on sys.path: " + "; ".join(copies) + ".",
                                 subject=dist, fix=[f"$ python -m pip uninstall {dist}  (repeat until one copy is left, then reinstall it)"]))
    return out
