"""The ``Matrices`` object: typed, queryable view of all compatibility tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from packaging.version import Version

from envdoctor.facts.versions import canonical_name

from . import load as L
from .tables import (
    AmdGpu,
    AmdTarget,
    ArchInfo,
    CondaChannel,
    CudaRelease,
    CudnnRelease,
    DeprecatedDistribution,
    DriverBranchSupport,
    GpuInfo,
    Incompatibility,
    JaxlibSeries,
    JaxRelease,
    MvcRange,
    TfRelease,
    TorchRelease,
    TorchVariant,
    normalize_cc,
    normalize_os,
    parse_version,
)
from envdoctor.lazyre import lazy_re

# Words that do not identify a GPU model (vendor / brand prefixes) ...
_DROP = {"nvidia", "geforce", "tesla", "quadro", "corporation", "(r)", "(tm)"}
# ... and trailing words that only say memory size, form factor or mobility.
_NOISE = {
    "pcie", "pci", "express", "sxm", "sxm2", "sxm3", "sxm4", "sxm5", "sxm6", "nvl", "hbm2", "hbm2e", "hbm3", "hbm3e",
    "laptop", "gpu", "mobile", "notebook", "with", "max", "q", "maxq", "design", "lhr", "lite", "hash", "rate", "oem",
    "nvgpu", "dgxs", "ac",
}
_MEM = lazy_re(r"^\d+(\.\d+)?(gb|g|mb|gib)$")
_SPLIT = lazy_re(r"[\s\-_/,()\[\]]+")


def gpu_name_tokens(name: str) -> Tuple[str, ...]:
    """Normalised tokens of a GPU name: lower case, vendor/brand words dropped."""
    text = str(name or "").lower().replace("(r)", " ").replace("(tm)", " ").replace("®", " ").replace("™", " ")
    return tuple(t for t in _SPLIT.split(text) if t and t not in _DROP)


def _is_noise(token: str) -> bool:
    return token in _NOISE or bool(_MEM.match(token))


# AMD names (amd-smi MARKET_NAME, rocm-smi card model/series): vendor and brand words dropped
_AMD_DROP = {"amd", "ati", "instinct", "radeon", "(tm)", "(r)", "graphics", "accelerator"}
_GFX_TOKEN = lazy_re(r"^gfx[0-9a-f]{3,4}$")


def amd_name_tokens(name: str) -> Tuple[str, ...]:
    text = str(name or "").lower().replace("®", " ").replace("™", " ").replace("(tm)", " ").replace("(r)", " ")
    return tuple(t for t in _SPLIT.split(text) if t and t not in _AMD_DROP and not _MEM.match(t))


class Matrices:
    """All matrix tables, loaded by :func:`envdoctor.knowledge.load_matrices`."""

    @classmethod
    def empty(cls, why: str = "") -> "Matrices":
        """Matrices with no rows: what the rules read when no data could be loaded (every lookup finds nothing,
        so judgements rest on what the snapshot itself says)."""
        return cls(collected="", warnings=[why] if why else [], sources={}, table_collected={}, cuda_releases=[],
                   mvc={}, archs={}, gpus=[], pytorch_releases=[], conda=[], tensorflow_releases=[], jax_releases=[],
                   cudnn_releases=[], incompatibilities=[])

    def __init__(
        self,
        *,
        collected: str,
        warnings: List[str],
        sources: Dict[str, str],
        table_collected: Dict[str, Optional[str]],
        cuda_releases: List[CudaRelease],
        mvc: Dict[int, MvcRange],
        archs: Dict[str, ArchInfo],
        gpus: List[GpuInfo],
        pytorch_releases: List[TorchRelease],
        conda: List[CondaChannel],
        tensorflow_releases: List[TfRelease],
        jax_releases: List[JaxRelease],
        cudnn_releases: List[CudnnRelease],
        incompatibilities: List[Incompatibility],
        deprecated_distributions: Optional[List[DeprecatedDistribution]] = None,
        driver_branches: Optional[List[DriverBranchSupport]] = None,
        amd_targets: Optional[List[AmdTarget]] = None,
        amd_gpus: Optional[List[AmdGpu]] = None,
        jaxlib_series: Optional[List[JaxlibSeries]] = None,
    ) -> None:
        self.collected = collected
        self.warnings = warnings
        self.sources = sources
        self.table_collected = table_collected
        self.cuda_releases = cuda_releases
        self.mvc = mvc
        self.archs = archs
        self.gpus = gpus
        self.pytorch_releases = pytorch_releases
        self.conda = conda
        self.tensorflow_releases = tensorflow_releases
        self.jax_releases = jax_releases
        self.jaxlib_series = list(jaxlib_series or [])
        self.cudnn_releases = cudnn_releases
        self.incompatibilities = incompatibilities
        self._torch = {r.version: r for r in pytorch_releases}
        self._tf = {r.version: r for r in tensorflow_releases}
        self._facts = {f.key: f for f in incompatibilities}
        self.deprecated_distributions = list(deprecated_distributions or [])
        self.driver_branches = list(driver_branches or [])
        self.amd_targets = list(amd_targets or [])
        self.amd_gpus = list(amd_gpus or [])
        self._amd_index: Dict[Tuple[str, ...], AmdGpu] = {}
        for a in self.amd_gpus:
            for spelling in [a.name] + list(a.aliases):
                key = amd_name_tokens(spelling)
                if key:
                    self._amd_index.setdefault(key, a)
        self._gpu_index: Dict[Tuple[str, ...], GpuInfo] = {}
        for g in gpus:
            for spelling in [g.name] + list(g.aliases):
                key = gpu_name_tokens(spelling)
                if not key:
                    continue
                other = self._gpu_index.get(key)
                if other is not None and other is not g and other.cc != g.cc:
                    self.warnings.append(
                        f"{g.origin}: GPU name {spelling!r} is ambiguous (also {other.name!r} at {other.origin}); kept the first")
                    continue
                self._gpu_index.setdefault(key, g)

    # ------------------------------------------------------------------ CUDA / driver

    def driver_branch_support(self, cc: object) -> Optional[DriverBranchSupport]:
        """The [[branch]] row (gpu_support.toml) of a compute capability; None when the data has none."""
        for row in self.driver_branches:
            if row.covers(cc):
                return row
        return None

    def cuda_release(self, version: Optional[str]) -> Optional[CudaRelease]:
        """The row of a toolkit version: ``"12.4"`` -> the 12.4 GA row, ``"12.4.1"`` -> that update; None for
        no version (or an unparsable one).

        An unknown ``X.Y.Z`` maps to the newest X.Y row not newer than it; when Z looks like an nvcc
        build number (> 9) in a family versioned by update numbers, to the GA row.
        """
        v = parse_version(version)
        if v is None:
            return None
        rel = v.release
        major, minor = rel[0], (rel[1] if len(rel) > 1 else 0)
        rows = [r for r in self.cuda_releases if (r.major, r.minor) == (major, minor)]
        if not rows:
            return None
        ga = next((r for r in rows if r.ga), rows[0])
        if len(rel) < 3:
            return ga
        base = Version(v.base_version)
        for r in rows:
            if Version(r.version) == base:
                return r
        if rel[2] > 9 and all(len(Version(r.version).release) < 3 or Version(r.version).release[2] <= 9 for r in rows):
            return ga
        older = [r for r in rows if Version(r.version) <= base]
        return max(older, key=lambda r: Version(r.version)) if older else ga

    def min_driver_for_cuda(self, cuda: Optional[str], os: str = "linux") -> Optional[str]:
        """Toolkit driver of that release (full features / PTX JIT); None when unknown or N/A."""
        r = self.cuda_release(cuda)
        return r.driver(os) if r is not None else None

    def mvc_floor(self, cuda_major: int, os: str = "linux") -> Optional[str]:
        """Minor-version-compatibility floor of the CUDA ``cuda_major`` family (None before 11 / unknown)."""
        row = self.mvc.get(int(cuda_major))
        return row.floor(os) if row is not None else None

    def driver_runs_cuda(self, driver: str, cuda: str, os: str = "linux") -> bool:
        """True when an application built with CUDA ``cuda`` runs on ``driver`` (driver >= MVC floor of the major;
        for families without MVC, >= the toolkit driver).  False below it, or when the data knows no floor."""
        dv = parse_version(driver)
        cv = parse_version(cuda)
        if dv is None or cv is None or normalize_os(os) is None:
            return False
        floor = self.mvc_floor(cv.major, os)
        if floor is None:
            floor = self.min_driver_for_cuda(cuda, os)
        fv = parse_version(floor)
        if fv is None:
            return False
        return dv >= fv

    def max_cuda_for_driver(self, driver: str, os: str = "linux") -> Optional[str]:
        """Newest toolkit ``X.Y`` whose toolkit driver is <= ``driver`` (what nvidia-smi's 'CUDA Version' means).

        Where a family has no per-release driver for ``os`` (Windows 13.x), a driver at or above the family's
        MVC floor counts for the family's first GA release."""
        dv = parse_version(driver)
        if dv is None or normalize_os(os) is None:
            return None
        best: Optional[Version] = None
        for r in self.cuda_releases:
            need = parse_version(r.driver(os))
            if need is not None and need <= dv:
                rv = Version(r.series)
                if best is None or rv > best:
                    best = rv
        for major, row in self.mvc.items():
            floor = parse_version(row.floor(os))
            if floor is None or dv < floor:
                continue
            fam = [r for r in self.cuda_releases if r.major == major and r.ga]
            if fam and all(r.driver(os) is None for r in fam):
                first = Version(min(fam, key=lambda r: Version(r.version)).series)
                if best is None or first > best:
                    best = first
        return None if best is None else f"{best.major}.{best.minor}"

    def knows_cuda_series(self, series: Version) -> bool:
        """Is ``series`` (X.Y) no older than the oldest toolkit the data knows (cuda_driver.toml)?"""
        if not hasattr(self, "_oldest_cuda"):
            self._oldest_cuda: Optional[Version] = min((Version(s) for s in self.cuda_series()), default=None)
        return self._oldest_cuda is not None and series >= self._oldest_cuda

    def cuda_series(self) -> List[str]:
        """All known toolkit series ``X.Y``, ascending."""
        out: List[str] = []
        for r in self.cuda_releases:
            if r.series not in out:
                out.append(r.series)
        return out

    # ------------------------------------------------------------------ GPUs

    def arch(self, cc: str) -> Optional[ArchInfo]:
        key = normalize_cc(cc)
        return self.archs.get(key) if key else None

    def gpu_info(self, name: str) -> Optional[GpuInfo]:
        """Tolerant name matching: case-insensitive, 'NVIDIA'/'GeForce'/'Tesla'/'Quadro' ignored, and trailing
        memory / form-factor / laptop words ('80GB', 'HBM3', 'SXM4', 'PCIe', 'Laptop GPU', 'Max-Q') allowed."""
        tokens = gpu_name_tokens(name)
        if not tokens:
            return None
        hit = self._gpu_index.get(tokens)
        if hit is not None:
            return hit
        for n in range(len(tokens) - 1, 0, -1):
            if all(_is_noise(t) for t in tokens[n:]):
                hit = self._gpu_index.get(tokens[:n])
                if hit is not None:
                    return hit
        return None

    def nearest_gpu_names(self, name: str, n: int = 3) -> List[str]:
        """The GPU names of the data closest to ``name`` (a hint for a name the data does not know), best first."""
        import difflib

        want = " ".join(gpu_name_tokens(name))
        names = {" ".join(k): g.name for k, g in self._gpu_index.items()}
        hits = difflib.get_close_matches(want, list(names), n=n * 3, cutoff=0.6)
        out: List[str] = []
        for h in hits:
            if names[h] not in out:
                out.append(names[h])
        return out[:n]

    # ------------------------------------------------------------------ AMD GPUs (amd_gpus.toml)

    def amd_target(self, gfx: str) -> Optional[AmdTarget]:
        key = str(gfx or "").strip().lower().split(":")[0]  # "gfx90a:sramecc+:xnack-" -> gfx90a
        return next((t for t in self.amd_targets if t.gfx == key), None)

    def amd_gpu_info(self, name: str) -> Optional[AmdGpu]:
        """The [[gpu]] row of an AMD GPU name as amd-smi / rocm-smi print it ("AMD Instinct MI300X",
        "Arcturus GL-XL [AMD Instinct MI100]"): the longest row name whose words appear in a row in the name.
        None when nothing matches, or when the longest matches disagree on the target."""
        tokens = amd_name_tokens(name)
        best: List[AmdGpu] = []
        best_len = 0
        for key, row in self._amd_index.items():
            n = len(key)
            if n < best_len or not any(tokens[i:i + n] == key for i in range(len(tokens) - n + 1)):
                continue
            if n > best_len:
                best, best_len = [], n
            best.append(row)
        return best[0] if best and len({r.gfx for r in best}) == 1 else None

    def amd_gfx_for_gpu(self, name: str) -> Optional[str]:
        """The LLVM target of a GPU named as a tool prints it, or of a bare target name ("gfx942")."""
        for t in amd_name_tokens(name):
            if _GFX_TOKEN.match(t.split(":")[0]):  # rocminfo: "gfx90a:sramecc+:xnack-"
                return t.split(":")[0]
        row = self.amd_gpu_info(name)
        return row.gfx if row is not None else None

    def cc_for_gpu_name(self, name: str) -> Optional[str]:
        g = self.gpu_info(name)
        return g.cc if g is not None else None

    def cuda_supports_cc(self, cuda: str, cc: str) -> Optional[bool]:
        """Can nvcc of CUDA ``cuda`` build SASS for ``cc``?  None when the arch or version is unknown."""
        a = self.arch(cc)
        cv = parse_version(cuda)
        if a is None or cv is None:
            return None
        rel = cv.release + (0,)
        cxy = Version(f"{rel[0]}.{rel[1]}")
        if a.first_cuda:
            if cxy < Version(a.first_cuda):
                return False
        elif not self.knows_cuda_series(cxy):
            return None  # older than the oldest toolkit the data knows
        if a.last_cuda and cxy > Version(a.last_cuda):
            return False
        return True

    # ------------------------------------------------------------------ PyTorch

    def torch_release(self, version: str) -> Optional[TorchRelease]:
        """``"2.1.2"`` / ``"2.1.2+cu121"`` / ``"2.1"`` -> the 2.1 release row (``.has_patch()`` says if the patch is known)."""
        v = parse_version(version)
        if v is None:
            return None
        rel = v.release + (0,)
        return self._torch.get(f"{rel[0]}.{rel[1]}")

    def torch_variant(self, version: str, variant: str) -> Optional[TorchVariant]:
        """Variant ``"cu121"`` / ``"cpu"`` / ``"rocm6.0"`` (a leading '+' is accepted) of that release; None when never published."""
        rel = self.torch_release(version)
        return rel.variant(variant) if rel is not None else None

    def torch_default_variant(self, version: str, platform: str = "linux-x86_64") -> Optional[TorchVariant]:
        """The build a plain ``pip install torch==version`` gets from PyPI on ``platform``."""
        rel = self.torch_release(version)
        return rel.default_variant(platform) if rel is not None else None

    def torch_installed_variant(self, version: str, platform: str = "linux-x86_64") -> Optional[TorchVariant]:
        """Variant of an installed ``torch.__version__``: its local label (``2.5.1+cu121``) or, without one, the PyPI default."""
        v = parse_version(version)
        if v is None:
            return None
        if v.local:
            return self.torch_variant(version, v.local)
        return self.torch_default_variant(version, platform)

    # ------------------------------------------------------------------ TensorFlow

    def tf_release(self, version: str) -> Optional[TfRelease]:
        v = parse_version(version)
        if v is None:
            return None
        rel = v.release + (0,)
        row = self._tf.get(f"{rel[0]}.{rel[1]}")
        if row is None:
            return None
        return row.for_patch(version) or row  # a known patch release: its own pins over the series row

    # ------------------------------------------------------------------ JAX

    def jaxlib_row(self, version: str) -> Optional[JaxlibSeries]:
        """The [[jaxlib]] row whose releases include this jaxlib version (its local label ignored); None when none."""
        return next((r for r in self.jaxlib_series if r.covers(version)), None)

    def jax_release(self, version: str) -> Optional[JaxRelease]:
        """Exact row, else the newest known row of the same X.Y that is not newer; None otherwise."""
        v = parse_version(version)
        if v is None:
            return None
        base = Version(v.public)
        best: Optional[JaxRelease] = None
        for r in self.jax_releases:
            rv = Version(r.version)
            if rv == base:
                return r
            if (rv.major, rv.minor) == (base.major, base.minor) and rv <= base:
                if best is None or rv > Version(best.version):
                    best = r
        return best

    # ------------------------------------------------------------------ cuDNN

    def cudnn_release(self, version: str) -> Optional[CudnnRelease]:
        for r in self.cudnn_releases:
            if r.contains(version):
                return r
        return None

    # ------------------------------------------------------------------ other

    def incompatibility(self, key: str) -> Optional[Incompatibility]:
        return self._facts.get(key)

    def fact_value(self, key: str) -> str:
        """The value of incompatibilities.toml's [[fact]] `key`; a KeyError names a key the data lacks."""
        fact = self._facts.get(key)
        if fact is None:
            raise KeyError(f"matrices/incompatibilities.toml has no [[fact]] {key!r}")
        return fact.value

    def deprecated_distribution(self, name: str, version: Optional[str] = None) -> Optional[DeprecatedDistribution]:
        """The row saying distribution `name` at `version` (None: some release of it) installs no framework."""
        norm = canonical_name(name)
        for row in self.deprecated_distributions:
            if row.name == norm and row.covers(version):
                return row
        return None

    def install_name(self, name: str, version: Optional[str]) -> str:
        """The distribution to name in a pip command for `name`==`version`: its replacement where `name` is only
        a stub at that version (tensorflow-gpu 2.12+ -> tensorflow), else `name` itself."""
        row = self.deprecated_distribution(name, version) if version is not None else None
        return row.replacement if row is not None else name

    def row_source(self, row: object) -> str:
        """``"<source> [verified: <how>]"`` of any row."""
        src = getattr(row, "source", None) or "unknown source"
        ver = getattr(row, "verified", None) or "not stated"
        return f"{src} [verified: {ver}]"

    def newest_known(self, framework: str) -> Optional[str]:
        """Newest version the data knows for ``torch`` | ``tensorflow`` | ``jax``."""
        fw = str(framework or "").strip().lower()
        if fw in ("torch", "pytorch"):
            patches = [Version(p) for r in self.pytorch_releases for p in r.patches]
            return str(max(patches)) if patches else None
        if fw in ("tensorflow", "tf"):
            tested = [Version(r.tested) for r in self.tensorflow_releases]
            return str(max(tested)) if tested else None
        if fw in ("jax", "jaxlib"):
            vs = [Version(r.version) for r in self.jax_releases]
            return str(max(vs)) if vs else None
        return None


    def oldest_known(self, framework: str) -> Optional[str]:
        """Oldest release the data knows for ``torch`` | ``tensorflow`` | ``jax``: below it, the data is silent."""
        fw = str(framework or "").strip().lower()
        vs: List[Version] = []
        if fw in ("torch", "pytorch"):
            vs = [Version(p) for r in self.pytorch_releases for p in r.patches]
        elif fw.startswith(("tensorflow", "tf")):
            vs = [Version(v) for r in self.tensorflow_releases for v in r.versions]
        elif fw in ("jax", "jaxlib"):
            vs = [Version(r.version) for r in self.jax_releases]
        return str(min(vs)) if vs else None


def load_matrices(cache_dir: Optional[Path] = None, bundled_dir: Optional[Path] = None) -> Matrices:
    """Load all tables: bundled data, overlaid by valid ``<cache_dir>/<table>.toml`` files.  Never raises.

    The typed rows are kept in a compiled cache keyed by the hash of every table file read (see
    :mod:`envdoctor.knowledge.compiled`): a hit reads them back without parsing or validating again.
    """
    from . import compiled

    bundled = Path(bundled_dir) if bundled_dir is not None else L.bundled_dir()
    cache = Path(cache_dir) if cache_dir is not None else L.default_cache_dir()
    key, parts = compiled.lookup(bundled, cache)
    if parts is None:
        parts = _build_parts(bundled, cache)
        if key is not None:
            compiled.store(key, parts)
    return Matrices(**dict(parts, warnings=list(parts["warnings"])))


def _build_parts(bundled: Path, cache: Path) -> Dict[str, Any]:
    """Matrices' keyword arguments, read, validated and built from the TOML tables."""
    warnings: List[str] = []
    merged: Dict[str, L.MergedTable] = {}
    for table in L.TABLES:
        try:
            mt, w = L.load_table(table, bundled, cache)
        except Exception as exc:  # noqa: BLE001 - loading must never raise
            warnings.append(f"{bundled / (table + '.toml')}: could not load: {exc!r}")
            mt = L.MergedTable(table=table, collected=None, source="", rows={k: [] for k in L.SPECS[table]})
            w = []
        warnings.extend(w)
        merged[table] = mt

    def guarded(name: str, fn: Callable[[], Any], default: Any) -> Any:
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001
            warnings.append(f"{merged[name].source or name}: could not build table: {exc!r}")
            return default

    cuda_releases, mvc = guarded("cuda_driver", lambda: L.build_cuda(merged["cuda_driver"]), ([], {}))
    archs, gpus = guarded("gpus", lambda: L.build_gpus(merged["gpus"]), ({}, []))
    torch, conda = guarded("pytorch", lambda: L.build_pytorch(merged["pytorch"], warnings), ([], []))
    tf = guarded("tensorflow", lambda: L.build_tensorflow(merged["tensorflow"], warnings), [])
    jax = guarded("jax", lambda: L.build_jax(merged["jax"], warnings), [])
    jaxlib = guarded("jax", lambda: L.build_jaxlib(merged["jax"]), [])
    cudnn = guarded("cudnn", lambda: L.build_cudnn(merged["cudnn"]), [])
    facts = guarded("incompatibilities", lambda: L.build_incompatibilities(merged["incompatibilities"]), [])
    deprecated = guarded("incompatibilities",
                         lambda: L.build_deprecated_distributions(merged["incompatibilities"]), [])
    branches = guarded("gpu_support", lambda: L.build_gpu_support(merged["gpu_support"]), [])
    amd_targets, amd_gpus = guarded("amd_gpus", lambda: L.build_amd_gpus(merged["amd_gpus"]), ([], []))
    table_collected = {t: m.collected for t, m in merged.items()}
    dates = [d for d in table_collected.values() if d]
    return dict(
        collected=min(dates) if dates else "",
        warnings=warnings,
        sources={t: m.source for t, m in merged.items()},
        table_collected=table_collected,
        cuda_releases=cuda_releases,
        mvc=mvc,
        archs=archs,
        gpus=gpus,
        pytorch_releases=torch,
        conda=conda,
        tensorflow_releases=tf,
        jax_releases=jax,
        jaxlib_series=jaxlib,
        cudnn_releases=cudnn,
        incompatibilities=facts,
        deprecated_distributions=deprecated,
        driver_branches=branches,
        amd_targets=amd_targets,
        amd_gpus=amd_gpus,
    )
