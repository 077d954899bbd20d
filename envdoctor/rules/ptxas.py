"""ED160-ED161: the ptxas that XLA (jax, TensorFlow) runs at run time, against the build, the GPU and the driver.

XLA compiles every jitted function to PTX and assembles it with the first ptxas it finds: the folder named by
--xla_gpu_cuda_data_dir in XLA_FLAGS, then PATH (jax-ml/jax#25718: a system ptxas on PATH wins over the pip wheel),
then the nvidia-cuda-nvcc wheel, then the CUDA folder (/usr/local/cuda). From the snapshot: XLA_FLAGS
(loader.gpu_env), the toolkits (their version, how they were found: PATH, /usr/local/cuda), the installed
nvidia-cuda-nvcc wheel's version. The ptxas is judged against what the build says it needs (the plugin's
nvidia-cuda-nvcc requirement, TensorFlow's build CUDA), the GPU (matrices/gpus.toml: the first CUDA that targets it)
and the driver's CUDA.
"""
from __future__ import annotations

import re
from typing import List, NamedTuple, Optional, Tuple

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from envdoctor.facts.pins import requirement
from envdoctor.facts.versions import lower_bound, major_minor_version, parse_version
from envdoctor.rules.base import EvidenceItem, Finding, Rule, rule
from envdoctor.context import Context

NVCC_WHEELS = ("nvidia-cuda-nvcc-cu13", "nvidia-cuda-nvcc-cu12", "nvidia-cuda-nvcc-cu11", "nvidia-cuda-nvcc")


class Ptxas(NamedTuple):
    version: Optional[str]  # "12.1.66"; None: the folder holds no recorded toolkit
    where: str  # "/usr/local/cuda-12.1/bin/ptxas"
    via: str  # XLA_FLAGS | PATH | nvidia-cuda-nvcc wheel | CUDA folder


def _data_dir(gpu_env: dict) -> Optional[str]:
    flags = gpu_env.get("XLA_FLAGS", "")
    words: List[str] = []
    if flags:  # shlex only when there is something to split (its import is a cost of every check)
        import shlex

        try:
            words = shlex.split(flags)
        except ValueError:
            words = flags.split()
    for w in words:
        m = re.match(r"--xla_gpu_cuda_data_dir=(.+)", w)
        if m:
            return m.group(1).rstrip("/")
    return None


def xla_ptxas(snap) -> Optional[Ptxas]:
    """The ptxas XLA will run, in XLA's search order, or None when none is recorded."""
    tks = list(snap.toolkits)
    d = _data_dir(snap.loader.gpu_env)
    if d:
        tk = next((t for t in tks if t.path.rstrip("/") == d), None)
        return Ptxas(tk.version if tk else None, f"{d}/bin/ptxas", "XLA_FLAGS")
    tk = next((t for t in tks if "PATH" in t.found_by and t.version), None)
    if tk is not None:
        return Ptxas(tk.version, f"{tk.path.rstrip('/')}/bin/ptxas", "PATH")
    for name in NVCC_WHEELS:
        v = snap.python.packages.get(name)
        if v:
            return Ptxas(v, f"site-packages/nvidia/cuda_nvcc/bin/ptxas ({name} {v})", "nvidia-cuda-nvcc wheel")
    tk = next((t for t in tks if t.path.rstrip("/") == "/usr/local/cuda" or t.is_default), None)
    if tk is not None and tk.version:
        return Ptxas(tk.version, f"{tk.path.rstrip('/')}/bin/ptxas", "CUDA folder")
    return None


class XlaBuild(NamedTuple):
    label: str
    needs: Optional[Version]  # the oldest ptxas CUDA X.Y the build's PTX needs, when the build says
    says: str  # where that came from


def xla_builds(ctx) -> List[XlaBuild]:
    out = []
    for fw in ctx.frameworks:
        if fw.build != "cuda":
            continue
        if fw.name == "tensorflow":
            need = major_minor_version(fw.cuda_version) if fw.cuda_version and "." in fw.cuda_version else None
            out.append(XlaBuild(f"{fw.distribution} {fw.version}", need, "build_info cuda_version"))
        elif fw.name.startswith("jax-cuda") or fw.name == "jaxlib":
            need, says = None, ""
            for line in fw.requires:
                req = requirement(line)
                if req is None or not req.name.startswith("nvidia-cuda-nvcc"):
                    continue
                floor = lower_bound(req.specifier)
                if floor is not None:
                    need, says = major_minor_version(floor), f"Requires-Dist: {line}"
            out.append(XlaBuild(f"{fw.distribution} {fw.version}", need, says))
    return out


def _fix(p: Ptxas) -> List[str]:
    fix = []
    if p.via == "PATH":
        fix.append(f"Take {p.where.rsplit('/bin/', 1)[0]}/bin off PATH for this program, so XLA finds the "
                   "nvidia-cuda-nvcc wheel's ptxas (`pip install -U 'jax[cuda12]'` brings it)")
    if p.via == "XLA_FLAGS":
        fix.append("Remove --xla_gpu_cuda_data_dir from XLA_FLAGS, or point it at a CUDA toolkit new enough")
    fix.append("Or point XLA at a new enough ptxas: "
               "XLA_FLAGS=--xla_gpu_cuda_data_dir=<site-packages>/nvidia/cuda_nvcc")
    return fix


_REFS = [
    "https://github.com/jax-ml/jax/issues/25718",
    "https://github.com/jax-ml/jax/issues/25344",
    "https://github.com/jax-ml/jax/issues/13570",
    "https://github.com/jax-ml/jax/issues/6799",
]


@rule(
    id="ED160",
    name="xla-ptxas-too-old",
    title="The ptxas XLA will run is too old for the build's PTX or for the GPU",
    severity="error",
    area="jax",
    rationale="""
jax and TensorFlow compile at run time: XLA emits PTX of the ISA its build's CUDA knows and runs ptxas on it. The
ptxas is the first one XLA finds: --xla_gpu_cuda_data_dir in XLA_FLAGS, then PATH, then the nvidia-cuda-nvcc wheel,
then /usr/local/cuda. A system CUDA on PATH that is older than what the build needs (the plugin's own
nvidia-cuda-nvcc requirement, TensorFlow's build CUDA) fails every jitted function with "ptxas fatal: Unsupported
.version 8.4; current version is '8.2'"; a ptxas older than the GPU's architecture cannot target it ("ptxas does not
support CC 8.9", "Value 'sm_90' is not defined for option 'gpu-name'"), and XLA's driver fall-back then fails.
The first CUDA that targets each architecture is data (matrices/gpus.toml).
""",
    example="jax-cuda12-plugin 0.4.38 (needs nvidia-cuda-nvcc-cu12>=12.6.85) with CUDA 12.1 on PATH: `ED160 error` "
            "'ptxas 12.1.66 (PATH) is older than the CUDA 12.6 ...'.",
    references=_REFS,
)
def xla_ptxas_too_old(ctx: Context, r: Rule) -> List[Finding]:
    if not ctx.has_nvidia_gpu or ctx.os != "linux":
        return []
    builds = xla_builds(ctx)
    p = xla_ptxas(ctx.snap) if builds else None
    pv = major_minor_version(p.version) if p is not None else None
    if p is None or pv is None:
        return []
    ev0 = EvidenceItem("ptxas XLA runs", f"{p.where} ({p.version})", f"search order: {p.via}")
    out = []
    for b in builds:
        if b.needs is not None and pv < b.needs:
            out.append(r.finding(
                f"{b.label} compiles PTX for CUDA {b.needs} but XLA will run ptxas {p.version} ({p.where}, found via "
                f"{p.via}), which is older: every jitted function fails with \"ptxas fatal: Unsupported .version ...; "
                f"current version is ...\".",
                area="tensorflow" if b.label.startswith("tensorflow") else "jax",
                evidence=[ev0, EvidenceItem(f"{b.label} needs ptxas", f">= {b.needs}", b.says)],
                fix=_fix(p), cause=f"xla-ptxas:{p.where}", subject=b.label))
    m = ctx.matrices
    for g in ctx.snap.gpus:
        cc = ctx.gpu_cc(g)
        if not cc or m.cuda_supports_cc(str(pv), cc) is not False:
            continue
        a = m.arch(cc)
        first = getattr(a, "first_cuda", None)
        if first is None or pv >= Version(first):
            continue  # too new for an old GPU is the driver's and arch rules' concern
        out.append(r.finding(
            f"XLA will run ptxas {p.version} ({p.where}, via {p.via}), which cannot target {g.name} (compute "
            f"capability {cc}; CUDA {first} is the first that can): jax/TensorFlow compilation fails on it "
            f"(\"ptxas does not support CC {cc}\").",
            evidence=[ev0, EvidenceItem(f"first CUDA for compute capability {cc}", first, "matrices/gpus.toml")],
            fix=_fix(p), cause=f"xla-ptxas:{p.where}", subject=g.name))
        break
    return out


def _driver_older_row(ctx: Context) -> Tuple[Optional[dict], Optional[str]]:
    """(the matrices/xla_ptxas.toml row for the installed XLA build's release, that build's "dist version"); the
    row is None where the data has no row for the release (or no release it knows selects one)."""
    from envdoctor.facts.pins import canonical_name
    from envdoctor.knowledge.extra_tables import _read

    rows = [row for row in _read("xla_ptxas.toml").get("driver_older", []) if isinstance(row, dict)]
    dists = {str(canonical_name(d)) for row in rows for d in row.get("dists", [])}
    for fw in ctx.frameworks:
        if str(canonical_name(fw.distribution or fw.name)) not in dists:
            continue
        v = parse_version(fw.version)
        label = f"{fw.distribution or fw.name} {fw.version}"
        for row in rows:
            try:
                spec = SpecifierSet(str(row.get("versions", "")))
            except InvalidSpecifier:
                continue
            if v is not None and str(canonical_name(fw.distribution or fw.name)) in row.get("dists", []) \
                    and spec.contains(parse_version(v.public) or v, prereleases=True):
                return row, label
        return None, label
    return None, None


@rule(
    id="ED161",
    name="xla-ptxas-newer-than-driver",
    title="XLA's ptxas is newer than the driver's CUDA: compilation is serial, or fails on older jaxlib",
    severity="info",
    area="jax",
    rationale="""
When the ptxas XLA runs is newer than the CUDA version the driver supports, XLA keeps working (ptxas writes SASS,
which the older driver loads) but turns off parallel compilation and logs "The NVIDIA driver's CUDA version is 12.2
which is older than the ptxas CUDA version (12.3.107) ... XLA is disabling parallel compilation, which may slow down
compilation". Reported as info: the GPU is used; a newer driver (or a forward-compatibility package on data-centre
GPUs) makes compilation parallel again. Older jaxlib releases did not fall back: they linked the kernels with the
driver's CUDA linking API and failed ("The CUDA linking API did not work"). The severity is by release, as data
(matrices/xla_ptxas.toml, each row with its report); a jaxlib between the rows is a warning (not known which).
""",
    example="jax-cuda12-plugin with nvidia-cuda-nvcc-cu12 12.3.107 on driver 535.154.05 (CUDA 12.2): `ED161 info`.",
    references=["https://github.com/jax-ml/jax/issues/19821", "https://github.com/jax-ml/jax/issues/18027",
                "https://github.com/google/brax/issues/488"],
)
def xla_ptxas_newer_than_driver(ctx: Context, r: Rule) -> List[Finding]:
    if not ctx.has_nvidia_gpu or ctx.os != "linux" or not xla_builds(ctx):
        return []
    p = xla_ptxas(ctx.snap)
    dv = major_minor_version(ctx.snap.driver.cuda_version)
    pv = major_minor_version(p.version) if p is not None else None
    if p is None or pv is None or dv is None or pv <= dv:
        return []
    head = f"XLA's ptxas {p.version} ({p.where}) is newer than the driver's CUDA {ctx.snap.driver.cuda_version}"
    ev = [EvidenceItem("ptxas XLA runs", f"{p.where} ({p.version})", f"search order: {p.via}"),
          EvidenceItem("driver CUDA", str(ctx.snap.driver.cuda_version), ctx.snap.driver.source or "nvml")]
    upgrade = f"Upgrade the NVIDIA driver to one for CUDA >= {major_minor_version(p.version)}"
    # what XLA does about it changed between releases: the data says which (matrices/xla_ptxas.toml)
    row, build = _driver_older_row(ctx)
    if row is None and build is None:  # an XLA build the data has no rows for (TensorFlow): today's behaviour
        return [r.finding(f"{head}: XLA disables parallel compilation, so compiling is slower (the GPU is still used).",
                          evidence=ev, fix=[f"{upgrade}, or ignore (compilation only)."], subject="XLA ptxas")]
    if row is None:
        return [r.finding(
            f"{head}: whether {build} only compiles serially (as newer releases do) or fails when it links the "
            f"kernels (as older ones did) is not in envdoctor's data.", severity="warning", evidence=ev,
            fix=[f"{upgrade}.", "$ export XLA_FLAGS=--xla_gpu_force_compilation_parallelism=1   (if it fails: serial "
                                "compilation)"], subject="XLA ptxas")]
    ev.append(EvidenceItem(f"{build} with an older driver", str(row.get("id", "")), str(row.get("source", ""))))
    fix = [f"{upgrade}" + ("." if row.get("fix") else ", or ignore (compilation only).")]
    if row.get("fix"):
        fix.append(str(row["fix"]))
    return [r.finding(f"{head}: {build}: {row.get('behaviour', '')}.", severity=str(row.get("severity", "info")),
                      evidence=ev, fix=fix, subject="XLA ptxas")]
