"""Typed rows of the curated compatibility matrices (``matrices/*.toml``).

Every row dataclass is frozen and carries ``source`` (where the fact was read, with the date) and
``verified`` (how it was checked; starts with ``UNVERIFIED`` when it could not be checked) plus
``origin`` (``file:line`` it was loaded from).  Version comparisons use :mod:`packaging`.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from envdoctor.facts.platform import BUILD_PLATFORMS, TABLE_PLATFORMS, driver_os_of, marker_env_for, platform_facts
from envdoctor.facts.versions import cc_tuple, normalize_cc, parse_version
from envdoctor.facts.versions import major_minor as series
from envdoctor.lazyre import lazy_re
from envdoctor.records import dataclass, field, replace

__all__ = [
    "ArchInfo",
    "CondaChannel",
    "CudaRelease",
    "CudnnRelease",
    "DriverBranchSupport",
    "GpuInfo",
    "Incompatibility",
    "JaxPlugin",
    "JaxRelease",
    "MvcRange",
    "TfRelease",
    "TorchPatch",
    "TorchRelease",
    "TorchVariant",
    "build_runs_on_cc",
    "normalize_cc",
    "normalize_os",
    "parse_version",
    "series",
]

PLATFORMS = TABLE_PLATFORMS  # the keys a table may use (envdoctor.facts.platform owns them)


# --------------------------------------------------------------------------- helpers


def normalize_os(value: object) -> Optional[str]:
    """``"linux"`` or ``"windows"`` (WSL uses the Windows driver); None for anything else."""
    text = str(value or "").strip().lower()
    facts = platform_facts(text)
    if facts is not None:  # a platform key: its driver's (none for macOS)
        return None if facts.system == "Darwin" else driver_os_of(text)
    if text in ("linux", "posix"):
        return "linux"
    if text in ("windows", "win", "win32", "nt", "wsl"):
        return "windows"
    return None


_ARCH_ENTRY = lazy_re(r"^(sm|compute)_(\d+?)(\d)([af]?)$")


def build_runs_on_cc(arch_list: Sequence[str], cc: object) -> Optional[bool]:
    """Can a binary built for ``arch_list`` (``sm_XY`` cubins, ``compute_XY`` PTX) run on a GPU of ``cc``?

    A cubin ``sm_XY`` runs on X.Z with Z >= Y (same major; not the arch-specific ``a`` variants);
    PTX ``compute_XY`` is JIT-compiled for any cc >= X.Y.  None when ``cc`` or the list is unusable.
    """
    target = cc_tuple(cc)
    if target is None or not arch_list:
        return None
    usable = False
    for entry in arch_list:
        m = _ARCH_ENTRY.match(str(entry).strip().lower())
        if not m:
            continue
        usable = True
        kind, major, minor, suffix = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)
        if kind == "sm":
            if suffix == "a":
                if (major, minor) == target:
                    return True
            elif major == target[0] and minor <= target[1]:
                return True
        elif (major, minor) <= target:
            return True
    return False if usable else None


class _Row:
    """Mixin: every row has ``source`` / ``verified`` / ``origin``."""

    source: str
    verified: str
    origin: str

    @property
    def unverified(self) -> bool:
        return self.verified.strip().upper().startswith("UNVERIFIED")


# --------------------------------------------------------------------------- CUDA / driver


@dataclass(frozen=True)
class CudaRelease(_Row):
    """One CUDA toolkit release (Table 3 row)."""

    version: str  # "12.4.1" (10.x: build number, "10.1.243")
    label: str  # "12.4 Update 1"
    ga: bool  # the X.Y GA row
    source: str
    verified: str
    driver_linux: Optional[str] = None  # minimum toolkit driver, Linux x86_64
    driver_windows: Optional[str] = None  # minimum toolkit driver, Windows x86_64 (None: N/A or unknown)
    bundled_driver_linux: Optional[str] = None
    windows_note: Optional[str] = None
    note: Optional[str] = None
    origin: str = ""

    @property
    def major(self) -> int:
        return Version(self.version).major

    @property
    def minor(self) -> int:
        return Version(self.version).minor

    @property
    def series(self) -> str:
        return f"{self.major}.{self.minor}"

    def driver(self, os: str = "linux") -> Optional[str]:
        which = normalize_os(os)
        if which == "linux":
            return self.driver_linux
        if which == "windows":
            return self.driver_windows
        return None


@dataclass(frozen=True)
class MvcRange(_Row):
    """Minor-version-compatibility floor of a CUDA major family."""

    cuda_major: int
    min_driver_linux: str
    source: str
    verified: str
    min_driver_windows: Optional[str] = None
    min_driver_windows_alt: Optional[str] = None
    min_driver_branch: Optional[int] = None
    note: Optional[str] = None
    origin: str = ""

    def floor(self, os: str = "linux") -> Optional[str]:
        which = normalize_os(os)
        if which == "linux":
            return self.min_driver_linux
        if which == "windows":
            return self.min_driver_windows
        return None


# --------------------------------------------------------------------------- GPUs


@dataclass(frozen=True)
class ArchInfo(_Row):
    """A compute capability: architecture name and the CUDA toolkits whose nvcc builds SASS for it."""

    cc: str  # "8.6"
    sm: str  # "sm_86"
    name: str  # "Ampere"
    source: str
    verified: str
    chips: List[str] = field(default_factory=list)
    first_cuda: Optional[str] = None  # None: before the covered range (10.0)
    last_cuda: Optional[str] = None  # None: still supported
    deprecated_in: Optional[str] = None
    renamed_to: Optional[str] = None  # cc this one was renumbered to (10.1 -> 11.0 in CUDA 13.0)
    renamed_from: Optional[str] = None
    note: Optional[str] = None
    origin: str = ""


@dataclass(frozen=True)
class GpuInfo(_Row):
    """A GPU product name and its compute capability."""

    name: str
    cc: str
    source: str
    verified: str
    segment: Optional[str] = None
    aliases: List[str] = field(default_factory=list)
    note: Optional[str] = None
    origin: str = ""


# --------------------------------------------------------------------------- PyTorch


@dataclass(frozen=True)
class TorchPatch(_Row):
    """One torch patch release: companions and per-patch pins."""

    version: str  # "2.5.1"
    source: str
    verified: str
    torchvision: Optional[str] = None
    torchvision_requires: Optional[str] = None  # torch requirement in torchvision's metadata
    torchaudio: Optional[str] = None
    torchaudio_requires: Optional[str] = None
    triton: Optional[str] = None  # specifier in torch's Requires-Dist ("==3.1.0", "~=3.8.0")
    triton_marker: Optional[str] = None  # the PEP 508 marker of the triton line beyond the platform (python_version)
    requires_python: Optional[str] = None
    python: Optional[str] = None  # overrides the release's python when set
    pypi_wheel: Optional[str] = None
    note: Optional[str] = None
    origin: str = ""


def marker_holds(marker: Optional[str], python: Optional[str], platform: str = "linux-x86_64") -> Optional[bool]:
    """Does a Requires-Dist marker hold for CPython ``python`` on ``platform`` (a matrices platform key)?  True
    without a marker; None when it cannot be told (no Python, an unknown platform, a marker that does not parse)."""
    if not marker:
        return True
    facts = platform_facts(platform) if platform in BUILD_PLATFORMS else None
    if python is None or facts is None:
        return None
    from packaging.markers import InvalidMarker, Marker  # packaging's marker parser: only for rows that carry one

    try:
        env = marker_env_for(facts.system, facts.machine, python)
        env["extra"] = ""
        return bool(Marker(marker).evaluate(env))
    except (InvalidMarker, ValueError, TypeError):
        return None


@dataclass(frozen=True)
class TorchVariant(_Row):
    """One published build flavour of a torch release (cpu, cuXYZ, rocmX.Y)."""

    torch: str  # release series "2.5"
    name: str  # "cu124" | "cpu" | "rocm6.2"
    kind: str  # "cuda" | "cpu" | "rocm"
    source: str
    verified: str
    status: Optional[str] = None
    index_url: Optional[str] = None
    local_label: Optional[str] = None  # "+cu124" on the download index (PyPI's copy has no label)
    pypi_default: bool = False  # the plain PyPI linux-x86_64 wheel is this build
    platforms: List[str] = field(default_factory=list)
    cuda: Optional[str] = None  # "12.4"
    cuda_toolkit: Optional[str] = None  # "12.6.3" when known
    rocm: Optional[str] = None
    cudnn: Optional[str] = None  # "9.1.0.70"
    arch_list: List[str] = field(default_factory=list)  # linux-x86_64, ["sm_50", ...]
    ptx: Optional[bool] = None  # PTX of the last arch embedded; None = unknown / disputed
    arch_list_aarch64: List[str] = field(default_factory=list)
    arch_source: Optional[str] = None
    arch_verified: Optional[str] = None
    nvidia_pins: Dict[str, str] = field(default_factory=dict)  # PyPI Requires-Dist pins (default build)
    # package -> the PEP 508 marker of its Requires-Dist line, where it says more than the platform
    # (cuda-bindings only below some Python): the pin applies only where the marker holds
    pin_markers: Dict[str, str] = field(default_factory=dict)
    cuda_toolkit_extras: List[str] = field(default_factory=list)
    platforms_note: Optional[str] = None
    note: Optional[str] = None
    origin: str = ""

    def pins_for(self, python: Optional[str], platform: str = "linux-x86_64") -> Dict[str, str]:
        """``nvidia_pins`` that apply for CPython ``python`` on ``platform``: a pin whose marker (``pin_markers``)
        does not hold there is left out; with ``python`` unknown every pin is kept."""
        return {name: sp for name, sp in self.nvidia_pins.items()
                if marker_holds(self.pin_markers.get(name), python, platform) is not False}

    @property
    def cuda_major(self) -> Optional[int]:
        v = parse_version(self.cuda)
        return v.major if v is not None else None

    @property
    def arch_unverified(self) -> bool:
        return bool(self.arch_verified) and str(self.arch_verified).strip().upper().startswith("UNVERIFIED")

    def compiled_archs(self) -> List[str]:
        """arch_list plus ``compute_XY`` for the last arch when PTX is known to be embedded."""
        out = list(self.arch_list)
        if self.ptx and self.arch_list:
            out.append("compute_" + self.arch_list[-1].split("_", 1)[1])
        return out

    def runs_on_cc(self, cc: object) -> Optional[bool]:
        """Does this build have kernels for ``cc`` (SASS, or PTX when known)?  None when unknown."""
        if self.kind != "cuda":
            return None
        result = build_runs_on_cc(self.compiled_archs(), cc)
        if result is False and self.ptx is None and self.arch_list:
            # The last arch's PTX may be embedded (disputed): newer GPUs might still JIT.
            last = cc_tuple(self.arch_list[-1])
            target = cc_tuple(cc)
            if last is not None and target is not None and target > last:
                return None
        return result


@dataclass(frozen=True)
class TorchRelease(_Row):
    """A torch release series ("2.5") with its patches and variants."""

    version: str  # "2.5"
    source: str
    verified: str
    patches: List[str] = field(default_factory=list)
    released: Optional[str] = None
    requires_python: Optional[str] = None  # metadata
    python: Optional[str] = None  # specifier of CPython versions with wheels
    python_note: Optional[str] = None
    pypi_default: Dict[str, str] = field(default_factory=dict)  # platform -> variant name
    pypi_default_note: Optional[str] = None
    patch_rows: List[TorchPatch] = field(default_factory=list)
    variants: List[TorchVariant] = field(default_factory=list)
    note: Optional[str] = None
    origin: str = ""

    def variant(self, name: str) -> Optional[TorchVariant]:
        key = str(name or "").strip().lower().lstrip("+")
        for v in self.variants:
            if v.name == key:
                return v
        return None

    def patch(self, version: str) -> Optional[TorchPatch]:
        v = parse_version(version)
        if v is None:
            return None
        base = Version(v.base_version)
        for p in self.patch_rows:
            if Version(p.version) == base:
                return p
        return None

    def has_patch(self, version: str) -> bool:
        v = parse_version(version)
        if v is None:
            return False
        base = Version(v.base_version)
        return any(Version(p) == base for p in self.patches)

    def default_variant(self, platform: str = "linux-x86_64") -> Optional[TorchVariant]:
        name = self.pypi_default.get(platform)
        return self.variant(name) if name else None

    def python_spec(self, patch: Optional[str] = None) -> Optional[SpecifierSet]:
        text = self.python
        if patch:
            p = self.patch(patch)
            if p is not None and p.python:
                text = p.python
        try:
            return SpecifierSet(text) if text else None
        except InvalidSpecifier:
            return None

    @property
    def newest_patch(self) -> Optional[str]:
        if not self.patches:
            return None
        return str(max(Version(p) for p in self.patches))


@dataclass(frozen=True)
class CondaChannel(_Row):
    channel: str
    source: str
    verified: str
    first: Optional[str] = None
    last: Optional[str] = None
    note: Optional[str] = None
    origin: str = ""


# --------------------------------------------------------------------------- TensorFlow


@dataclass(frozen=True)
class TfPatch(_Row):
    """A TensorFlow release of a known series other than its tested one (2.15.1, 2.16.2 ...): what its own
    metadata says; the build configuration (CUDA, cuDNN, compute capabilities) is the series'."""

    version: str
    source: str
    verified: str
    and_cuda: Dict[str, str] = field(default_factory=dict)
    requires_python: Optional[str] = None
    python: Optional[str] = None
    pypi_wheel: Optional[str] = None
    note: Optional[str] = None
    origin: str = ""


@dataclass(frozen=True)
class TfRelease(_Row):
    """A TensorFlow release series with its tested build configuration."""

    version: str  # "2.15"
    tested: str  # "2.15.0"
    python: str  # ">=3.9,<3.12"
    cuda: str  # "12.2"
    cudnn: str  # "8.9"
    source: str
    verified: str
    python_tested: Optional[str] = None
    requires_python: Optional[str] = None
    and_cuda: Dict[str, str] = field(default_factory=dict)  # tensorflow[and-cuda] pins (2.14+)
    gpu_platforms: List[str] = field(default_factory=list)
    compute_capabilities: List[str] = field(default_factory=list)  # [] = unknown
    cc_verified: Optional[str] = None
    compiler: Optional[str] = None
    build_tool: Optional[str] = None
    gpu_distribution: Optional[str] = None  # the distribution of the GPU wheels (tensorflow-gpu up to 2.0); None: tensorflow
    note: Optional[str] = None
    origin: str = ""
    patch_rows: List["TfPatch"] = field(default_factory=list)  # other releases of the series (2.15.1 ...)

    def gpu_on(self, platform: str) -> bool:
        return platform in self.gpu_platforms

    @property
    def versions(self) -> List[str]:
        """Every release of the series the data knows: ``tested`` and the patch rows, ascending."""
        return sorted({self.tested, *(p.version for p in self.patch_rows)}, key=Version)

    def for_patch(self, version: str) -> Optional["TfRelease"]:
        """The series row as it applies to ``version``: its patch row's pins, Python range and provenance
        over the series' build configuration; None when the series has no such release."""
        want = parse_version(version)
        if want is None:
            return None
        if want == Version(self.tested):
            return self
        for p in self.patch_rows:
            if Version(p.version) == want:
                return replace(self, tested=p.version, and_cuda=dict(p.and_cuda) if p.and_cuda else dict(self.and_cuda),
                               requires_python=p.requires_python or self.requires_python,
                               python=p.python or self.python, source=p.source, verified=p.verified,
                               note=p.note or self.note, origin=p.origin, patch_rows=[])
        return None

    @property
    def cudnn_pin(self) -> Optional[str]:
        for name, spec in self.and_cuda.items():
            if name.startswith("nvidia-cudnn"):
                return spec
        return None

    def runs_on_cc(self, cc: object) -> Optional[bool]:
        return build_runs_on_cc(self.compute_capabilities, cc) if self.compute_capabilities else None


# --------------------------------------------------------------------------- JAX


@dataclass(frozen=True)
class JaxPlugin(_Row):
    """The CUDA plugin a jax release installs via its ``cudaNN`` extra."""

    jax: str
    name: str  # "cuda12" | "cuda13"
    package: str  # "jax-cuda12-plugin"
    pin: str  # specifier jax's extra puts on the plugin
    cuda_major: int
    cudnn: str  # nvidia-cudnn requirement of the plugin's with-cuda extra
    cudnn_min: str
    driver_min: str
    cc_min: str
    source: str
    verified: str
    pjrt: Optional[str] = None
    cuda_runtime: Optional[str] = None
    note: Optional[str] = None
    origin: str = ""


@dataclass(frozen=True)
class JaxlibSeries(_Row):
    """jaxlib releases ``version`` .. ``last`` whose CUDA builds were jaxlib itself (``+cuda111``,
    ``+cuda11.cudnn82``), before the CUDA plugins: the Pythons of their wheels, the CUDA X.Y of their builds,
    the cuDNN each CUDA X.Y was built with (where the label does not say it) and the compute capabilities of
    the CUDA kernels compiled into jaxlib (XLA generates the rest for the GPU it runs on)."""

    version: str  # first jaxlib release of the row
    last: str  # last jaxlib release of the row (inclusive)
    python: str
    source: str
    verified: str
    cuda: List[str] = field(default_factory=list)
    cudnn: Dict[str, str] = field(default_factory=dict)  # CUDA X.Y of the label -> cuDNN built with
    arch_list: List[str] = field(default_factory=list)
    arch_source: Optional[str] = None
    arch_verified: Optional[str] = None
    note: Optional[str] = None
    origin: str = ""

    def covers(self, version: str) -> bool:
        v = parse_version(version)
        return v is not None and Version(self.version) <= Version(v.public) <= Version(self.last)

    @property
    def cc_min(self) -> Optional[str]:
        """The lowest compute capability its compiled kernels serve (None when the list is unknown)."""
        ccs = sorted(Version(cc) for cc in (normalize_cc(a) for a in self.arch_list) if cc)
        return str(ccs[0]) if ccs else None


@dataclass(frozen=True)
class JaxRelease(_Row):
    version: str  # "0.4.30"
    jaxlib: str  # specifier on jaxlib
    source: str
    verified: str
    requires_python: Optional[str] = None
    cuda_extra: Optional[str] = None  # what jax[cuda] installs ("cuda12")
    plugins: Dict[str, JaxPlugin] = field(default_factory=dict)
    note: Optional[str] = None
    origin: str = ""

    def jaxlib_ok(self, jaxlib_version: str) -> Optional[bool]:
        v = parse_version(jaxlib_version)
        if v is None:
            return None
        try:
            return SpecifierSet(self.jaxlib).contains(Version(v.public), prereleases=True)
        except InvalidSpecifier:
            return None


# --------------------------------------------------------------------------- cuDNN


@dataclass(frozen=True)
class CudnnRelease(_Row):
    versions: str  # PEP 440 specifier covered by this row
    label: str
    cuda_majors: List[int]
    cc_min: str
    header: str
    version_multiplier: int  # CUDNN_VERSION = MAJOR*multiplier + MINOR*100 + PATCHLEVEL
    source: str
    verified: str
    cc_min_by_cuda: Dict[str, str] = field(default_factory=dict)
    driver_min_linux: Dict[str, str] = field(default_factory=dict)  # CUDA major -> driver
    driver_min_windows: Dict[str, str] = field(default_factory=dict)
    note: Optional[str] = None
    origin: str = ""

    def contains(self, version: object) -> bool:
        v = parse_version(version)
        if v is None:
            return False
        return SpecifierSet(self.versions).contains(Version(v.public), prereleases=True)

    def min_cc(self, cuda_major: Optional[int] = None) -> str:
        if cuda_major is not None and str(cuda_major) in self.cc_min_by_cuda:
            return self.cc_min_by_cuda[str(cuda_major)]
        return self.cc_min

    def driver_min(self, cuda_major: int, os: str = "linux") -> Optional[str]:
        which = normalize_os(os)
        table = self.driver_min_linux if which == "linux" else self.driver_min_windows if which == "windows" else {}
        return table.get(str(cuda_major))

    def version_macro(self, version: str) -> Optional[int]:
        v = parse_version(version)
        if v is None:
            return None
        rel = v.release + (0, 0)
        return rel[0] * self.version_multiplier + rel[1] * 100 + rel[2]


# --------------------------------------------------------------------------- driver branch per GPU architecture


def driver_branch(version: object) -> Optional[int]:
    """The branch of a driver version: 535 for ``"535.104.05"``; None if unparsable."""
    v = parse_version(version)
    return v.release[0] if v is not None else None


@dataclass(frozen=True)
class DriverBranchSupport(_Row):
    """The driver branches that drive GPUs of ``ccs``: ``branch_min`` (None: older than any CUDA build in the
    data) up to ``branch_last`` (None: still supported)."""

    family: str
    ccs: List[str]
    source: str
    verified: str
    branch_min: Optional[int] = None
    branch_last: Optional[int] = None
    first_cuda: Optional[str] = None
    note: Optional[str] = None
    origin: str = ""

    def covers(self, cc: object) -> bool:
        return normalize_cc(cc) in {normalize_cc(c) for c in self.ccs}

    def span(self) -> str:
        """``"R570 or newer"`` / ``"R384 to R580"`` / ``"R470 or older"``."""
        if self.branch_min is not None and self.branch_last is not None:
            return f"R{self.branch_min} to R{self.branch_last}"
        if self.branch_min is not None:
            return f"R{self.branch_min} or newer"
        if self.branch_last is not None:
            return f"R{self.branch_last} or older"
        return "any branch"


# --------------------------------------------------------------------------- AMD GPUs (ROCm)

AMD_STATUSES = ("supported", "deprecated", "unsupported", "unlisted")
AMD_SEGMENTS = ("instinct", "radeon-pro", "radeon")


def _rocm_series(version: object) -> Optional[Tuple[int, int]]:
    v = parse_version(version)
    return (v.major, v.minor) if v is not None else None


@dataclass(frozen=True)
class AmdTarget(_Row):
    """An LLVM AMDGPU target (gfx942) and the ROCm series AMD's Linux compatibility matrix lists it in: from
    ``rocm_first`` (None: already listed in ``read_from``, the earliest release read) to ``rocm_last`` (None:
    still listed in ``listed_through``, the newest release read)."""

    gfx: str
    arch: str
    status: str  # supported | deprecated | unsupported | unlisted (in listed_through)
    read_from: str
    listed_through: str
    source: str
    verified: str
    rocm_first: Optional[str] = None
    rocm_last: Optional[str] = None
    note: Optional[str] = None
    origin: str = ""

    def listed_in(self, rocm: object) -> Optional[bool]:
        """Does AMD list this target for ROCm `rocm` (compared by series: "6.2.4" is 6.2)? None: the data
        cannot say (an unparsable version, a release before the earliest table read or after the newest)."""
        s, lo, hi = _rocm_series(rocm), _rocm_series(self.read_from), _rocm_series(self.listed_through)
        if s is None or lo is None or hi is None:
            return None
        first = _rocm_series(self.rocm_first) if self.rocm_first else None
        last = _rocm_series(self.rocm_last) if self.rocm_last else None
        if (first is not None and s < first) or (last is not None and s > last):
            return False
        if not lo <= s <= hi:
            return None  # a release no table read covers
        return self.status in ("supported", "deprecated")


@dataclass(frozen=True)
class AmdGpu(_Row):
    """An AMD GPU product name (as amd-smi / rocm-smi print it) and its LLVM target."""

    name: str
    gfx: str
    source: str
    verified: str
    segment: Optional[str] = None
    aliases: List[str] = field(default_factory=list)
    note: Optional[str] = None
    origin: str = ""


# --------------------------------------------------------------------------- other facts


@dataclass(frozen=True)
class DeprecatedDistribution(_Row):
    """A distribution name that, for the releases in `versions`, installs no framework: a stub (tensorflow-gpu
    2.12+) or a rename. `replacement` is what to install instead; `gpu_extra` its extra for the CUDA libraries,
    where the replacement release has it."""

    name: str
    versions: str
    replacement: str
    summary: str
    source: str
    verified: str
    gpu_extra: Optional[str] = None
    note: Optional[str] = None
    origin: str = ""

    def covers(self, version: Optional[str]) -> bool:
        """`version` (None: any) is one of the stub releases."""
        if version is None:
            return True
        v = parse_version(version)
        return v is not None and SpecifierSet(self.versions).contains(v, prereleases=True)


@dataclass(frozen=True)
class Incompatibility(_Row):
    key: str
    value: str
    summary: str
    source: str
    verified: str
    applies_to: List[str] = field(default_factory=list)
    message: Optional[str] = None
    note: Optional[str] = None
    origin: str = ""
