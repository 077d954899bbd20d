"""ED100-ED149: the NVIDIA driver against the CUDA version each installed framework build was compiled for.

How a CUDA build meets a driver (NVIDIA's CUDA compatibility guide):
- every CUDA major X from 11 on has a minor-version-compatibility (MVC) floor (CUDA 12.x: 525.60.13 on
  Linux): an application built with any 12.y toolkit *runs* on any driver at or above that floor. Below
  the floor it does not start ("The NVIDIA driver on your system is too old", "CUDA driver version is
  insufficient for CUDA runtime version"). That is an error.
- between the floor and the toolkit driver of the exact X.Y (CUDA 12.4: 550.54.14) the build runs on its
  prebuilt kernels; what needs the newer driver is JIT compilation of PTX produced by the newer toolkit
  (CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "the provided PTX was compiled with an unsupported toolchain")
  and a few newer-toolkit features. A 12.4 torch on a 535 (CUDA 12.2) driver is a setup real users run
  daily, so this is a warning only where PTX JIT actually matters (a GPU without SASS in the build), and
  an info otherwise.

The helpers at the top (CUDA builds of the environment, the driver's facts, alternative torch/TF/JAX
builds from the matrices, GPU visibility) are shared with envdoctor.rules.arch and python_data.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Tuple

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from envdoctor.frameworks import jax as jax_fw, registry, tensorflow as tf_fw, torch as torch_fw
from envdoctor.frameworks.base import Candidate, GpuTarget, Target
from envdoctor.rules.base import EvidenceItem, rule
from envdoctor.rules.context import parse_version, row_source
from envdoctor.snapshot import GPU, Framework

# --------------------------------------------------------------------------- small helpers


def vxy(text: Optional[str]) -> Optional[Version]:
    """'12.4.1' -> Version('12.4'); '12' -> Version('12.0'); None for garbage."""
    v = parse_version(text)
    if v is None:
        return None
    rel = v.release + (0,)
    return Version(f"{rel[0]}.{rel[1]}")


def xy(text: Optional[str]) -> Optional[str]:
    v = vxy(text)
    return f"{v.major}.{v.minor}" if v is not None else None


def fw_source(fw: Framework) -> str:
    """Where the probe read this framework (its first evidence source)."""
    for ev in fw.evidence:
        if ev.source:
            return ev.source
    if fw.location:
        return f"python:{fw.location}"
    return "probe:pyenv"


def fw_build_source(fw: Framework) -> str:
    """Where the build's own facts were read (torch/version.py, build_info.py, a plugin's version.py)."""
    for ev in fw.evidence:
        if ev.source and not ev.source.endswith("METADATA"):
            return ev.source
    return fw_source(fw)


def fw_label(fw: Framework) -> str:
    name = fw.distribution or fw.name
    return f"{name} {fw.version}"


def driver_source(snap) -> str:
    for ev in snap.driver.evidence:
        if ev.source:
            return ev.source
    return snap.driver.source or "probe:nvidia"


def gpu_label(gpu: GPU, cc: Optional[str]) -> str:
    name = gpu.name or "unknown GPU"
    return f"GPU {gpu.index} {name}" + (f" (compute capability {cc})" if cc else "")


def python_version(ctx) -> Optional[Version]:
    v = parse_version(ctx.snap.python.version)
    if v is None or len(v.release) < 2:
        return None
    return Version(".".join(str(x) for x in (v.release + (0,))[:3]))


def spec_contains(spec: Optional[str], version: Version) -> Optional[bool]:
    if not spec:
        return None
    try:
        return SpecifierSet(spec).contains(version, prereleases=True)
    except InvalidSpecifier:
        return None


def platform_key(ctx) -> str:
    """The matrices' platform key of the inspected environment ("linux-x86_64", "win-amd64", ...)."""
    tag = (ctx.snap.python.platform_tag or "").lower()
    if tag.startswith("linux-"):
        return tag
    if tag.startswith("win"):
        return "win-amd64"
    if tag.startswith("macosx") or tag.startswith("macos"):
        return "macos-arm64" if tag.endswith("arm64") else "macos-x86_64"
    system = ctx.os
    arch = (ctx.snap.platform.machine or "").lower()
    if system == "windows":
        return "win-amd64"
    if system == "macos":
        return "macos-arm64" if arch in ("arm64", "aarch64") else "macos-x86_64"
    return "linux-aarch64" if arch in ("aarch64", "arm64") else "linux-x86_64"


def matrices(ctx):
    return ctx.matrices


# --------------------------------------------------------------------------- the CUDA builds of an environment

_PLUGIN_RE = re.compile(r"^jax-cuda(\d+)-(plugin|pjrt)$")
_CUPY_RE = re.compile(r"^cupy-cuda(\d+)(x?)$")
_CU_TAG = re.compile(r"^cu(\d{2,3})$")


@dataclass
class CudaBuild:
    fw: Framework
    family: str  # torch | tensorflow | jax | cupy
    cuda: str  # "12.1", or "12" when only the major is known
    cuda_source: str
    label: str = ""

    @property
    def major(self) -> int:
        return Version(self.cuda).major

    @property
    def has_minor(self) -> bool:
        return "." in self.cuda


def torch_cuda(fw: Framework) -> Optional[str]:
    if fw.cuda_version and parse_version(fw.cuda_version) is not None:
        return fw.cuda_version
    v = parse_version(fw.version)
    if v is not None and v.local:
        m = _CU_TAG.match(v.local.split(".")[0])
        if m:
            d = m.group(1)
            return f"{int(d[:-1])}.{d[-1]}"
    return None


def cuda_builds(ctx) -> List[CudaBuild]:
    """The CUDA builds installed in the environment, one per framework family (torch, TF, JAX, CuPy)."""
    out: List[CudaBuild] = []
    m = matrices(ctx)
    fws = ctx.frameworks
    for fw in fws:
        if fw.name == "torch" and fw.build == "cuda":
            c = torch_cuda(fw)
            if c:
                out.append(CudaBuild(fw, "torch", c, fw_build_source(fw), fw_label(fw)))
    for fw in fws:
        if fw.name == "tensorflow" and fw.build == "cuda":
            c = fw.cuda_version if parse_version(fw.cuda_version) is not None else None
            src = fw_build_source(fw)
            if c is None and m is not None:
                rel = m.tf_release(fw.version)
                if rel is not None and rel.cuda:
                    c, src = rel.cuda, row_source(m, rel)
            if c:
                out.append(CudaBuild(fw, "tensorflow", c, src, fw_label(fw)))
    # JAX: the CUDA plugin (newest major) carries the CUDA code; old jaxlib builds carried it themselves.
    plugins = []
    for fw in fws:
        pm = _PLUGIN_RE.match((fw.name or "").lower()) or _PLUGIN_RE.match((fw.distribution or "").lower())
        if pm:
            plugins.append((int(pm.group(1)), pm.group(2) == "plugin", fw))
    if plugins:
        plugins.sort(key=lambda t: (t[0], t[1]))
        major, _, fw = plugins[-1]
        out.append(CudaBuild(fw, "jax", str(major), fw_build_source(fw), fw_label(fw)))
    else:
        for name in ("jaxlib", "jax"):
            fw = ctx.framework(name)
            if fw is not None and fw.build == "cuda" and parse_version(fw.cuda_version) is not None:
                out.append(CudaBuild(fw, "jax", fw.cuda_version, fw_build_source(fw), fw_label(fw)))
                break
    for fw in fws:
        if fw.name == "cupy" or (fw.distribution or "").lower().startswith("cupy-cuda"):
            if fw.build not in ("cuda", "unknown"):
                continue
            c = fw.cuda_version if parse_version(fw.cuda_version) is not None else None
            if c is None:
                cm = _CUPY_RE.match((fw.distribution or "").lower())
                if cm:
                    d = cm.group(1)
                    c = d if cm.group(2) else (f"{int(d[:-1])}.{d[-1]}" if len(d) >= 3 else d)
            if c:
                out.append(CudaBuild(fw, "cupy", c, fw_build_source(fw), fw_label(fw)))
            break
    return out


# --------------------------------------------------------------------------- the driver's facts


@dataclass
class DriverFacts:
    version: Optional[str]  # "535.104.05"
    reported: Optional[str]  # the CUDA version the driver itself reports ("12.2")
    os: str  # linux | windows (WSL uses the Windows driver)
    data_max: Optional[str]  # newest CUDA X.Y whose toolkit driver <= version, per the matrices
    source: str

    @property
    def max_cuda(self) -> Optional[str]:
        """The newest CUDA X.Y this driver supports natively: the larger of what it reports (authoritative,
        also under forward compatibility) and what the data derives from its version."""
        cands = [v for v in (vxy(self.reported), vxy(self.data_max)) if v is not None]
        if not cands:
            return None
        best = max(cands)
        return f"{best.major}.{best.minor}"

    def describe(self) -> str:
        mc = self.max_cuda
        if self.version:
            return f"{self.version}" + (f" (supports CUDA <= {mc})" if mc else "")
        return f"a driver that reports CUDA {self.reported}"


def driver_facts(ctx) -> Optional[DriverFacts]:
    """None unless the driver works and its version or CUDA level is known."""
    d = ctx.snap.driver
    if d.state != "ok":
        return None
    version = d.version if parse_version(d.version) is not None else None
    reported = d.cuda_version if vxy(d.cuda_version) is not None else None
    if version is None and reported is None:
        return None
    os_ = "windows" if ctx.snap.platform.wsl else ctx.os
    if os_ not in ("linux", "windows"):
        return None
    m = matrices(ctx)
    data_max = None
    if version and m is not None:
        try:
            data_max = m.max_cuda_for_driver(version, os_)
        except Exception:  # noqa: BLE001
            data_max = None
    return DriverFacts(version, reported, os_, data_max, driver_source(ctx.snap))


def cuda_floor(m, cuda: str, os_: str) -> Optional[str]:
    """The oldest driver that runs a build of CUDA `cuda`: the MVC floor of its major, or for families
    without minor-version compatibility (10.x) the toolkit driver of that X.Y."""
    if m is None:
        return None
    v = parse_version(cuda)
    if v is None:
        return None
    floor = m.mvc_floor(v.major, os_)
    if floor is None and "." in cuda:
        floor = m.min_driver_for_cuda(xy(cuda), os_)
    return floor


def has_mvc(m, major: int, os_: str) -> bool:
    return m is not None and m.mvc_floor(major, os_) is not None


def driver_runs(ctx, df: DriverFacts, cuda: str) -> Optional[bool]:
    """Can this driver run a build of CUDA `cuda` (at all)?  None when nothing is known."""
    m = matrices(ctx)
    v = parse_version(cuda)
    if v is None:
        return None
    votes = []
    if df.reported:
        rv = vxy(df.reported)
        if has_mvc(m, v.major, df.os) or "." not in cuda:
            votes.append(rv.major >= v.major)
        else:
            votes.append(rv >= vxy(cuda))
    floor = cuda_floor(m, cuda, df.os)
    if df.version and parse_version(floor) is not None:
        votes.append(Version(df.version) >= Version(floor))
    if not votes:
        return None
    return any(votes)


def driver_native(ctx, df: DriverFacts, cuda: str) -> Optional[bool]:
    """Is the driver at least the toolkit driver of CUDA X.Y (full features, PTX JIT of that toolkit's PTX)?"""
    if "." not in cuda:
        return None
    m = matrices(ctx)
    votes = []
    if df.reported:
        votes.append(vxy(df.reported) >= vxy(cuda))
    need = m.min_driver_for_cuda(xy(cuda), df.os) if m is not None else None
    if df.version and parse_version(need) is not None:
        votes.append(Version(df.version) >= Version(need))
    if not votes:
        return None
    return any(votes)


def driver_evidence(df: DriverFacts) -> List[EvidenceItem]:
    ev = []
    if df.version:
        ev.append(EvidenceItem("NVIDIA driver", df.version, df.source))
    if df.reported:
        ev.append(EvidenceItem("CUDA version reported by the driver", df.reported, df.source))
    return ev


# --------------------------------------------------------------------------- GPU visibility


@dataclass
class Visible:
    gpus: List[GPU]
    certain: bool = True  # False: CUDA_VISIBLE_DEVICES may map indices differently
    note: str = ""
    evidence: List[EvidenceItem] = field(default_factory=list)


def visible_gpus(ctx) -> Visible:
    """The GPUs CUDA programs of this environment see (CUDA_VISIBLE_DEVICES honoured when it can be read)."""
    gpus = list(ctx.snap.gpus)
    env = ctx.gpu_env
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    if cvd is None:
        return Visible(gpus)
    ev = [EvidenceItem("CUDA_VISIBLE_DEVICES", cvd, "env:CUDA_VISIBLE_DEVICES")]
    text = cvd.strip()
    if text in ("", "-1", "NoDevFiles", "none"):
        return Visible([], True, f"CUDA_VISIBLE_DEVICES={cvd!r} hides every GPU", ev)
    items = [t.strip() for t in text.split(",") if t.strip()]
    chosen: List[GPU] = []
    if all(t.isdigit() for t in items):
        ccs = {ctx.gpu_cc(g) for g in gpus}
        pci_order = env.get("CUDA_DEVICE_ORDER", "").strip().upper() == "PCI_BUS_ID"
        if not (pci_order or len(ccs) <= 1):
            # CUDA numbers devices fastest-first unless CUDA_DEVICE_ORDER=PCI_BUS_ID: indices are not nvidia-smi's.
            return Visible(gpus, False, f"CUDA_VISIBLE_DEVICES={cvd} (fastest-first numbering)", ev)
        for t in items:
            idx = int(t)
            match = [g for g in gpus if g.index == idx]
            if not match:
                break  # CUDA stops at the first invalid index
            chosen.extend(match)
        return Visible(chosen, True, f"CUDA_VISIBLE_DEVICES={cvd}", ev)
    for t in items:
        key = t.lower()
        match = [g for g in gpus if g.uuid and (g.uuid.lower() == key or g.uuid.lower().startswith(key))]
        if not match:
            return Visible(gpus, False, f"CUDA_VISIBLE_DEVICES={cvd}", ev)
        chosen.extend(match)
    return Visible(chosen, True, f"CUDA_VISIBLE_DEVICES={cvd}", ev)


# --------------------------------------------------------------------------- compiled GPU archs (shared with arch.py)

_ENTRY = re.compile(r"^(sm|compute|lto)_(\d+?)(\d)([af]?)$")
_DOTTED = re.compile(r"^(\d+)\.(\d+)([af]?)(\+ptx)?$")


def arch_entries(arch_list) -> List[Tuple[str, int, int, str]]:
    """[('sm', 8, 6, ''), ('compute', 9, 0, '')...] from 'sm_86', 'compute_90', 'sm_90a', '8.6', '9.0+PTX'."""
    out: List[Tuple[str, int, int, str]] = []
    for raw in arch_list or []:
        text = str(raw).strip().lower()
        mm = _ENTRY.match(text)
        if mm:
            kind = "sm" if mm.group(1) == "sm" else ("compute" if mm.group(1) == "compute" else "")
            if kind:
                out.append((kind, int(mm.group(2)), int(mm.group(3)), mm.group(4)))
            continue
        md = _DOTTED.match(text)
        if md:
            out.append(("sm", int(md.group(1)), int(md.group(2)), md.group(3)))
            if md.group(4):
                out.append(("compute", int(md.group(1)), int(md.group(2)), md.group(3)))
    return out


def cc_tuple(cc: Optional[str]) -> Optional[Tuple[int, int]]:
    if not cc:
        return None
    mm = re.match(r"^\s*(\d+)\.(\d+)\s*$", str(cc))
    if not mm:
        return None
    return int(mm.group(1)), int(mm.group(2))


def kernel_for(arch_list, cc: Optional[str]) -> Tuple[str, Optional[str]]:
    """How a GPU of compute capability `cc` gets kernels from a build compiled for `arch_list`:

    ("sass", "sm_80")         a cubin runs natively (same major, minor <= the GPU's; 'a' variants only exactly)
    ("ptx", "compute_90")     only by JIT-compiling PTX of an arch <= the GPU's (same major)
    ("ptx-major", "compute_80")  only by JIT across a major generation
    ("none", None)            no kernel image for this GPU ("no kernel image is available for execution")
    ("unknown", None)         the list or the cc cannot be read
    """
    target = cc_tuple(cc)
    entries = arch_entries(arch_list)
    if target is None or not entries:
        return ("unknown", None)
    for kind, major, minor, suffix in entries:
        if kind != "sm":
            continue
        if suffix == "a":
            if (major, minor) == target:
                return ("sass", f"sm_{major}{minor}{suffix}")
        elif major == target[0] and minor <= target[1]:
            return ("sass", f"sm_{major}{minor}{suffix}")
    best = None
    for kind, major, minor, suffix in entries:
        if kind != "compute":
            continue
        if suffix == "a" and (major, minor) != target:
            continue
        if suffix == "f" and major != target[0]:
            continue
        if (major, minor) <= target and (best is None or (major, minor) > best[:2]):
            best = (major, minor, suffix)
    if best is not None:
        name = f"compute_{best[0]}{best[1]}{best[2]}"
        return ("ptx" if best[0] == target[0] else "ptx-major", name)
    return ("none", None)


def variant_serves_cc(m, var, cc: Optional[str], allow: Tuple[str, ...] = ("sass", "ptx")) -> bool:
    """Does a torch variant serve a GPU of `cc`: kernels in its arch list and a bundled cuDNN that still
    supports that compute capability (cuDNN 9 dropped Kepler, 9.17 pre-Turing)?"""
    if not cc:
        return True
    if kernel_for(var.compiled_archs(), cc)[0] not in allow:
        return False
    if m is not None and var.cudnn:
        rel = m.cudnn_release(var.cudnn)
        if rel is not None:
            need = rel.min_cc(var.cuda_major)
            if cc_tuple(need) is not None and cc_tuple(cc) < cc_tuple(need):
                return False
    return True


def newest_arch(arch_list) -> Optional[Tuple[int, int]]:
    ents = arch_entries(arch_list)
    return max(((e[1], e[2]) for e in ents), default=None)


@dataclass
class ArchInfo:
    arch_list: List[str]
    source: str
    ptx_unknown: bool = False  # the data does not know whether PTX of the last arch is embedded
    presumed: bool = False  # the data marks this arch list UNVERIFIED (presumed, not read)
    rows: List[EvidenceItem] = field(default_factory=list)


def torch_variant_of(ctx, fw: Framework):
    """The matrices' variant of an installed torch (local label, else the PyPI default whose CUDA matches)."""
    m = matrices(ctx)
    if m is None:
        return None
    v = parse_version(fw.version)
    if v is None:
        return None
    if v.local:
        label = v.local.split(".")[0]
        if label in ("cpu",) or _CU_TAG.match(label) or label.startswith("rocm"):
            return m.torch_variant(fw.version, label)
        return None  # a source build ("+gitabc123"): the data does not describe it
    if v.is_prerelease or v.is_devrelease:
        return None
    rel = m.torch_release(fw.version)
    if rel is None or not rel.has_patch(fw.version):
        return None
    var = rel.default_variant(platform_key(ctx))
    want = xy(torch_cuda(fw))
    if var is not None and (want is None or xy(var.cuda) == want):
        return var
    if want:
        tag = "cu" + want.replace(".", "")
        return rel.variant(tag)
    return None


def build_arch(ctx, build: CudaBuild) -> Optional[ArchInfo]:
    """The compiled GPU archs of a torch or TensorFlow build: the build's own list first, the matrices second."""
    fw = build.fw
    m = matrices(ctx)
    if fw.arch_list:
        return ArchInfo(list(fw.arch_list), fw_build_source(fw))
    if m is None:
        return None
    if build.family == "torch":
        var = torch_variant_of(ctx, fw)
        if var is None or var.kind != "cuda":
            return None
        archs = list(var.arch_list)
        if platform_key(ctx) == "linux-aarch64" and var.arch_list_aarch64:
            archs = list(var.arch_list_aarch64)
        if not archs:
            return None
        if var.ptx and archs:
            archs.append("compute_" + archs[-1].split("_", 1)[1])
        src = var.arch_source or row_source(m, var)
        info = ArchInfo(archs, src, ptx_unknown=var.ptx is None, presumed=var.arch_unverified)
        info.rows.append(EvidenceItem(f"torch {var.torch} {var.name} arch list", " ".join(archs), src))
        return info
    if build.family == "tensorflow":
        rel = m.tf_release(fw.version)
        if rel is None or not rel.compute_capabilities:
            return None
        src = row_source(m, rel)
        info = ArchInfo(list(rel.compute_capabilities), src,
                        presumed=str(rel.cc_verified or "").strip().upper().startswith("UNVERIFIED"))
        info.rows.append(EvidenceItem(f"tensorflow {rel.version} compute capabilities",
                                      " ".join(rel.compute_capabilities), src))
        return info
    return None


# --------------------------------------------------------------------------- alternatives from the matrices


@dataclass
class TorchChoice:
    release: object
    variant: object
    patch: str

    def command(self, ctx) -> str:
        """The install line: torch with the torchvision / torchaudio that are installed, at the versions
        that match this torch (the patch row of matrices/pytorch.toml), from the same index (whose builds carry its CUDA label)."""
        from envdoctor.rules.builds import companion_pins

        pins = "".join(f" {name}=={v}" for name, v in companion_pins(ctx, self.patch))
        return f"$ pip install torch=={self.patch}{pins} --index-url {self.variant.index_url}"

    def label(self) -> str:
        return f"torch {self.patch} {self.variant.name} (CUDA {self.variant.cuda})"


def torch_choice(ctx, fw: Framework, fits: Callable[[object], bool]) -> Optional[TorchChoice]:
    """A torch CUDA build for which `fits(variant)` holds (the torch spec's choice: the same release's other
    variants first, else the newest release that has one; only builds for this platform and Python)."""
    m = matrices(ctx)
    if m is None:
        return None
    py = python_version(ctx)
    found = torch_fw.SPEC.choose_variant(m, fw.version, platform_key(ctx), str(py) if py else None, fits)
    return TorchChoice(*found) if found is not None else None


def tf_choice(ctx, fits: Callable[[object], bool]):
    """The newest TensorFlow release (in the data) with a GPU build for this platform and Python that fits."""
    m = matrices(ctx)
    if m is None:
        return None
    py = python_version(ctx)
    return tf_fw.SPEC.choose_release(m, platform_key(ctx), bool(ctx.snap.platform.wsl),
                                                     str(py) if py else None, fits)


def tf_command(rel) -> str:
    extra = "[and-cuda]" if rel.and_cuda else ""
    return f"$ pip install 'tensorflow{extra}~={rel.tested}'"


def jax_choice(ctx, fits: Callable[[object, object], bool], prefer_version: Optional[str] = None):
    """(release, plugin) for which fits(release, plugin) holds: the installed jax release first, else the newest."""
    m = matrices(ctx)
    if m is None:
        return None
    py = python_version(ctx)
    return jax_fw.SPEC.choose_plugin(m, str(py) if py else None, fits, prefer_version)


def jax_command(rel, plugin) -> str:
    return f"$ pip install 'jax[{plugin.name}]=={rel.version}'"


# --------------------------------------------------------------------------- ED100

_REFS = [
    "https://docs.nvidia.com/deploy/cuda-compatibility/",
    "https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html",
    "https://github.com/lllyasviel/Fooocus/issues/1313",
    "https://github.com/tensorflow/docs/pull/1902",
    "https://github.com/jax-ml/jax/issues/21950",
]


def spec_target(ctx, driver: Optional[str], ccs: List[str]) -> Target:
    """The inspected machine as the frameworks/ specs' Target: platform, Python X.Y, driver, GPUs."""
    py = python_version(ctx)
    return Target(frameworks=[], driver=driver, gpus=[GpuTarget(cc) for cc in ccs],
                  python=f"{py.major}.{py.minor}" if py is not None else None, platform=platform_key(ctx),
                  wsl=bool(ctx.snap.platform.wsl), companions=[])


def _alternative(ctx, build: CudaBuild, df: DriverFacts, vis: Visible) -> Tuple[List[str], List[EvidenceItem]]:
    """A build of the same framework whose CUDA this driver runs (fix lines, matrix evidence)."""
    m = matrices(ctx)
    fixes: List[str] = []
    ev: List[EvidenceItem] = []
    ccs = [c for c in (ctx.gpu_cc(g) for g in vis.gpus) if c]
    if build.family == "torch":
        def fits(var) -> bool:
            if driver_runs(ctx, df, var.cuda) is not True:
                return False
            return all(variant_serves_cc(m, var, cc, ("sass", "ptx", "ptx-major")) for cc in ccs)

        ch = torch_choice(ctx, build.fw, fits)
        if ch is not None:
            fixes.append(f"or install a torch build for CUDA {ch.variant.cuda_major}.x, which this driver runs: "
                         f"{ch.label()}:")
            fixes.append(ch.command(ctx))
            ev.append(EvidenceItem(f"torch {ch.release.version} {ch.variant.name}", f"CUDA {ch.variant.cuda}",
                                   row_source(m, ch.variant)))
    elif build.family in ("tensorflow", "jax"):
        # the same judgement lock and gate make (frameworks/): the newest build that fits the whole target
        spec = registry.get(build.family)
        target = spec_target(ctx, df.version, ccs)
        jv = ctx.framework("jax") if build.family == "jax" else None

        def runs(cand: Candidate) -> bool:
            if not cand.cuda:
                return False
            return driver_runs(ctx, df, cand.cuda if build.family == "tensorflow" else str(cand.cuda_major)) is True

        cand = spec.choose(m, target, f"=={jv.version}", accept=runs) if jv is not None else None
        cand = cand or spec.choose(m, target, accept=runs)
        if cand is not None and build.family == "tensorflow":
            rel = m.tf_release(cand.version)
            fixes.append(f"or install TensorFlow {rel.tested} (built for CUDA {rel.cuda}, which this driver runs):")
            fixes.append(tf_command(rel))
            ev.append(EvidenceItem(f"tensorflow {rel.version}", f"CUDA {rel.cuda}", row_source(m, rel)))
        elif cand is not None:
            rel = m.jax_release(cand.version)
            plugin = rel.plugins[cand.build]
            fixes.append(f"or install jax {rel.version} with its CUDA {plugin.cuda_major} plugin ({plugin.package}):")
            if build.fw.distribution and build.fw.distribution != plugin.package:
                fixes.append(f"$ pip uninstall -y {build.fw.distribution}")
            fixes.append(jax_command(rel, plugin))
            ev.append(EvidenceItem(f"jax {rel.version} {plugin.name} plugin", f"driver >= {plugin.driver_min}",
                                   row_source(m, plugin)))
    elif build.family == "cupy":
        majors = sorted(m.mvc) if m is not None else []
        runnable = [mj for mj in majors if driver_runs(ctx, df, str(mj)) is True]
        if runnable:
            want = f"cupy-cuda{max(runnable)}x"
            if want != (build.fw.distribution or ""):
                fixes.append(f"or install the CuPy build for CUDA {max(runnable)}:")
                fixes.append(f"$ pip uninstall -y {build.fw.distribution} && pip install {want}")
    return fixes, ev


@rule(
    id="ED100",
    name="driver-too-old",
    title="NVIDIA driver too old for a framework's CUDA build",
    severity="error",
    area="driver",
    rationale="""
Every framework build is compiled against one CUDA toolkit, and the NVIDIA driver must support that
CUDA version. Since CUDA 11, a build of CUDA X.y runs on any driver at or above the
minor-version-compatibility floor of major X (CUDA 12: 525.60.13 on Linux); below that floor the CUDA
runtime refuses to start ("The NVIDIA driver on your system is too old", "CUDA driver version is
insufficient for CUDA runtime version") and the framework falls back to the CPU or fails. Between the
floor and the toolkit driver of the exact X.Y the build runs on its prebuilt kernels; only PTX JIT of
newer-toolkit PTX needs the newer driver, which ED100 reports as a warning when a GPU depends on PTX and
otherwise as an info. The CUDA version the driver reports itself (NVML / nvidia-smi) is trusted as well,
so forward-compatibility packages and drivers newer than the data are judged correctly.
""",
    example="""
Driver 470.86 (CUDA 11.4) with torch 2.1.0+cu121: `ED100 error` - CUDA 12.x builds need driver >= 525.60.13;
fix: upgrade the driver, or `pip install torch==2.1.0 --index-url https://download.pytorch.org/whl/cu118`.
""",
    references=_REFS,
)
def driver_too_old(ctx, r):
    df = driver_facts(ctx)
    if df is None:
        return []
    builds = cuda_builds(ctx)
    if not builds:
        return []
    m = matrices(ctx)
    vis = visible_gpus(ctx)
    failing = [b for b in builds if driver_runs(ctx, df, b.cuda) is False]
    floors = [cuda_floor(m, b.cuda, df.os) for b in failing]
    floors = [f for f in floors if parse_version(f) is not None]
    top_floor = max(floors, key=Version) if floors else None
    out = []
    for b in builds:
        runs = driver_runs(ctx, df, b.cuda)
        if runs is None:
            continue
        floor = cuda_floor(m, b.cuda, df.os)
        ev = driver_evidence(df) + [EvidenceItem(f"{b.label} built for CUDA", b.cuda, b.cuda_source)]
        if runs is False:
            mvc_row = m.mvc.get(b.major) if m is not None else None
            if mvc_row is not None:
                ev.append(EvidenceItem(f"CUDA {b.major}.x minor-version-compatibility floor ({df.os})",
                                       str(floor), row_source(m, mvc_row)))
            need_txt = f"NVIDIA driver >= {floor}" if floor else f"a driver that supports CUDA {b.cuda}"
            what = f"CUDA {b.cuda}" if b.has_minor else f"CUDA {b.major}.x"
            msg = (f"{b.label} is built for {what}, which needs {need_txt}; "
                   f"this machine has {df.describe()}.")
            fixes = []
            target = top_floor or floor
            if target:
                tk = m.min_driver_for_cuda(xy(b.cuda), df.os) if (m is not None and b.has_minor) else None
                extra = f" (>= {tk} for every CUDA {xy(b.cuda)} feature)" if tk and Version(tk) > Version(target) else ""
                fixes.append(f"Upgrade the NVIDIA driver to >= {target}{extra}.")
            alt_fix, alt_ev = _alternative(ctx, b, df, vis)
            fixes.extend(alt_fix)
            ev.extend(alt_ev)
            out.append(r.finding(msg, evidence=ev, fix=fixes, cause="driver-too-old", subject=b.label))
            continue
        if not b.has_minor:
            native = None
        else:
            native = driver_native(ctx, df, b.cuda)
        if native is not False:
            # JAX: XLA's ptxas (pip nvidia-cuda-nvcc) newer than the driver slows compilation only.
            continue
        tk = m.min_driver_for_cuda(xy(b.cuda), df.os) if m is not None else None
        cuda_row = m.cuda_release(xy(b.cuda)) if m is not None else None
        if cuda_row is not None and tk:
            ev.append(EvidenceItem(f"CUDA {xy(b.cuda)} toolkit driver ({df.os})", tk, row_source(m, cuda_row)))
        if floor:
            mvc_row = m.mvc.get(b.major) if m is not None else None
            if mvc_row is not None:
                ev.append(EvidenceItem(f"CUDA {b.major}.x minor-version-compatibility floor ({df.os})", floor,
                                       row_source(m, mvc_row)))
        ptx_gpus = []
        presumed = False
        if b.family in ("torch", "tensorflow"):
            info = build_arch(ctx, b)
            if info is not None:
                presumed = info.presumed
                for g in vis.gpus:
                    kind, name = kernel_for(info.arch_list, ctx.gpu_cc(g))
                    if kind in ("ptx", "ptx-major"):
                        ptx_gpus.append((g, name))
                if ptx_gpus:
                    ev.append(EvidenceItem(f"{b.label} compiled archs", " ".join(info.arch_list), info.source))
        need = tk or f"a CUDA {xy(b.cuda)} driver"
        if ptx_gpus:
            gtxt = ", ".join(f"{gpu_label(g, ctx.gpu_cc(g))} needs PTX {n}" for g, n in ptx_gpus)
            msg = (f"{b.label} is built with CUDA {xy(b.cuda)} and this machine has {df.describe()}: it runs through "
                   f"minor-version compatibility, but {gtxt}, and JIT of CUDA {xy(b.cuda)} PTX needs driver >= {need} "
                   f"(else 'the provided PTX was compiled with an unsupported toolchain').")
            fixes = [f"Upgrade the NVIDIA driver to >= {need}."]
            if b.family == "torch":
                cur = vxy(df.max_cuda)

                def fits(var, _ccs=[ctx.gpu_cc(g) for g, _ in ptx_gpus]) -> bool:
                    if cur is not None and (vxy(var.cuda) or Version("99")) > cur:
                        return False
                    return all(variant_serves_cc(m, var, c, ("sass",)) for c in _ccs)

                ch = torch_choice(ctx, b.fw, fits)
                if ch is not None:
                    fixes.append(f"or install {ch.label()}, which has native kernels for this GPU:")
                    fixes.append(ch.command(ctx))
            if presumed:
                msg += " (The arch list is presumed by envdoctor's data, not read from the build.)"
            out.append(r.finding(msg, severity="info" if presumed else "warning", evidence=ev, fix=fixes,
                                 cause="driver-older-than-build", subject=b.label))
        else:
            msg = (f"{b.label} is built with CUDA {xy(b.cuda)}; driver {df.describe()} runs it through CUDA "
                   f"minor-version compatibility (needs >= {floor}), which is fine for its prebuilt kernels. "
                   f"PTX JIT of CUDA {xy(b.cuda)} PTX and some newer-toolkit features need driver >= {need}.")
            out.append(r.finding(msg, severity="info", evidence=ev,
                                 fix=[f"Nothing to do for prebuilt kernels; upgrade the driver to >= {need} "
                                      f"before JIT-compiling CUDA {xy(b.cuda)} PTX (custom kernels, Triton)."],
                                 cause="driver-older-than-build", subject=b.label))
    return out
