"""ED680-ED683: deployment runtimes -- ONNX Runtime's CUDA execution provider, the TensorRT wheels' CUDA line,
torch's ONNX exporter prerequisites. The per-release facts are data (matrices/onnxruntime.toml, matrices/runtimes.toml)."""
from __future__ import annotations

import re
from typing import List, Optional, Tuple


from envdoctor.facts.builds import cuda_builds
from envdoctor.facts.driver import driver_facts, driver_runs
from envdoctor.facts.versions import parse_version
from envdoctor.knowledge.framework_tables import row_for
from envdoctor.rules._runtime_data import runtimes_rows
from envdoctor.rules.base import EvidenceItem, Finding, Rule, rule
from envdoctor.context import Context

DATA = "matrices/runtimes.toml"
ORT_GPU_FIX = "$ pip uninstall -y onnxruntime onnxruntime-gpu && pip install onnxruntime-gpu"


def _major(text: Optional[str]) -> Optional[str]:
    m = re.match(r"\s*(\d+)", str(text or ""))
    return m.group(1) if m else None


def _onnxruntimes(ctx) -> list:
    return [fw for fw in ctx.frameworks if fw.name == "onnxruntime"]


def _ort_needs(fw) -> Tuple[Optional[str], Optional[str], str]:
    """The CUDA and cuDNN majors an onnxruntime-gpu loads: its build info, else the data row for its release."""
    cuda, cudnn = _major(fw.cuda_version), _major(fw.cudnn_version)
    source = fw.evidence[-1].source if fw.evidence and (cuda or cudnn) else ""
    v = parse_version(fw.version)
    row = row_for("onnxruntime.toml", v.public) if v is not None and not (cuda and cudnn) else None
    if row is not None:  # the framework module's table (envdoctor/frameworks/onnxruntime.py)
        cuda, cudnn = cuda or _major(row.cuda), cudnn or str(row.cudnn_major)
        source = "; ".join(x for x in (source, f"matrices/onnxruntime.toml: {row.source}") if x)
    return cuda, cudnn, source


def _found(ctx, lib: str, wheel: str, major: str) -> List[str]:
    """Where a library of that major is on this machine: a pip wheel, the loader's record, a CUDA toolkit / cuDNN."""
    out = []
    for name, version in sorted(ctx.snap.python.packages.items()):
        if re.match(rf"^{re.escape(wheel)}-cu\d+$", name) and _major(version) == major:
            out.append(f"{name} {version}")
    for x in ctx.snap.loader.libraries:
        if x.name == lib and _major(x.version) == major:
            out.append(x.path)
    if lib == "libcudart":
        out += [t.path for t in ctx.snap.toolkits if _major(t.version) == major]
    if lib == "libcudnn":
        out += [c.path or c.kind for c in ctx.snap.cudnn if _major(c.version) == major]
    return out


@rule(
    id="ED680", name="onnxruntime-wheel", title="ONNX Runtime's CUDA execution provider is not in the installed wheel",
    severity="error", area="environment",
    rationale="""
CUDAExecutionProvider ships only in onnxruntime-gpu. The plain `onnxruntime` wheel is CPU-only: on a GPU machine
InferenceSession(..., providers=["CUDAExecutionProvider", ...]) warns and runs on the CPU. Both wheels install the
same `onnxruntime` package folder, so with onnxruntime and onnxruntime-gpu installed together whichever was
installed last owns the files (capi/build_and_package_info.py names it) and uninstalling either breaks the other:
the classic clash, which ORT's own print_debug_info() warns about ("multiple onnxruntime packages are installed to
the same location").
""",
    example="onnxruntime 1.20.1 and onnxruntime-gpu 1.21.0 in one venv: ED680 error, uninstall both, install one.",
    references=["https://onnxruntime.ai/docs/install/#python-installs",
                "https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html#requirements"],
)
def onnxruntime_wheel(ctx: Context, r: Rule) -> List[Finding]:
    orts = _onnxruntimes(ctx)
    if len(orts) > 1:
        names = ", ".join(f"{fw.distribution} {fw.version}" for fw in orts)
        return [r.finding(
            f"{names} are installed together: they share one onnxruntime/ folder, so the files are those of the one "
            "installed last and the CUDA execution provider may or may not be there.",
            subject="onnxruntime", evidence=[EvidenceItem(fw.distribution, fw.version, fw.evidence[0].source if fw.evidence
                                                          else "pyenv") for fw in orts], fix=[ORT_GPU_FIX])]
    if orts and orts[0].build == "cpu" and ctx.has_nvidia_gpu:
        fw = orts[0]
        return [r.finding(
            f"{fw.distribution} {fw.version} is the CPU-only wheel: CUDAExecutionProvider is not available and "
            "sessions run on the CPU although this machine has an NVIDIA GPU.", severity="warning",
            subject=f"{fw.distribution} {fw.version}", fix=[ORT_GPU_FIX])]
    return []


@rule(
    id="ED681", name="onnxruntime-cuda-deps", title="onnxruntime-gpu will not load its CUDA execution provider",
    severity="warning", area="environment",
    rationale="""
onnxruntime-gpu loads libonnxruntime_providers_cuda at session creation; it needs the CUDA runtime and cuDNN of the
majors it was built for (ORT's table: CUDA 11.8 builds run on any 11.x, 12.x builds on any 12.x; cuDNN 8 and 9 are
not interchangeable; from 1.19 the index's default build is CUDA 12 / cuDNN 9) and a driver that runs that CUDA.
When one is missing ORT logs "Failed to create CUDAExecutionProvider. Require cuDNN 9.* and CUDA 12.*" and falls back
to the CPU. The majors come from the wheel's capi/build_and_package_info.py where it says, else matrices/onnxruntime.toml.
""",
    example="onnxruntime-gpu 1.19.2 next to torch 2.3.1+cu118 (cuDNN 8 wheels only): ED681, no cuDNN 9 found.",
    references=["https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html#requirements",
                "https://github.com/microsoft/onnxruntime/issues/21769"],
)
def onnxruntime_cuda_deps(ctx: Context, r: Rule) -> List[Finding]:
    orts = _onnxruntimes(ctx)
    if len(orts) != 1 or orts[0].build != "cuda" or not ctx.has_nvidia_gpu:
        return []  # ED680 speaks about clashes; without a GPU there is no provider to load
    fw = orts[0]
    cuda, cudnn, source = _ort_needs(fw)
    if not cuda:
        return []
    label = f"{fw.distribution} {fw.version}"
    ev = [EvidenceItem("needs", f"CUDA {cuda}.x, cuDNN {cudnn or '?'}.x", source)]
    df = driver_facts(ctx)
    if df is not None and driver_runs(ctx, df, cuda) is False:
        return [r.finding(f"{label} needs CUDA {cuda}.x; driver {df.describe()} cannot run it, so "
                          "CUDAExecutionProvider fails to load and sessions run on the CPU.", severity="error",
                          subject=label, evidence=ev, fix=[f"upgrade the NVIDIA driver to one that runs CUDA {cuda}.x",
                                                           "or install the onnxruntime-gpu release for this driver's CUDA"])]
    missing = []
    if not _found(ctx, "libcudart", "nvidia-cuda-runtime", cuda):
        missing.append(f"CUDA {cuda} runtime (libcudart)")
    if cudnn and not _found(ctx, "libcudnn", "nvidia-cudnn", cudnn):
        missing.append(f"cuDNN {cudnn}")
    if not missing:
        return []
    return [r.finding(
        f"{label} needs CUDA {cuda}.x and cuDNN {cudnn or '?'}.x; not found on this machine (wheels, loader path, "
        f"toolkits): {', '.join(missing)}. Predicted: 'Failed to create CUDAExecutionProvider', sessions on the CPU.",
        subject=label, evidence=ev,
        fix=[f"$ pip install nvidia-cuda-runtime-cu{cuda} nvidia-cudnn-cu{cuda} nvidia-cublas-cu{cuda} "
             f"nvidia-cufft-cu{cuda} nvidia-curand-cu{cuda}",
             "then load them before the session: import torch first, or onnxruntime.preload_dlls() (1.21+)"])]


def _tensorrt_lines(ctx) -> List[Tuple[str, str, str]]:
    """(dist, suffix, CUDA major) per TensorRT CUDA line installed: names of tensorrt-cuNN* dists, and the lines
    the bare `tensorrt` meta-package requires."""
    rows = {str(row.get("suffix")): row for row in runtimes_rows("tensorrt_line")}
    seen = {}
    names = [n for n in ctx.snap.python.packages if n.startswith("tensorrt")]
    for line in ctx.snap.python.runtime_requires.get("tensorrt", []):
        m = re.match(r"\s*(tensorrt[-_.]cu\d+)", line, re.I)
        if m:
            names.append(m.group(1).lower().replace("_", "-"))
    for name in names:
        m = re.match(r"^tensorrt(?:-lean|-dispatch)?-(cu\d+)", name)
        if m and m.group(1) in rows and m.group(1) not in seen:
            seen[m.group(1)] = (name, m.group(1), str(rows[m.group(1)]["cuda"]))
    return list(seen.values())


@rule(
    id="ED682", name="tensorrt-cuda-line", title="The TensorRT wheels' CUDA line against the driver and the frameworks",
    severity="warning", area="environment",
    rationale="""
TensorRT's pip wheels come per CUDA major: tensorrt-cu12-libs / -bindings for CUDA 12, tensorrt-cu13-* for CUDA 13
(the bare `tensorrt` installs the CUDA 13 line by default in recent releases). The line needs a driver that runs
that CUDA, and in one process next to a framework built for another CUDA major (torch +cu121 with TensorRT cu13,
as torch-tensorrt or TF-TRT use it) two CUDA runtimes and cuBLAS copies get loaded: engine build errors, crashes or
"CUDA initialization failure". Two lines installed together is the same clash inside TensorRT.
""",
    example="tensorrt 10.13 pulling tensorrt-cu13 next to torch 2.5.1+cu124: ED682, pin tensorrt-cu12.",
    references=["https://docs.nvidia.com/deeplearning/tensorrt/latest/installing-tensorrt/install-pip.html",
                "https://docs.nvidia.com/deeplearning/tensorrt/latest/getting-started/support-matrix.html"],
)
def tensorrt_cuda_line(ctx: Context, r: Rule) -> List[Finding]:
    lines = _tensorrt_lines(ctx)
    if not lines:
        return []
    ev = [EvidenceItem(dist, f"CUDA {cuda}", DATA) for dist, _, cuda in lines]
    if len({cuda for _, _, cuda in lines}) > 1:
        return [r.finding("TensorRT wheels of several CUDA lines are installed: "
                          + ", ".join(f"{d} (CUDA {c})" for d, _, c in lines) + "; one process loads both runtimes.",
                          subject="tensorrt", evidence=ev,
                          fix=[f"$ pip uninstall -y {' '.join(d for d, _, _ in lines)}",
                               "then install one line: $ pip install tensorrt-cu<major>"])]
    dist, suffix, cuda = lines[0]
    out = []
    df = driver_facts(ctx)
    if df is not None and driver_runs(ctx, df, cuda) is False:
        out.append(r.finding(f"{dist} is TensorRT's CUDA {cuda} line; driver {df.describe()} cannot run it.",
                             severity="error", subject=dist, evidence=ev,
                             fix=[f"upgrade the driver to one that runs CUDA {cuda}",
                                  "or install the TensorRT line of this driver's CUDA major (tensorrt-cu<major>)"]))
    others = [b for b in cuda_builds(ctx) if _major(b.cuda) != cuda]
    if others:
        out.append(r.finding(
            f"{dist} is TensorRT's CUDA {cuda} line, but " + ", ".join(f"{b.label} is built for CUDA {b.cuda}" for b in others)
            + ": in one process (torch-tensorrt, TF-TRT, ORT's TensorRT provider) two CUDA runtimes are loaded.",
            subject=dist, evidence=ev + [EvidenceItem(b.label, f"CUDA {b.cuda}", b.cuda_source) for b in others],
            fix=[f"install the TensorRT line of the frameworks' CUDA: $ pip install tensorrt-cu{_major(others[0].cuda)}",
                 "or a framework build for CUDA " + cuda]))
    return out


@rule(
    id="ED683", name="torch-onnx-exporter", title="torch's ONNX exporter lacks onnx or onnxscript",
    severity="warning", area="torch",
    rationale="""
torch.onnx.export(dynamo=True) -- the torch.export-based exporter, available from torch 2.5 and the default from
2.9 -- imports the `onnx` and `onnxscript` packages, which torch does not require: without them the export fails at
its first step with ModuleNotFoundError. The rule speaks when the environment shows ONNX intent (onnx, onnxscript or
onnxruntime installed) and torch is new enough; as a warning where dynamo=True is torch's default.
""",
    example="torch 2.9.0 and onnxruntime-gpu installed, onnxscript missing: ED683, pip install onnx onnxscript.",
    references=["https://docs.pytorch.org/tutorials/beginner/onnx/intro_onnx.html",
                "https://docs.pytorch.org/docs/stable/onnx.html"],
)
def torch_onnx_exporter(ctx: Context, r: Rule) -> List[Finding]:
    torch = ctx.framework("torch")
    tv = parse_version(torch.version) if torch else None
    rows = runtimes_rows("torch_onnx")
    packages = ctx.snap.python.packages
    intent = [n for n in packages if n in ("onnx", "onnxscript") or n.startswith("onnxruntime")]
    if torch is None or tv is None or not rows or not intent:
        return []
    row = rows[0]
    since, default_since = parse_version(str(row.get("since"))), parse_version(str(row.get("default_since")))
    if since is None or tv.release < since.release:
        return []
    missing = [n for n in row.get("needs", []) if n not in packages]
    if not missing:
        return []
    is_default = default_since is not None and tv.release >= default_since.release
    how = "torch.onnx.export(...) (dynamo=True is the default here)" if is_default else "torch.onnx.export(..., dynamo=True)"
    return [r.finding(f"torch {torch.version}: {how} needs {' and '.join(row.get('needs', []))}; "
                      f"missing: {', '.join(missing)} (ModuleNotFoundError at export).",
                      severity="warning" if is_default else "info", subject=f"torch {torch.version}",
                      evidence=[EvidenceItem("installed", ", ".join(f"{n} {packages[n]}" for n in sorted(intent)), "pyenv"),
                                EvidenceItem("needs", ", ".join(row.get("needs", [])), f"{DATA}: {row.get('source', '')}")],
                      fix=[f"$ pip install --upgrade {' '.join(missing)}"])]
