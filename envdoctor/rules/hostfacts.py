"""ED670-ED671: the CPU's instruction set and numpy's ABI against the frameworks' builds."""
from __future__ import annotations

from typing import List

from packaging.version import Version

from envdoctor.facts.versions import parse_version
from envdoctor.rules._runtime_data import numpy2_rows
from envdoctor.rules.base import EvidenceItem, Finding, Rule, rule
from envdoctor.context import Context


@rule(
    id="ED670", name="cpu-lacks-avx", title="The CPU lacks AVX / AVX2 that framework wheels assume",
    severity="warning", area="platform",
    rationale="""
TensorFlow's wheels are built with AVX since 1.6 ("The TensorFlow library was compiled to use AVX
instructions, but these aren't available on your machine", then "Illegal instruction (core dumped)" at
import); recent torch and jaxlib x86-64 wheels assume AVX2 in their CPU kernels. Old Xeons, Atoms and
some emulators (QEMU without -cpu host) lack them; /proc/cpuinfo's flags say.
""",
    example="An x86-64 VM whose flags lack avx, with tensorflow installed: ED670.",
    references=["https://www.tensorflow.org/install/pip#hardware_requirements",
                "https://github.com/tensorflow/tensorflow/issues/19584"],
)
def cpu_lacks_avx(ctx: Context, r: Rule) -> List[Finding]:
    h = ctx.snap.host
    if not h.cpu_flags or (ctx.snap.platform.machine or "").lower() not in ("x86_64", "amd64"):
        return []
    missing = [f for f in ("avx", "avx2") if f not in h.cpu_flags]
    fws = [f"{fw.name} {fw.version}" for fw in ctx.frameworks if fw.name in ("tensorflow", "torch", "jaxlib")]
    if not missing or not fws:
        return []
    return [r.finding(f"The CPU ({h.cpu_model or 'model unknown'}) lacks {', '.join(missing)}; "
                      f"{', '.join(fws)} may stop with 'Illegal instruction' at import.",
                      evidence=[EvidenceItem("cpu flags", " ".join(h.cpu_flags), "file:/proc/cpuinfo")],
                      fix=["run on a CPU with AVX2 (a VM: expose the host CPU's flags, e.g. -cpu host)",
                           "or build the framework from source without AVX"])]


@rule(
    id="ED671", name="numpy-abi", title="NumPy 2 with a framework built against NumPy 1.x",
    severity="error", area="python",
    rationale="""
Extension modules compiled against NumPy 1.x cannot run with NumPy 2 ("A module that was compiled using
NumPy 1.x cannot be run in NumPy 2.0.0 as it may crash"); torch prints it and fails tensor/array
exchange (torch.from_numpy: "RuntimeError: Numpy is not available") — a warning, since torch itself still
runs on the GPU —, TensorFlow and jaxlib fail at import — an error. The first release of each built against
NumPy 2, and how far an older one breaks, are data (matrices/runtime_env.toml).
""",
    example="numpy 2.0.1 with torch 2.2.2: ED671, install 'numpy<2' or torch >= 2.3.",
    references=["https://numpy.org/devdocs/dev/depending_on_numpy.html#numpy-2-0-specific-advice",
                "https://github.com/numpy/numpy/issues/26191"],
)
def numpy_abi(ctx: Context, r: Rule) -> List[Finding]:
    nv = parse_version(ctx.snap.python.packages.get("numpy"))
    if nv is None or nv.major < 2:
        return []
    out = []
    rows = numpy2_rows()
    for fw in ctx.frameworks:
        row = rows.get(fw.name)
        fv = parse_version(fw.version)
        if row is None or fv is None or fv.release >= Version(row["first"]).release:
            continue
        breaks_import = row.get("breaks", "import") != "interop"
        out.append(r.finding(f"numpy {nv} is installed, but {fw.name} {fw.version} was built against NumPy 1.x "
                             f"(the first {fw.name} built against NumPy 2 is {row['first']}): "
                             + ("its import fails." if breaks_import else "it runs, but tensor <-> array exchange fails."),
                             severity="error" if breaks_import else "warning", subject=f"{fw.name} {fw.version}",
                             evidence=[EvidenceItem("numpy", str(nv), "python.packages"),
                                       EvidenceItem(f"first {fw.name} built with NumPy 2", row["first"], row.get("source", ""))],
                             fix=['$ python -m pip install "numpy<2"', f"or upgrade {fw.name} to >= {row['first']}"]))
    return out
