"""ED400-ED449: builds that cannot use the machine's GPU (CPU-only builds, the other vendor's build, and
platforms with no GPU build at all).

A CPU build on a machine with a working NVIDIA GPU works, on the CPU: most users got it by accident
(plain `pip install torch` on Windows/macOS, an index-url mix-up, tensorflow-cpu). The fixes name the
GPU build that fits this driver and GPU, from the matrices: the newest CUDA variant of the same torch
release that the driver runs (minor-version compatibility) and whose arch list covers the GPU;
tensorflow[and-cuda] of the same version when that extra exists; the jax CUDA plugin whose driver and
compute-capability floors this machine meets. A CPU-only machine with CPU builds is healthy and
silent here (ED001 says where things run).
"""
from __future__ import annotations

from typing import Any, List, Optional, Tuple

from packaging.version import Version

from envdoctor.facts.builds import companion_pins
from envdoctor.facts.labels import fw_label, row_src
from envdoctor.facts.labels import fw_source as fw_src
from envdoctor.facts.pins import jax_plugin, marker_extras, packages, spec
from envdoctor.facts.platform import driver_os, platform_key
from envdoctor.facts.versions import parse_version, public
from envdoctor.rules.base import EvidenceItem, Finding, Rule, rule
from envdoctor.context import Context
from envdoctor.rules.intent import cpu_build_severity
from envdoctor.snapshot import Framework


def gpu_intent(ctx: Context) -> bool:
    """Something says the user means to use an NVIDIA GPU: one is usable, or CUDA software/settings are there."""
    if ctx.has_nvidia_gpu:
        return True
    pk = packages(ctx.snap)
    if any(n.startswith("nvidia-") and n not in ("nvidia-ml-py", "nvidia-ml-py3") for n in pk):
        return True
    if any(n.startswith("jax-cuda") or n == "tensorflow-gpu" or n.startswith("cupy-cuda") for n in pk):
        return True
    env = ctx.snap.loader.gpu_env or {}
    return any(k in env for k in ("CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH"))


def frameworks_named(ctx: Context, *names: str) -> List[Framework]:
    return [fw for fw in ctx.frameworks if fw.name in names]


# ----------------------------------------------------------------------------------------------
# helpers: the GPU build that fits this machine
# ----------------------------------------------------------------------------------------------


def _gpu_facts(ctx) -> List[EvidenceItem]:
    ev = []
    if ctx.driver_version:
        ev.append(EvidenceItem("NVIDIA driver", ctx.driver_version, ctx.snap.driver.source or "probe:nvidia"))
    for g in ctx.gpus:
        cc = ctx.gpu_cc(g)
        ev.append(EvidenceItem(f"GPU {g.index}", f"{g.name}" + (f" (compute capability {cc})" if cc else ""),
                               g.source or "probe:nvidia"))
    return ev


def _gpu_names(ctx) -> str:
    names = []
    for g in ctx.gpus:
        if g.name and g.name not in names:
            names.append(g.name)
    return ", ".join(names) or "an NVIDIA GPU"


def torch_cuda_variant(ctx, version: str):
    """The newest CUDA variant of this torch release that the driver runs and whose archs cover every GPU."""
    m = ctx.matrices
    rel = m.torch_release(version)
    if rel is None:
        return None
    plat = platform_key(ctx)
    ccs = [ctx.gpu_cc(g) for g in ctx.gpus]
    good = []
    for v in rel.variants:
        if v.kind != "cuda" or parse_version(v.cuda) is None:
            continue
        if plat and v.platforms and plat not in v.platforms:
            continue
        if ctx.driver_version and not m.driver_runs_cuda(ctx.driver_version, v.cuda, driver_os(ctx)):
            continue
        if any(cc and v.runs_on_cc(cc) is False for cc in ccs):
            continue
        good.append(v)
    if not good:
        return None
    return max(good, key=lambda v: parse_version(v.cuda) or Version("0"))


def _companions(ctx, torch_version: str, label: str) -> List[str]:
    """'torchvision==0.17.2+cu121' ... for the companions that are installed, from the release's patch row."""
    return [f'"{name}=={v}{label}"' for name, v in companion_pins(ctx, torch_version)]


def torch_install_cmd(ctx, torch_version: str, variant) -> str:
    base = public(torch_version)
    label = variant.local_label or ""
    if label and not label.startswith("+"):
        label = "+" + label
    parts = [f'"torch=={base}{label}"'] + _companions(ctx, torch_version, label)
    cmd = "$ pip install " + " ".join(parts)
    if variant.index_url:
        cmd += f" --index-url {variant.index_url}"
    return cmd


def jax_cuda_plugin_for(ctx, jax_version: Optional[str]) -> Tuple[Optional[int], object]:
    """(cuda major, plugin row) of the newest jax CUDA plugin this driver and these GPUs can use."""
    m = ctx.matrices
    rel = m.jax_release(jax_version) if jax_version else None
    ccs = [ctx.gpu_cc(g) for g in ctx.gpus]
    dv = parse_version(ctx.driver_version)
    if rel is not None and rel.plugins:
        best = None
        for name, pl in rel.plugins.items():
            floor = parse_version(pl.driver_min)
            if dv is not None and floor is not None and dv < floor:
                continue
            cc_min = parse_version(pl.cc_min)
            if cc_min is not None and any((parse_version(cc) or cc_min) < cc_min for cc in ccs if cc):
                continue
            if best is None or pl.cuda_major > best.cuda_major:
                best = pl
        if best is not None:
            return best.cuda_major, best
        return None, None
    if not ctx.driver_version:
        return None, None
    # the CUDA majors jax publishes plugins for (jax.toml [[plugin]]), newest first
    for major in sorted({pl.cuda_major for jr in m.jax_releases for pl in jr.plugins.values()}, reverse=True):
        if m.driver_runs_cuda(ctx.driver_version, f"{major}.0", driver_os(ctx)):
            return major, None
    return None, None


def jax_install_cmd(ctx, jax_version: Optional[str]) -> Optional[str]:
    major, pl = jax_cuda_plugin_for(ctx, jax_version)
    if major is None:
        return None
    if pl is not None and jax_version:
        return f'$ pip install "jax[cuda{major}]=={public(jax_version)}"'
    return f'$ pip install -U "jax[cuda{major}]"'


def _tf_gpu_fix(ctx, fw: Framework) -> Tuple[List[str], List[EvidenceItem]]:
    m = ctx.matrices
    rel = m.tf_release(fw.version)
    version = public(fw.version)
    fix: List[str] = []
    ev: List[EvidenceItem] = []
    if fw.distribution != "tensorflow":
        fix.append(f"$ pip uninstall -y {fw.distribution}")
    if rel is not None:
        ev.append(EvidenceItem("TensorFlow release", f"{rel.version}: CUDA {rel.cuda}, cuDNN {rel.cudnn}", row_src(ctx, rel)))
    if rel is not None and rel.and_cuda and ctx.os == "linux":
        fix.append(f'$ pip install "tensorflow[and-cuda]=={version}"')
    elif rel is not None:
        fix.append(f'$ pip install "tensorflow=={version}"')
        fix.append(f"Then install CUDA {rel.cuda} and cuDNN {rel.cudnn} (TensorFlow {rel.version}'s tested configuration, "
                   f"https://www.tensorflow.org/install/source#gpu) and put their libraries on the loader path.")
    else:
        fix.append(f'$ pip install "tensorflow=={version}"')
    tf_cuda = parse_version(rel.cuda) if rel is not None else None
    if rel is not None and ctx.driver_version and tf_cuda is not None \
            and not m.driver_runs_cuda(ctx.driver_version, rel.cuda, driver_os(ctx)):
        floor = m.mvc_floor(tf_cuda.major, driver_os(ctx)) or m.min_driver_for_cuda(rel.cuda, driver_os(ctx))
        fix.append(f"TensorFlow {rel.version} is built for CUDA {rel.cuda}: upgrade the NVIDIA driver "
                   f"{ctx.driver_version} to >= {floor} first.")
    return fix, ev


def _tf_no_windows_gpu(ctx, fw: Framework) -> Optional[bool]:
    """True when this TensorFlow has no GPU build for native Windows (data first, then the recorded last release)."""
    m = ctx.matrices
    rel = m.tf_release(fw.version)
    if rel is not None and rel.gpu_platforms:
        return not rel.gpu_on("win-amd64")
    fact = m.incompatibility("tf-native-windows-gpu-last")
    last = parse_version(fact.value) if fact is not None else None
    v = public(fw.version)
    if last is None or v is None:
        return None
    return (v.major, v.minor) > (last.major, last.minor)


def _main_frameworks(ctx) -> List[Framework]:
    """torch, tensorflow and jax itself (not jaxlib / plugins / companions)."""
    return frameworks_named(ctx, "torch", "tensorflow", "jax")


# ----------------------------------------------------------------------------------------------
# ED400
# ----------------------------------------------------------------------------------------------
@rule(
    id="ED400",
    name="cpu-build-on-gpu-machine",
    title="A CPU-only build on a machine with a usable NVIDIA GPU",
    severity="error",
    area="environment",
    rationale="""
The question is "will it use the GPU". A CPU build (torch +cpu, tensorflow-cpu, jaxlib without a CUDA
plugin) imports and runs, but never touches the GPU: torch.cuda.is_available() is False ("Torch not
compiled with CUDA enabled") and the work runs on the CPU. Most people got it by accident: plain `pip
install torch` gives the CPU build on Windows and macOS, an --index-url mix-up gives +cpu on Linux, and
tensorflow-cpu or a bare `jax` install has no GPU support. On a machine with a usable NVIDIA GPU that is
an error by default; a user who wants that framework on the CPU says so (`check --expect-cpu torch`, or
`expect-cpu = ["torch"]` under [tool.envdoctor] in pyproject.toml or in an envdoctor.toml) and it is an
info. A machine without a GPU is untouched (ED001). `gate`, which does not read that intent, reports a
warning. The fix is the GPU build of the same release that fits this driver and GPU ("no fix known" when
the data names none: the finding stands either way).
""",
    example="Windows, RTX 4080 Laptop GPU, driver 551.86, torch 2.2.2 (CPU): `ED400 error` with "
            "`pip install \"torch==2.2.2+cu121\" --index-url https://download.pytorch.org/whl/cu121`; "
            "with `--expect-cpu torch` an info.",
    references=[
        "https://github.com/pytorch/pytorch/issues/122924",
        "https://pytorch.org/get-started/locally/",
        "https://www.tensorflow.org/install/pip",
        "https://docs.jax.dev/en/latest/installation.html",
    ],
)
def cpu_build_on_gpu_machine(ctx: Context, r: Rule) -> List[Finding]:
    if not ctx.has_nvidia_gpu:
        return []
    findings = []
    gpus = _gpu_names(ctx)
    for fw in _main_frameworks(ctx):
        if fw.build != "cpu":
            continue
        label = fw_label(fw)
        ev = [EvidenceItem(f"{fw.name} build", f"{label}: CPU only", fw_src(fw))] + _gpu_facts(ctx)
        fix: List[str] = []
        if fw.name == "torch":
            if ctx.os == "macos":
                continue  # ED410 says what works on macOS
            var = torch_cuda_variant(ctx, fw.version)
            if var is not None:
                ev.append(EvidenceItem("matching CUDA build", f"torch {public(fw.version)} {var.name} (CUDA {var.cuda})",
                                       row_src(ctx, var)))
                fix += [f"Install the CUDA {var.cuda} build of torch {public(fw.version)}, which driver "
                        f"{ctx.driver_version} runs and which has kernels for {gpus}:",
                        torch_install_cmd(ctx, fw.version, var)]
            else:
                fix.append(f"No published CUDA build of torch {public(fw.version)} is known to fit driver "
                           f"{ctx.driver_version} and {gpus}; see https://pytorch.org/get-started/locally/ for a newer release.")
            msg = (f"{label} is a CPU-only build but this machine has {gpus} (driver {ctx.driver_version}): "
                   f"torch.cuda.is_available() is False and everything runs on the CPU.")
        elif fw.name == "tensorflow":
            if ctx.os == "windows" and _tf_no_windows_gpu(ctx, fw):
                continue  # ED410: no GPU build on native Windows at all
            if ctx.os == "macos":
                continue
            fix, extra = _tf_gpu_fix(ctx, fw)
            ev += extra
            msg = (f"{label} is a CPU-only build (is_cuda_build False) but this machine has {gpus} "
                   f"(driver {ctx.driver_version}): TensorFlow lists no GPU and runs on the CPU.")
        else:  # jax
            if ctx.os in ("windows", "macos"):
                continue
            if any(jax_plugin(f) is not None for f in ctx.frameworks):
                continue  # a plugin is there; versions.py judges whether it loads
            cmd = jax_install_cmd(ctx, fw.version)
            jaxlib = ctx.framework("jaxlib")
            if jaxlib is not None:
                ev.append(EvidenceItem("jaxlib", fw_label(jaxlib), fw_src(jaxlib)))
            if cmd is not None:
                fix += ["Install the CUDA plugin that fits this driver and GPU:", cmd]
            else:  # a failed look-up never suppresses the finding
                fix.append(f"No fix known: envdoctor's data names no jax CUDA plugin that fits driver "
                           f"{ctx.driver_version} and {gpus}; see https://docs.jax.dev/en/latest/installation.html.")
            msg = (f"{label} has no CUDA plugin installed (jaxlib {jaxlib.version if jaxlib else '?'} is CPU-only) but this "
                   f"machine has {gpus} (driver {ctx.driver_version}): jax.devices() lists only the CPU.")
        sev = cpu_build_severity(ctx, fw.name)
        if sev == "info":
            msg += f" Expected: {fw.name} is named in expect-cpu."
        findings.append(r.finding(msg, severity=sev, evidence=ev, fix=fix if sev != "info" else [], subject=label,
                                  cause=f"cpu-build:{fw.name}"))
    return findings


# ----------------------------------------------------------------------------------------------
# ED401
# ----------------------------------------------------------------------------------------------
def _rocm_variant(ctx, version: str):
    m = ctx.matrices
    rel = m.torch_release(version)
    if rel is None:
        return None
    have = parse_version(ctx.snap.rocm.version)
    rocms = [v for v in rel.variants if v.kind == "rocm" and parse_version(v.rocm or v.name[4:]) is not None]
    if not rocms:
        return None

    def rv(v: Any) -> Version:
        return parse_version(v.rocm or v.name[4:]) or Version("0")

    if have is not None:
        fit = [v for v in rocms if (rv(v).major, rv(v).minor) <= (have.major, have.minor) and rv(v).major == have.major]
        if fit:
            return max(fit, key=rv)
    return max(rocms, key=rv)


@rule(
    id="ED401",
    name="build-for-other-gpu-vendor",
    title="A CUDA build on an AMD ROCm machine, or a ROCm build on an NVIDIA machine",
    severity="warning",
    area="environment",
    rationale="""
CUDA builds only drive NVIDIA GPUs and ROCm builds only AMD GPUs. A torch +cu124 wheel on a machine
whose GPUs are AMD (ROCm installed, no NVIDIA driver), or a +rocm wheel on an NVIDIA machine, imports
fine and silently runs on the CPU. The fix is the same release built for the vendor the machine has.
""",
    example="AMD Instinct MI210 with ROCm 6.1 and torch 2.4.1+cu121: `ED401 warning` with "
            "`pip install \"torch==2.4.1+rocm6.1\" --index-url https://download.pytorch.org/whl/rocm6.1`.",
    references=["https://pytorch.org/get-started/locally/", "https://rocm.docs.amd.com/projects/install-on-linux/en/latest/"],
)
def build_for_other_vendor(ctx: Context, r: Rule) -> List[Finding]:
    snap = ctx.snap
    findings = []
    amd = bool(snap.rocm.installed and snap.rocm.gpus) and not ctx.has_nvidia_gpu
    for fw in _main_frameworks(ctx):
        label = fw_label(fw)
        if amd and fw.build == "cuda":
            gpus = ", ".join(snap.rocm.gpus)
            ev = [EvidenceItem(f"{fw.name} build", f"{label}: CUDA {fw.cuda_version or ''}".strip(), fw_src(fw)),
                  EvidenceItem("ROCm", f"{snap.rocm.version or '?'} with {gpus}",
                               snap.rocm.evidence[0].source if snap.rocm.evidence else "probe:rocm")]
            fix: List[str] = []
            if fw.name == "torch":
                var = _rocm_variant(ctx, fw.version)
                if var is not None:
                    label_ = var.local_label or f"+{var.name}"
                    cmd = f'$ pip install "torch=={public(fw.version)}{label_}"'
                    if var.index_url:
                        cmd += f" --index-url {var.index_url}"
                    fix += [f"Install the {var.name} build of torch {public(fw.version)}:", cmd]
                    ev.append(EvidenceItem("ROCm build", f"torch {public(fw.version)} {var.name}", row_src(ctx, var)))
            elif fw.name == "tensorflow":
                fix += [f"$ pip uninstall -y {fw.distribution}", "$ pip install tensorflow-rocm"]
            else:
                extras = sorted({x for line in fw.requires for x in marker_extras(line) if x.startswith("rocm")})
                if extras:
                    fix.append(f'$ pip install "jax[{extras[0]}]=={public(fw.version)}"')
            findings.append(r.finding(
                f"{label} is a CUDA build but this machine's GPUs are AMD ({gpus}, ROCm {snap.rocm.version or '?'}) "
                f"and it has no usable NVIDIA GPU: {fw.name} runs on the CPU.",
                evidence=ev, fix=fix, subject=label, cause=f"cpu-build:{fw.name}"))
        elif ctx.has_nvidia_gpu and fw.build == "rocm":
            gpus = _gpu_names(ctx)
            ev = [EvidenceItem(f"{fw.name} build", f"{label}: ROCm {fw.rocm_version or ''}".strip(), fw_src(fw))] + _gpu_facts(ctx)
            fix = []
            if fw.name == "torch":
                var = torch_cuda_variant(ctx, fw.version)
                if var is not None:
                    fix += [f"Install the CUDA {var.cuda} build of torch {public(fw.version)}:",
                            torch_install_cmd(ctx, fw.version, var)]
            elif fw.name == "tensorflow":
                fix, extra = _tf_gpu_fix(ctx, fw)
                ev += extra
            else:
                jax_cmd = jax_install_cmd(ctx, fw.version)
                if jax_cmd:
                    fix.append(jax_cmd)
            findings.append(r.finding(
                f"{label} is a ROCm (AMD) build but this machine has {gpus} (NVIDIA driver {ctx.driver_version}): "
                f"{fw.name} runs on the CPU.", evidence=ev, fix=fix, subject=label, cause=f"cpu-build:{fw.name}"))
    return findings


# ----------------------------------------------------------------------------------------------
# ED410
# ----------------------------------------------------------------------------------------------
@rule(
    id="ED410",
    name="no-gpu-build-for-platform",
    title="No GPU build of this framework exists for this platform",
    severity="warning",
    area="platform",
    rationale="""
Some framework/platform pairs have no GPU build at all, so no install command fixes them in place:
TensorFlow 2.10 was the last release with GPU support on native Windows (2.11+ needs WSL2), JAX has
no CUDA support on native Windows, and macOS has no CUDA at all (torch uses the MPS backend on Apple
silicon; TensorFlow uses the tensorflow-metal plugin). The framework then runs on the CPU while the
user believes it uses the GPU. envdoctor says so only when an NVIDIA GPU is present or the environment
shows the intent to use one (info), and names what works instead. With a usable NVIDIA GPU on native
Windows, `check` makes it an error unless the user expects that framework on the CPU (`--expect-cpu`,
`expect-cpu` in [tool.envdoctor]; then info); `gate`, which does not read that intent, a warning. macOS
stays an info (it has no CUDA at all).
""",
    example="Windows 10, GeForce GTX 1050 Ti, tensorflow 2.12.0: `ED410 error` 'TensorFlow 2.12.0 has no GPU "
            "build for native Windows (the last one was 2.10)' with the WSL2 and tensorflow<2.11 ways out; "
            "`--expect-cpu tensorflow` makes it an info.",
    references=[
        "https://github.com/tensorflow/tensorflow/issues/60237",
        "https://www.tensorflow.org/install/pip#windows-native",
        "https://github.com/jax-ml/jax/issues/17634",
        "https://docs.jax.dev/en/latest/installation.html",
        "https://developer.apple.com/metal/tensorflow-plugin/",
        "https://pytorch.org/docs/stable/notes/mps.html",
    ],
)
def no_gpu_build_for_platform(ctx: Context, r: Rule) -> List[Finding]:
    if ctx.snap.platform.wsl or ctx.os not in ("windows", "macos"):
        return []
    if not gpu_intent(ctx):
        return []
    m = ctx.matrices
    gpus = _gpu_names(ctx) if ctx.has_nvidia_gpu else None
    findings = []
    pk = packages(ctx.snap)
    for fw in _main_frameworks(ctx):
        label = fw_label(fw)
        ev = [EvidenceItem(f"{fw.name} build", f"{label} ({fw.build})", fw_src(fw)),
              EvidenceItem("platform", f"{ctx.snap.platform.system} {ctx.snap.platform.machine}".strip(),
                           ctx.snap.platform.evidence[0].source if ctx.snap.platform.evidence else "probe:platform")]
        ev += _gpu_facts(ctx)
        on = f" with {gpus}" if gpus else ""
        sev = cpu_build_severity(ctx, fw.name) if ctx.has_nvidia_gpu else "info"
        if ctx.os == "windows" and fw.name == "tensorflow":
            if not _tf_no_windows_gpu(ctx, fw):
                continue
            last = _last_windows_tf(ctx)
            fact = m.incompatibility("tf-native-windows-gpu-last")
            if fact is not None:
                ev.append(EvidenceItem("fact", fact.summary, row_src(ctx, fact)))
            last_txt = f" (the last one was {last.version})" if last is not None else ""
            fix = ["Use WSL2 (Windows Subsystem for Linux), where TensorFlow's Linux GPU builds run:", "$ wsl --install"]
            rel = m.tf_release(fw.version)
            if rel is not None and rel.and_cuda:
                fix += ["Then, inside WSL2:", f'$ pip install "tensorflow[and-cuda]=={public(fw.version)}"']
            elif rel is not None:
                fix += [f"Then, inside WSL2, with CUDA {rel.cuda} and cuDNN {rel.cudnn} installed there:",
                        f'$ pip install "tensorflow=={public(fw.version)}"']
            if last is not None:
                py_ok = _python_in(ctx, last.python)
                note = "" if py_ok is not False else f" (it needs Python {last.python}; this is {ctx.python_version})"
                fix += [f"Or stay on native Windows with TensorFlow {last.version}, the last GPU release{note}, "
                        f"plus CUDA {last.cuda} and cuDNN {last.cudnn}:",
                        f'$ pip install "tensorflow<{_next_minor(last.version)}"']
            findings.append(r.finding(
                f"TensorFlow {fw.version} has no GPU build for native Windows{last_txt}: it runs on the CPU{on}.",
                severity=sev, evidence=ev, fix=fix, subject=label, cause=f"cpu-build:{fw.name}"))
        elif ctx.os == "windows" and fw.name == "jax":
            fact = m.incompatibility("jax-native-windows-cuda")
            if fact is not None:
                ev.append(EvidenceItem("fact", fact.summary, row_src(ctx, fact)))
            cmd = jax_install_cmd(ctx, fw.version) if ctx.has_nvidia_gpu else None
            fix = ["Use WSL2 (Windows Subsystem for Linux), where jax's Linux CUDA plugins install:", "$ wsl --install",
                   "Then, inside WSL2:", cmd or '$ pip install -U "jax[cuda12]"']
            findings.append(r.finding(
                f"jax {fw.version} has no CUDA build for native Windows (jaxlib there is CPU-only): it runs on the CPU{on}.",
                severity=sev, evidence=ev, fix=fix, subject=label, cause=f"cpu-build:{fw.name}"))
        elif ctx.os == "macos":
            if fw.name == "torch":
                fix = ["Use the MPS backend instead of CUDA (Apple silicon / macOS 12.3+), e.g. check it with:",
                       "$ python -c \"import torch; print(torch.backends.mps.is_available())\""]
                msg = (f"torch {fw.version} on macOS has no CUDA build: torch.cuda is never available; on Apple "
                       f"silicon it uses the MPS backend (device 'mps').")
            elif fw.name == "tensorflow":
                if fw.build == "metal" or "tensorflow-metal" in pk:
                    continue
                fact = m.incompatibility("tf-macos-gpu")
                if fact is not None:
                    ev.append(EvidenceItem("fact", fact.summary, row_src(ctx, fact)))
                fix = ["Install Apple's Metal plugin for the GPU:", "$ pip install tensorflow-metal"]
                msg = f"TensorFlow {fw.version} on macOS has no CUDA build: it uses the GPU only through tensorflow-metal."
            else:
                if "jax-metal" in pk:
                    continue
                fix = ["jax has no CUDA on macOS; Apple's experimental Metal plugin is the GPU path:",
                       "$ pip install jax-metal"]
                msg = f"jax {fw.version} on macOS has no CUDA build: it runs on the CPU."
            findings.append(r.finding(msg, severity="info", evidence=ev, fix=fix, subject=label))
    return findings


def _last_windows_tf(ctx):
    m = ctx.matrices
    rows = [t for t in m.tensorflow_releases if t.gpu_on("win-amd64")]
    if not rows:
        return None
    return max(rows, key=lambda t: Version(t.version))


def _python_in(ctx, text: Optional[str]) -> Optional[bool]:

    py = parse_version(ctx.python_version)
    sp = spec(text)
    if py is None or sp is None:
        return None
    return sp.contains(Version(f"{py.major}.{py.minor}"), prereleases=True)


def _next_minor(version: str) -> str:
    v = parse_version(version)
    if v is None:
        return version
    return f"{v.major}.{v.minor + 1}"
