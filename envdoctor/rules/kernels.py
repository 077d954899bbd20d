"""ED610-ED611: Jupyter kernels and the VS Code workspace interpreter run a Python without the GPU stack."""
from __future__ import annotations

from typing import List

from envdoctor.rules.base import EvidenceItem, Finding, Rule, rule
from envdoctor.context import Context

GPU_BUILDS = ("cuda", "rocm", "metal", "xpu")
_MAIN = ("torch", "tensorflow", "jax")


def _where(k) -> str:
    return f"kernel '{k.name}'" if k.source == "kernelspec" else "the VS Code workspace interpreter"


@rule(
    id="ED610", name="kernel-interpreter-missing", title="A Jupyter kernel (or the VS Code interpreter) points at a missing Python",
    severity="warning", area="python",
    rationale="""
A kernelspec's kernel.json names the interpreter in argv[0]. When that environment was deleted or moved
(a removed venv, a renamed conda env), Jupyter lists the kernel but it dies at start ("Kernel died",
"No such file or directory"), or a notebook silently runs another Python than the one that holds the GPU
build. The same holds for .vscode/settings.json's python.defaultInterpreterPath.
""",
    example="~/.local/share/jupyter/kernels/gpu/kernel.json with argv[0] = /home/me/old-venv/bin/python, "
            "that venv deleted: ED610, remove or re-create the kernel.",
    references=["https://jupyter-client.readthedocs.io/en/stable/kernels.html#kernel-specs",
                "https://docs.jupyter.org/en/latest/use/jupyter-directories.html"],
)
def kernel_interpreter_missing(ctx: Context, r: Rule) -> List[Finding]:
    out = []
    for k in ctx.snap.kernels.kernels:
        if k.status not in ("missing", "failed"):
            continue
        fix = ([f"$ jupyter kernelspec remove {k.name}", "or re-create it from the right environment: "
                f"$ /path/to/env/bin/python -m ipykernel install --user --name {k.name}"]
               if k.source == "kernelspec" else ["select the interpreter again (Python: Select Interpreter) or fix "
                                                 "python.defaultInterpreterPath in .vscode/settings.json"])
        out.append(r.finding(f"{_where(k)} cannot run: {k.reason or k.status}.", subject=k.name,
                             evidence=[EvidenceItem("interpreter", k.interpreter or "-", f"file:{k.path}")], fix=fix))
    return out


@rule(
    id="ED611", name="kernel-lacks-gpu-frameworks", title="A Jupyter kernel's Python lacks the GPU builds the default Python has",
    severity="warning", area="python",
    rationale="""
The most time-consuming wrong-interpreter case: `envdoctor check` (and `python -c "import torch"`) in the
shell sees the GPU build, but the notebook's kernel runs another environment where the framework is
missing or is a CPU build, so torch.cuda.is_available() is False only in the notebook. With --kernels
each kernel's interpreter is read like --python and compared with the default one.
""",
    example="shell venv: torch 2.5.1+cu124; kernel 'python3' runs /usr/bin/python3 with torch 2.5.1+cpu: ED611.",
    references=["https://ipython.readthedocs.io/en/stable/install/kernel_install.html#kernels-for-different-environments"],
)
def kernel_lacks_gpu_frameworks(ctx: Context, r: Rule) -> List[Finding]:
    if not ctx.snap.kernels.probed:
        return []
    default = {fw.name: fw for fw in ctx.snap.python.frameworks if fw.name in _MAIN and fw.build in GPU_BUILDS}
    if not default:
        return []
    out = []
    for k in ctx.snap.kernels.kernels:
        if k.status != "ok":
            continue
        theirs = {fw.name: fw for fw in k.frameworks}
        lacking = []
        for name, fw in sorted(default.items()):
            other = theirs.get(name)
            if other is None:
                lacking.append(f"{name} is not installed (the default Python has {fw.name} {fw.version}, {fw.build})")
            elif other.build not in GPU_BUILDS:
                lacking.append(f"{name} {other.version} is a {other.build} build (the default Python has {fw.version}, {fw.build})")
        if lacking:
            out.append(r.finding(f"{_where(k)} runs {k.interpreter} (Python {k.python_version}): " + "; ".join(lacking) + ".",
                                 subject=k.name, evidence=[EvidenceItem("interpreter", k.interpreter, f"file:{k.path}")],
                                 fix=[f"$ {ctx.snap.python.executable or 'python'} -m ipykernel install --user --name {k.name}"
                                      " (point the kernel at the environment with the GPU build)",
                                      f"or install the GPU build into {k.interpreter}'s environment"]))
    return out
