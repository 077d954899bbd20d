"""The machine snapshot: one typed model that every probe fills and every rule reads.

The model round-trips to JSON exactly (`Snapshot.from_dict(s.to_dict()) == s`);
docs/snapshot.md documents it and docs/snapshot.schema.json is its JSON Schema.
Annotations use typing.Optional/List/Dict so they evaluate on Python 3.9.

Conventions:
- a part nobody could probe stays at its default and the probe's entry in
  `probes` says why ("unknown" with a reason);
- versions are strings as the source printed them ("535.104.05", "12.2", "8.9.2");
- every part records `evidence`: where the answer came from and the raw excerpt.
"""
from __future__ import annotations

import builtins
import json
import typing
from typing import Any, Dict, List, Optional

from envdoctor.records import dataclass, field, fields, has_default

SCHEMA_VERSION = "1.0"


@dataclass
class Evidence:
    """Where a fact came from: `source` is e.g. "nvml", "file:/proc/driver/nvidia/version",
    "cmd:nvidia-smi --query-gpu=...", "env:CUDA_HOME"; `excerpt` is the raw text parsed (trimmed)."""

    source: str
    excerpt: str = ""


@dataclass
class ProbeStatus:
    name: str
    status: str = "ok"  # ok | partial (answered in part: reason says what is missing) | unknown | error | timeout | skipped
    reason: str = ""
    duration_ms: float = 0.0


@dataclass
class Platform:
    system: str = ""  # Linux | Windows | Darwin
    machine: str = ""  # x86_64 | aarch64 | arm64 | AMD64
    kernel: str = ""
    distro_id: str = ""  # ubuntu, debian, rhel ... from os-release ID
    distro_version: str = ""  # VERSION_ID
    distro_name: str = ""  # PRETTY_NAME
    glibc: str = ""
    wsl: Optional[int] = None  # None: not WSL; 1 or 2
    container: Optional[str] = None  # docker | podman | kubernetes | containerd | lxc | None
    hostname: str = ""
    evidence: List[Evidence] = field(default_factory=list)


@dataclass
class GPU:
    index: int = 0
    name: str = ""
    compute_capability: Optional[str] = None  # "8.6"
    memory_total_mib: Optional[int] = None
    bus_id: str = ""
    uuid: str = ""
    serial: str = ""
    source: str = ""  # nvml | nvidia-smi | proc | name-table


@dataclass
class Driver:
    """The NVIDIA driver.

    state: ok | not_installed | module_not_loaded | version_mismatch | no_devices | smi_failed | unknown
    version: the kernel/userspace driver version ("550.54.15")
    cuda_version: the highest CUDA version the driver supports ("12.4"), from NVML or nvidia-smi
    nvml / nvidia_smi: how each layer answered: ok | missing | failed | timeout | garbage | mismatch | no_devices | not_run
    """

    state: str = "unknown"
    version: Optional[str] = None
    cuda_version: Optional[str] = None
    source: str = ""
    kernel_module_version: Optional[str] = None
    nvml: str = "not_run"
    nvidia_smi: str = "not_run"
    wsl_libcuda: Optional[str] = None  # path of libcuda under /usr/lib/wsl/lib, if any
    linux_driver_in_wsl: bool = False  # a Linux NVIDIA driver installed inside WSL
    disagreements: List[str] = field(default_factory=list)
    messages: List[str] = field(default_factory=list)  # raw error lines worth showing
    evidence: List[Evidence] = field(default_factory=list)


@dataclass
class Toolkit:
    path: str
    version: Optional[str] = None  # "13.0.88" (nvcc release V...) or "12.4.1" (version.json)
    version_source: str = ""  # version.json | version.txt | cuda.h | nvcc
    nvcc: Optional[str] = None
    found_by: List[str] = field(default_factory=list)  # CUDA_HOME, CUDA_PATH, PATH, /usr/local/cuda, conda, pip
    is_default: bool = False
    evidence: List[Evidence] = field(default_factory=list)


@dataclass
class Cudnn:
    version: Optional[str] = None  # "9.1.0"
    kind: str = ""  # header | library | wheel
    path: str = ""
    evidence: List[Evidence] = field(default_factory=list)


@dataclass
class Framework:
    """An installed framework distribution, read without importing it.

    build: cuda | rocm | cpu | metal | unknown
    """

    name: str  # torch | tensorflow | jax | jaxlib | jax-cuda12-plugin | torchvision | cupy | ...
    distribution: str  # the dist name as installed (tensorflow-cpu, cupy-cuda12x ...)
    version: str
    build: str = "unknown"
    cuda_version: Optional[str] = None
    cudnn_version: Optional[str] = None
    rocm_version: Optional[str] = None
    arch_list: Optional[List[str]] = None  # ["sm_50", ..., "compute_90"] when the build says
    requires: List[str] = field(default_factory=list)  # Requires-Dist lines (nvidia-*, cuda-*, companions)
    requires_python: Optional[str] = None
    location: str = ""
    evidence: List[Evidence] = field(default_factory=list)
    # CUDA libraries inside the distribution's own package (torch/lib/libcudnn.so.8 of older torch wheels), via
    # "bundled"; version from the file name ("8" for libcudnn.so.8), None when the name states none
    bundled: List["Library"] = field(default_factory=list)


@dataclass
class PythonEnv:
    executable: str = ""
    version: str = ""  # "3.11.7"
    implementation: str = ""  # cpython
    prefix: str = ""
    kind: str = ""  # venv | conda | system
    platform_tag: str = ""  # sysconfig.get_platform(), e.g. linux-x86_64
    sys_path: List[str] = field(default_factory=list)  # the target's sys.path (where its distributions are)
    packages: Dict[str, str] = field(default_factory=dict)  # normalized name -> version, for GPU-relevant dists
    frameworks: List[Framework] = field(default_factory=list)
    evidence: List[Evidence] = field(default_factory=list)
    # Requires-Dist of the deployment runtimes' dists (tensorrt*, onnxruntime*, onnx, onnxscript): normalized name -> lines
    runtime_requires: Dict[str, List[str]] = field(default_factory=dict)


@dataclass
class Library:
    name: str  # libcudart | libcudnn | libcublas | libnccl | libcuda ...
    path: str
    version: Optional[str] = None  # from the file name (libcudart.so.12.4.127) when it says
    via: str = ""  # LD_LIBRARY_PATH | ldconfig | LD_PRELOAD


@dataclass
class Loader:
    ld_library_path: List[str] = field(default_factory=list)
    ld_preload: List[str] = field(default_factory=list)
    libraries: List[Library] = field(default_factory=list)
    gpu_env: Dict[str, str] = field(default_factory=dict)  # CUDA_VISIBLE_DEVICES, XLA_FLAGS, TF_* ...
    evidence: List[Evidence] = field(default_factory=list)


@dataclass
class LinkedLibrary:
    """One DT_NEEDED soname of a CUDA binary and the file the dynamic loader would load for it."""

    soname: str  # libcudart.so.12
    path: Optional[str] = None  # None: not found anywhere the loader looks
    via: str = ""  # LD_PRELOAD | already loaded | path | RPATH | LD_LIBRARY_PATH | RUNPATH | ld.so.cache | default dirs | not found
    package: str = ""  # the distribution whose RECORD lists that file ("nvidia-cudnn-cu12 9.10.2.21"), if any
    searched: List[str] = field(default_factory=list)  # for a soname not found: the dirs tried, in order
    loaded_by: str = ""  # via "already loaded": the framework whose import loaded it before ("torch 2.15.0")


@dataclass
class CudaBinary:
    """A shared object carrying CUDA device code (an ELF .nv_fatbin / .nvFatBinSegment section)."""

    path: str
    package: str = ""  # the distribution whose RECORD lists the file; "" when none does
    package_version: str = ""
    size: int = 0
    sass: List[str] = field(default_factory=list)  # cubin targets: sm_80, sm_90a, sm_100f
    ptx: List[str] = field(default_factory=list)  # PTX targets: compute_90
    ptx_isa: Dict[str, str] = field(default_factory=dict)  # PTX target -> PTX ISA version ("8.8")
    entries: int = 0  # fatbin entries (cubins + PTX)
    compressed: int = 0  # of which compressed
    rpath: List[str] = field(default_factory=list)
    runpath: List[str] = field(default_factory=list)
    libraries: List[LinkedLibrary] = field(default_factory=list)  # every DT_NEEDED, resolved
    unreadable: str = ""  # why its fatbin could not be read to the end ("" when it could)


@dataclass
class UnreadableBinary:
    path: str
    package: str = ""
    reason: str = ""  # "not an ELF file", "truncated: ...", "a symbolic link loop" ...


@dataclass
class Binaries:
    """The shared objects of the target environment's distributions, read from their headers (no import)."""

    scanned: int = 0  # shared objects looked at
    from_cache: int = 0  # of which answered by the cache (same path, size, mtime, inode)
    binaries: List[CudaBinary] = field(default_factory=list)
    unreadable: List[UnreadableBinary] = field(default_factory=list)
    incomplete: str = ""  # why the scan stopped early (a file-count or time bound), "" when it did not
    evidence: List[Evidence] = field(default_factory=list)


@dataclass
class Rocm:
    installed: bool = False
    version: Optional[str] = None
    path: str = ""
    gpus: List[str] = field(default_factory=list)
    evidence: List[Evidence] = field(default_factory=list)


# -- breadth: kernels, GPU memory, build-time variables, the host, installers, other accelerators ----------


@dataclass
class Kernel:
    """A Jupyter kernelspec (or the VS Code workspace interpreter) and the Python it runs.

    source: kernelspec | vscode
    status: ok | missing (argv[0] does not exist) | not_python (no python interpreter in argv) | unprobed
            (--kernels not given) | failed (it did not answer like a Python; reason says why)
    frameworks: what that interpreter's environment holds (read like --python), with --kernels only
    """

    name: str
    source: str = "kernelspec"
    path: str = ""  # the kernel.json (or settings.json) it was read from
    display_name: str = ""
    language: str = ""
    interpreter: str = ""  # argv[0] of kernel.json / python.defaultInterpreterPath
    status: str = "unprobed"
    reason: str = ""
    python_version: str = ""
    frameworks: List[Framework] = field(default_factory=list)


@dataclass
class Kernels:
    data_dirs: List[str] = field(default_factory=list)  # the Jupyter data dirs searched, in jupyter_core's order
    probed: bool = False  # --kernels: each interpreter's environment was read
    kernels: List[Kernel] = field(default_factory=list)
    evidence: List[Evidence] = field(default_factory=list)


@dataclass
class GpuProcess:
    """A process holding GPU memory (NVML compute processes, or nvidia-smi --query-compute-apps)."""

    pid: int
    gpu_index: Optional[int] = None
    gpu_uuid: str = ""
    used_mib: Optional[int] = None
    name: str = ""  # the process name the driver reports
    cmdline: str = ""  # from psutil, redacted like every path in a snapshot
    user: str = ""
    age_s: Optional[float] = None  # seconds since it started
    source: str = ""  # nvml | nvidia-smi


@dataclass
class GpuMemoryUse:
    index: int
    uuid: str = ""
    used_mib: Optional[int] = None
    total_mib: Optional[int] = None


@dataclass
class Memory:
    """GPU memory in use and who holds it, and the allocator settings of the environment."""

    gpus: List[GpuMemoryUse] = field(default_factory=list)
    processes: List[GpuProcess] = field(default_factory=list)
    allocator_env: Dict[str, str] = field(default_factory=dict)  # PYTORCH_CUDA_ALLOC_CONF, XLA_PYTHON_CLIENT_*, TF_FORCE_GPU_ALLOW_GROWTH
    evidence: List[Evidence] = field(default_factory=list)


@dataclass
class BuildEnv:
    """Build-time and debugging variables (TORCH_CUDA_ARCH_LIST, CUDAARCHS, CMAKE_CUDA_ARCHITECTURES,
    CUDA_LAUNCH_BLOCKING), the archs the default nvcc can target, and NCCL's environment (secret-looking
    values redacted)."""

    env: Dict[str, str] = field(default_factory=dict)
    nvcc: str = ""
    nvcc_archs: List[str] = field(default_factory=list)  # ["compute_75", ...] from nvcc --list-gpu-arch
    nccl_env: Dict[str, str] = field(default_factory=dict)
    evidence: List[Evidence] = field(default_factory=list)


@dataclass
class Host:
    """What bug reports ask for besides the GPU stack: the CPU and the compilers extension builds use."""

    cpu_model: str = ""
    cpu_flags: List[str] = field(default_factory=list)  # the ones that matter: avx, avx2, fma, avx512f ...
    compilers: Dict[str, str] = field(default_factory=dict)  # gcc | clang | cmake | ninja -> version
    evidence: List[Evidence] = field(default_factory=list)


@dataclass
class CondaPackage:
    name: str
    version: str = ""
    build: str = ""
    channel: str = ""
    file: str = ""  # the conda-meta/*.json it was read from


@dataclass
class Installers:
    """Who installed what in the target environment: each dist's INSTALLER (pip, conda, uv ...), conda-meta
    records of GPU-relevant packages, and distributions installed twice on sys.path."""

    conda_prefix: str = ""
    conda_packages: List[CondaPackage] = field(default_factory=list)
    dists: Dict[str, str] = field(default_factory=dict)  # normalized dist name -> INSTALLER
    copies: Dict[str, List[str]] = field(default_factory=dict)  # dist -> ["2.1.0 at /x (imported)", "2.0.1 at /y"]
    evidence: List[Evidence] = field(default_factory=list)


@dataclass
class Accelerator:
    """A non-NVIDIA GPU path a framework build takes: kind npu (Ascend torch_npu) | xpu (Intel) | mps (Apple) |
    rocm (AMD)."""

    kind: str
    framework: str = ""  # "torch 2.5.1+xpu"
    version: str = ""  # the build's own version of that stack (hip/rocm version, torch_npu version)
    host_version: str = ""  # what the host has (ROCm installed), when known
    detail: str = ""


@dataclass
class Snapshot:
    schema_version: str = SCHEMA_VERSION
    envdoctor_version: str = ""
    created: str = ""  # ISO 8601 UTC
    root: str = "/"
    redacted: bool = False
    platform: Platform = field(default_factory=Platform)
    driver: Driver = field(default_factory=Driver)
    gpus: List[GPU] = field(default_factory=list)
    toolkits: List[Toolkit] = field(default_factory=list)
    cudnn: List[Cudnn] = field(default_factory=list)
    python: PythonEnv = field(default_factory=PythonEnv)
    loader: Loader = field(default_factory=Loader)
    rocm: Rocm = field(default_factory=Rocm)
    binaries: Binaries = field(default_factory=Binaries)
    probes: List[ProbeStatus] = field(default_factory=list)
    kernels: Kernels = field(default_factory=Kernels)
    memory: Memory = field(default_factory=Memory)
    buildenv: BuildEnv = field(default_factory=BuildEnv)
    host: Host = field(default_factory=Host)
    installers: Installers = field(default_factory=Installers)
    accelerators: List[Accelerator] = field(default_factory=list)

    # -- serialisation ---------------------------------------------------
    def to_dict(self) -> dict:
        return _to_json(self)

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=False)

    @classmethod
    def from_dict(cls, data: dict) -> "Snapshot":
        if not isinstance(data, dict):
            raise ValueError("a snapshot is a JSON object")
        version = str(data.get("schema_version", ""))
        if version.split(".")[0] != SCHEMA_VERSION.split(".")[0]:
            raise ValueError(f"unsupported snapshot schema_version {version!r} (this envdoctor reads {SCHEMA_VERSION})")
        return _from_json(cls, data, "snapshot")

    @classmethod
    def from_json(cls, text: str) -> "Snapshot":
        return cls.from_dict(json.loads(text))

    # -- conveniences for rules ----------------------------------------------
    def framework(self, name: str) -> Optional[Framework]:
        for fw in self.python.frameworks:
            if fw.name == name:
                return fw
        return None

    def probe(self, name: str) -> Optional[ProbeStatus]:
        for p in self.probes:
            if p.name == name:
                return p
        return None

    @property
    def default_toolkit(self) -> Optional[Toolkit]:
        for tk in self.toolkits:
            if tk.is_default:
                return tk
        return self.toolkits[0] if self.toolkits else None


_PLAIN = (str, int, float, bool, type(None))
_FIELD_NAMES: Dict[type, tuple] = {}  # a model class -> its field names (to_dict runs several times a check)


def _to_json(obj: Any) -> Any:
    cls = type(obj)
    if cls in _PLAIN:
        return obj
    names = _FIELD_NAMES.get(cls)
    if names is None and hasattr(cls, "__dataclass_fields__") and not isinstance(obj, type):
        names = _FIELD_NAMES[cls] = tuple(f.name for f in fields(obj))
    if names is not None:
        return {n: _to_json(getattr(obj, n)) for n in names}
    if isinstance(obj, list):
        return [_to_json(x) for x in obj]
    if isinstance(obj, dict):
        return {str(k): _to_json(v) for k, v in obj.items()}
    return obj


_HINTS: dict = {}


def _hints(cls: type) -> dict:
    if cls not in _HINTS:
        _HINTS[cls] = _simple_hints(cls)
    return _HINTS[cls]


def _simple_hints(cls: type) -> dict:
    """``typing.get_type_hints(cls)`` for this module's annotations (names of this module and of typing,
    subscripted, quoted or not) without compiling each string, which cost ~2 ms a `check --snapshot`;
    anything else goes to typing.get_type_hints. tests/test_snapshot.py compares the two on every model class."""
    out: dict = {}
    for klass in reversed(cls.__mro__):
        annotations = klass.__dict__.get("__annotations__", {})
        if annotations and klass.__module__ != __name__:
            return typing.get_type_hints(cls)  # a class from elsewhere: its module's names, typing decides
        for name, text in annotations.items():
            hint = _evaluate(text, klass.__dict__) if isinstance(text, str) else None
            if hint is None:
                return typing.get_type_hints(cls)
            out[name] = hint
    return out


def _evaluate(text: str, local: Any) -> Any:
    """`text` as a hint (Name, Name[arg, ...], "Name") as typing evaluates it for a class with namespace `local`
    (this module's names first, then the class's, then builtins), or None when it is not that simple."""
    text = text.strip()
    if len(text) > 1 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    head, bracket, rest = text.partition("[")
    head = head.strip()
    space = globals()
    if head in space:
        base = space[head]
    elif head in local or not head.isidentifier() or not hasattr(builtins, head):
        return None
    else:
        base = getattr(builtins, head)
    if not bracket:
        return base
    if not rest.endswith("]"):
        return None
    args, depth, start, inner = [], 0, 0, rest[:-1]
    for i, ch in enumerate(inner + ","):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "," and depth == 0:
            arg = _evaluate(inner[start:i], local)
            if arg is None:
                return None
            args.append(arg)
            start = i + 1
    if depth or not args or base not in (Optional, List, Dict):
        return None
    return base[args[0]] if len(args) == 1 else base[tuple(args)]


def _from_json(tp: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Union:  # Optional[X]
        if value is None:
            return None
        inner = [a for a in args if a is not type(None)]
        return _from_json(inner[0], value, where)
    if isinstance(tp, type) and hasattr(tp, "__dataclass_fields__"):  # a record's class (a hint is never an instance)
        if not isinstance(value, dict):
            raise ValueError(f"{where}: expected an object")
        hints = _hints(tp)
        kwargs = {}
        for f in fields(tp):
            if f.name in value:
                kwargs[f.name] = _from_json(hints[f.name], value[f.name], f"{where}.{f.name}")
            elif not has_default(f):
                raise ValueError(f"{where}: missing field {f.name!r}")
        return tp(**kwargs)
    if origin in (list, List):
        if not isinstance(value, list):
            raise ValueError(f"{where}: expected a list")
        return [_from_json(args[0], v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin in (dict, Dict):
        if not isinstance(value, dict):
            raise ValueError(f"{where}: expected an object")
        return {str(k): _from_json(args[1], v, f"{where}.{k}") for k, v in value.items()}
    if tp is Any:
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{where}: expected a number")
        return float(value)
    if tp in (str, int, bool):
        if not isinstance(value, tp) or (tp is int and isinstance(value, bool)):
            raise ValueError(f"{where}: expected {tp.__name__}")
        return value
    return value
