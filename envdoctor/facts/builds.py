"""What a framework build states about itself, and whether envdoctor's data knows its release.

A build judged only through rows of the matrices goes silent when its release is not there (older than
the data, or a source build): every lookup returns nothing and every rule skips. The facts here let
rules judge what the build itself says (torch/version.py `cuda`/`hip`, jaxlib's local version
`+cuda111` / `+cuda12.cudnn89`, TensorFlow's build_info, nvidia-* Requires-Dist pins) against the driver
and GPU tables, which need no release row, and say plainly what could not be judged.

Also owns the CUDA builds of an environment (`CudaBuild` / `cuda_builds`: one per framework family, with the
CUDA each was built for and where that was read), `torch_cuda`, the matrices' variant of an installed torch
(`torch_variant_of`) and a build's compiled GPU archs (`ArchInfo` / `build_arch`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Optional, Tuple

from packaging.version import Version

from envdoctor.facts.labels import fw_build_source, fw_label, row_source
from envdoctor.facts.pins import jax_plugin
from envdoctor.facts.platform import platform_key
from envdoctor.facts.versions import major_minor as xy
from envdoctor.facts.versions import parse_version
from envdoctor.lazyre import lazy_re
from envdoctor.snapshot import Framework
from envdoctor.records import dataclass, field

if TYPE_CHECKING:  # facts never import envdoctor.rules at module level: that package imports every rule module
    from envdoctor.knowledge.matrices import Matrices
    from envdoctor.rules.base import EvidenceItem
    from envdoctor.context import Context

# the distribution whose release row the data keeps, per framework family
FAMILY_OF = {"torch": "torch", "tensorflow": "tensorflow", "jaxlib": "jax"}


def oldest_known(m: "Matrices", family: str) -> Optional[str]:
    """The oldest release of `family` (torch | tensorflow | jax) the data has a row for."""
    if family == "torch":
        vs = [parse_version(p) for r in m.pytorch_releases for p in (r.patches or [r.version])]
    elif family == "tensorflow":
        vs = [parse_version(r.tested or r.version) for r in m.tensorflow_releases]
    else:  # jax: its releases, and the jaxlib releases before the plugins (rows of jaxlib itself)
        vs = [parse_version(r.version) for r in list(m.jax_releases) + list(m.jaxlib_series)]
    known = [v for v in vs if v is not None]
    return str(min(known)) if known else None


def companion_pins(ctx: "Context", torch_version: str) -> List[Tuple[str, str]]:
    """(name, version) of the installed torchvision / torchaudio that match this torch (the release's patch row)."""
    m = ctx.matrices
    rel = m.torch_release(torch_version)
    row = rel.patch(torch_version) if rel is not None else None
    if row is None:
        return []
    return [(name, getattr(row, name)) for name in ("torchvision", "torchaudio")
            if ctx.framework(name) is not None and getattr(row, name, None)]


def release_row(m: "Matrices", family: str, version: str) -> Any:
    """The data's row for this release (torch: its X.Y row; jax: the exact or same-X.Y row), else None."""
    if family == "torch":
        return m.torch_release(version)
    if family == "tensorflow":
        return m.tf_release(version)
    return m.jax_release(version) or m.jaxlib_row(version)


@dataclass
class BuildFacts:
    fw: Framework
    family: str  # torch | tensorflow | jax
    cuda: Optional[str] = None  # as the build states it ("10.1", "11" for a major-only label)
    rocm: Optional[str] = None
    cudnn: Optional[str] = None  # the cuDNN the build names (build_info, local label, its own pin)
    arch_list: List[str] = field(default_factory=list)
    in_data: Optional[bool] = None  # None: the data has no release of this family (none loaded)
    position: str = ""  # "older" | "newer" | "absent" (a release inside the data's range it has no row for)
    oldest: Optional[str] = None
    newest: Optional[str] = None


def build_facts(m: "Matrices", fw: Framework, cudnn_pin: Optional[str] = None) -> Optional[BuildFacts]:
    """The facts of a torch / tensorflow / jaxlib build; None for other distributions."""
    family = FAMILY_OF.get(fw.name)
    if family is None:
        return None
    bf = BuildFacts(fw, family, cuda=fw.cuda_version or None, rocm=fw.rocm_version or None,
                    cudnn=fw.cudnn_version or cudnn_pin, arch_list=list(fw.arch_list or []))
    v = parse_version(fw.version)
    bf.oldest, bf.newest = oldest_known(m, family), m.newest_known(family)
    if bf.oldest is None and bf.newest is None:
        return bf  # no release of the family in the data: nothing to place the build against
    row = release_row(m, family, fw.version) if v is not None else None
    bf.in_data = row is not None
    if row is None and v is not None:
        base = Version(v.base_version)
        oldest, newest = parse_version(bf.oldest), parse_version(bf.newest)
        if oldest is not None and base < oldest:
            bf.position = "older"
        elif newest is not None and base > newest:
            bf.position = "newer"
        else:
            bf.position = "absent"
    return bf


# --------------------------------------------------------------------------- the CUDA builds of an environment

_CUPY_RE = lazy_re(r"^cupy-cuda(\d+)(x?)$")
_CU_TAG = lazy_re(r"^cu(\d{2,3})$")


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


def cuda_builds(ctx: "Context") -> List[CudaBuild]:
    """The CUDA builds installed in the environment, one per framework family (torch, TF, JAX, CuPy)."""
    out: List[CudaBuild] = []
    m = ctx.matrices
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
            if c is None:
                rel = m.tf_release(fw.version)
                if rel is not None and rel.cuda:
                    c, src = rel.cuda, row_source(m, rel)
            if c:
                out.append(CudaBuild(fw, "tensorflow", c, src, fw_label(fw)))
    # JAX: the CUDA plugin (newest major) carries the CUDA code; old jaxlib builds carried it themselves.
    plugins: List[Tuple[int, bool, Framework]] = []
    for fw in fws:
        pm = jax_plugin(fw)
        if pm is not None:
            plugins.append((pm[0], pm[1] == "plugin", fw))
    if plugins:
        plugins.sort(key=lambda t: (t[0], t[1]))
        major, _, fw = plugins[-1]
        out.append(CudaBuild(fw, "jax", str(major), fw_build_source(fw), fw_label(fw)))
    else:
        for name in ("jaxlib", "jax"):
            jfw = ctx.framework(name)
            if jfw is not None and jfw.build == "cuda" and jfw.cuda_version and parse_version(jfw.cuda_version):
                out.append(CudaBuild(jfw, "jax", jfw.cuda_version, fw_build_source(jfw), fw_label(jfw)))
                break
    for fw in fws:
        if fw.name == "cupy" or (fw.distribution or "").lower().startswith("cupy-cuda"):
            if fw.build not in ("cuda", "unknown"):
                continue
            c = fw.cuda_version if parse_version(fw.cuda_version) is not None else None
            if not c:
                cm = _CUPY_RE.match((fw.distribution or "").lower())
                if cm:
                    d = cm.group(1)
                    c = d if cm.group(2) else (f"{int(d[:-1])}.{d[-1]}" if len(d) >= 3 else d)
            if c:
                out.append(CudaBuild(fw, "cupy", c, fw_build_source(fw), fw_label(fw)))
            break
    return out


def cuda_line_serves(m: Any, major: int, cc: str) -> Optional[bool]:
    """Does any CUDA release of `major` target compute capability `cc` (gpus.toml [[arch]] first_cuda /
    last_cuda)? None when the arch is unknown."""
    a = m.arch(cc)
    if a is None:
        return None
    if a.last_cuda and Version(a.last_cuda).major < major:
        return False
    if a.first_cuda and Version(a.first_cuda).major > major:
        return False
    return True


def no_kernel_cause(m: Any, cuda_major: Optional[int], cc: str, dist: str) -> str:
    """The cause key of "no kernel for a GPU of `cc`" (envdoctor.rules.engine folds findings that share one): the
    CUDA line itself when none of its releases targets `cc` (torch's CUDA 13 build and the CUDA 13 nvidia-*
    libraries on a GTX 1080 are one cause), else the distribution's own build."""
    if cuda_major is not None and cuda_line_serves(m, cuda_major, cc) is False:
        return f"cuda-line-cc:{cuda_major}:{cc}"
    return f"no-kernel:{dist}:{cc}"


# --------------------------------------------------------------------------- compiled GPU archs


@dataclass
class ArchInfo:
    arch_list: List[str]
    source: str
    ptx_unknown: bool = False  # the data does not know whether PTX of the last arch is embedded
    presumed: bool = False  # the data marks this arch list UNVERIFIED (presumed, not read)
    rows: List["EvidenceItem"] = field(default_factory=list)


def torch_variant_of(ctx: "Context", fw: Framework) -> Any:
    """The matrices' variant of an installed torch (local label, else the PyPI default whose CUDA matches)."""
    m = ctx.matrices
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
    var = rel.default_variant(platform_key(ctx) or "")
    want = xy(torch_cuda(fw))
    if var is not None and (want is None or xy(var.cuda) == want):
        return var
    if want:
        tag = "cu" + want.replace(".", "")
        return rel.variant(tag)
    return None


def build_arch(ctx: "Context", build: CudaBuild) -> Optional[ArchInfo]:
    """The compiled GPU archs of a torch or TensorFlow build: the build's own list first, the matrices second."""
    from envdoctor.rules.base import EvidenceItem

    fw = build.fw
    m = ctx.matrices
    if fw.arch_list:
        return ArchInfo(list(fw.arch_list), fw_build_source(fw))
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
