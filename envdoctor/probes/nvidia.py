"""NVIDIA driver and GPU probe: fills `snap.driver` and `snap.gpus`.

Layers (each one recorded in evidence; the first that answers wins, every disagreement between
them lands in `driver.disagreements`):

1. NVML through `pynvml` (nvidia-ml-py), only on the live root and when `ctx.use_nvml`. NVML
   creates no CUDA context. It runs in a child process of envdoctor's interpreter bounded by `ctx.timeout`:
   a GPU that fell off the bus and hangs nvmlInit costs at most the timeout (nvml="timeout"; nvidia-smi,
   which would hang the same way, is then not run), and a libnvidia-ml that crashes (a segfault) ends only the
   child (nvml="failed", the signal named; nvidia-smi is then asked). nvmlShutdown is always called.
2. Files read through `ctx.root`: /sys/module/nvidia/version (loaded module), /proc/driver/nvidia/version
   (kernel module version, proprietary or Open), /proc/driver/nvidia/gpus/*/information (GPUs the
   module bound), plus install traces (libnvidia-ml.so*, nvidia-smi, nvidia.ko*) that tell
   "installed but module not loaded" from "not installed".
3. `nvidia-smi` found on ctx.env's PATH (on the live root also /usr/lib/wsl/lib/nvidia-smi):
   the plain banner (driver version, "CUDA Version"), then
   `--query-gpu=index,name,compute_cap,memory.total,pci.bus_id,uuid,driver_version
   --format=csv,noheader,nounits`, repeated without compute_cap for drivers < 510. It is only
   run when NVML did not answer (NVML and nvidia-smi share libnvidia-ml: asking both adds
   nothing but time). Every call is bounded by `ctx.timeout`; after a timeout no further call is
   made. Failure lines go to `driver.messages`.
4. WSL: /usr/lib/wsl/lib/libcuda.so* -> `driver.wsl_libcuda`.

`driver.linux_driver_in_wsl` signal: the machine is WSL (/proc/version names "microsoft" or
"WSL", or /usr/lib/wsl exists) AND a Linux kernel-driver install is present, which is any of:
/proc/driver/nvidia/version exists; a libcuda.so* in a standard Linux library directory
(/usr/lib/x86_64-linux-gnu, /usr/lib/aarch64-linux-gnu, /usr/lib64, /usr/lib, /lib/...) that is a
regular file or a link that does not lead into /usr/lib/wsl (the Linux driver package, e.g. pulled
in by the `cuda` / `cuda-drivers` meta packages, installs exactly that libcuda.so.1 and it shadows
the WSL one); or a /usr/bin/nvidia-smi that does not lead into /usr/lib/wsl (the nvidia-utils
package). Links into /usr/lib/wsl are the harmless way to expose the WSL libraries.

state (first rule that applies):
- version_mismatch: NVML said LIB_RM_VERSION_MISMATCH or nvidia-smi "Driver/library version mismatch";
- ok: NVML or nvidia-smi answered with a driver version and listed GPUs;
- no_devices: NVML counted 0 devices, nvidia-smi said "No devices were found", or answered without GPUs;
- module_not_loaded: NVML DRIVER_NOT_LOADED / nvidia-smi "couldn't communicate with the NVIDIA
  driver" while /proc shows no module (when /proc shows one, or on WSL, that is smi_failed);
- smi_failed: nvidia-smi failed, timed out or printed garbage (or NVML timed out);
- ok (source proc): no tool answered, but /proc/driver/nvidia lists the module and its GPUs
  (no_devices when it lists none);
- module_not_loaded: install traces (libnvidia-ml, nvidia-smi, nvidia.ko) but no module in /proc, /sys;
- not_installed: no NVML library, no /proc/driver/nvidia, no nvidia-smi, no WSL libcuda;
- unknown otherwise (the probe then reports ProbeUnknown with the reason).

`driver.version` comes from NVML, else /proc/driver/nvidia/version, else nvidia-smi, else
/sys/module/nvidia/version (`driver.source`: nvml | proc | nvidia-smi | sysfs). In WSL nvidia-smi's
"Driver Version" is the Windows driver. GPUs come from NVML, else nvidia-smi (query, else banner),
else /proc; blanks are filled from the other layers by PCI bus id; `GPU.source` names the layer
that listed it. CUDA_VISIBLE_DEVICES is deliberately ignored (NVML and nvidia-smi ignore it too).
"""
from __future__ import annotations

import os
import posixpath
import re
import sys
from typing import Any, List, Optional, Tuple

from envdoctor.parsers.nvidia_smi import (
    SmiBanner,
    SmiFailure,
    SmiQueryGpu,
    clean_driver_version,
    detect_failure,
    normalize_bus_id,
    parse_banner,
    parse_query_gpus,
)
from envdoctor.parsers.proc_driver import (
    ProcDriverVersion,
    ProcGpuInfo,
    parse_gpu_information,
    parse_module_version,
    parse_proc_version,
)
from envdoctor.probes._parsed import parsed
from envdoctor.probes.base import ProbeContext, ProbeUnknown
from envdoctor.snapshot import GPU, Driver, Evidence, Snapshot
from envdoctor.subproc import CmdResult
from envdoctor.records import dataclass, field

QUERY_FIELDS: Tuple[str, ...] = ("index", "name", "compute_cap", "memory.total", "pci.bus_id", "uuid", "driver_version")
QUERY_FIELDS_NO_CC: Tuple[str, ...] = tuple(f for f in QUERY_FIELDS if f != "compute_cap")
WSL_LIB_DIR = "/usr/lib/wsl/lib"
WSL_SMI_CANDIDATES: Tuple[str, ...] = (WSL_LIB_DIR + "/nvidia-smi",)
LINUX_LIB_DIRS: Tuple[str, ...] = (
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib/powerpc64le-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/lib/x86_64-linux-gnu",
    "/lib/aarch64-linux-gnu",
    "/lib64",
)
KERNEL_MODULE_GLOBS: Tuple[str, ...] = (
    "/lib/modules/*/updates/dkms/nvidia.ko*",
    "/lib/modules/*/kernel/drivers/video/nvidia.ko*",
    "/lib/modules/*/extra/nvidia.ko*",
    "/lib/modules/*/extra/nvidia/nvidia.ko*",
    "/lib/modules/*/kernel/nvidia*/nvidia.ko*",
)
EXCERPT_MAX = 2048


# -- small helpers ------------------------------------------------------------------------


def _excerpt(text: Optional[str], limit: int = EXCERPT_MAX) -> str:
    if not text:
        return ""
    if len(text) <= limit:
        return text.rstrip()
    cut = text[:limit]
    nl = cut.rfind("\n")
    return (cut[:nl] if nl > limit // 2 else cut).rstrip() + "\n[...]"


def _cmd_excerpt(res: CmdResult) -> str:
    parts = []
    if res.stdout.strip():
        parts.append(res.stdout)
    if res.stderr.strip():
        parts.append(res.stderr)
    if not parts and res.reason:
        parts.append(res.reason)
    return _excerpt("\n".join(parts))


def _same_version(a: str, b: str) -> bool:
    from envdoctor.facts.versions import parse_version  # only with a driver to compare: not at import

    va, vb = parse_version(a), parse_version(b)
    if va is None or vb is None:
        return a.strip() == b.strip()
    return va == vb


def _str(value: Any) -> Optional[str]:
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    if value is None:
        return None
    value = str(value).strip()
    return value or None


def _cuda_from_int(value: Any) -> Optional[str]:
    """NVML's CUDA driver version integer: 12040 -> "12.4"."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return f"{value // 1000}.{(value % 1000) // 10}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


# -- layer 1: NVML ------------------------------------------------------------------------


@dataclass
class _NvmlAnswer:
    status: str  # ok | missing | failed | timeout | mismatch | no_devices
    kind: Optional[str] = None  # module_not_loaded | version_mismatch | no_devices
    driver_version: Optional[str] = None
    cuda_version: Optional[str] = None
    gpus: List[GPU] = field(default_factory=list)
    messages: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)  # for the evidence excerpt


def _nvml_error_answer(pynvml: Any, exc: BaseException, where: str) -> _NvmlAnswer:
    code = getattr(exc, "value", None)
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - str() of an NVMLError calls into the library
        text = f"NVML error {code}"
    line = f"NVML {where}: {text}"
    if code == getattr(pynvml, "NVML_ERROR_LIBRARY_NOT_FOUND", 12):
        return _NvmlAnswer("missing", notes=[line])
    if code == getattr(pynvml, "NVML_ERROR_DRIVER_NOT_LOADED", 9):
        return _NvmlAnswer("failed", kind="module_not_loaded", messages=[line], notes=[line])
    if code == getattr(pynvml, "NVML_ERROR_LIB_RM_VERSION_MISMATCH", 18):
        return _NvmlAnswer("mismatch", kind="version_mismatch", messages=[line], notes=[line])
    return _NvmlAnswer("failed", messages=[line], notes=[line])


def _query_nvml() -> _NvmlAnswer:
    try:
        import pynvml  # untyped: pyproject ignores its missing stubs
    except Exception as exc:  # noqa: BLE001 - any import failure means: no NVML bindings
        return _NvmlAnswer("missing", notes=[f"pynvml not importable: {type(exc).__name__}: {exc}"])
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001
        return _nvml_error_answer(pynvml, exc, "nvmlInit")
    try:
        return _query_nvml_devices(pynvml)
    except Exception as exc:  # noqa: BLE001
        return _nvml_error_answer(pynvml, exc, "query")
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass


def _query_nvml_devices(pynvml: Any) -> _NvmlAnswer:
    ans = _NvmlAnswer("ok")
    try:
        ans.driver_version = clean_driver_version(_str(pynvml.nvmlSystemGetDriverVersion()))
    except Exception as exc:  # noqa: BLE001
        ans.notes.append(f"nvmlSystemGetDriverVersion: {exc}")
    for fn_name in ("nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"):
        fn = getattr(pynvml, fn_name, None)
        if fn is None:
            continue
        try:
            ans.cuda_version = _cuda_from_int(fn())
        except Exception as exc:  # noqa: BLE001
            ans.notes.append(f"{fn_name}: {exc}")
        if ans.cuda_version:
            break
    try:
        count = int(pynvml.nvmlDeviceGetCount())
    except Exception as exc:  # noqa: BLE001
        err = _nvml_error_answer(pynvml, exc, "nvmlDeviceGetCount")
        err.driver_version, err.cuda_version = ans.driver_version, ans.cuda_version
        if err.status == "missing":
            err.status = "failed"
        return err
    ans.notes.append(f"driver {ans.driver_version}, CUDA {ans.cuda_version}, {_plural(count, 'device')}")
    if count == 0:
        ans.status, ans.kind = "no_devices", "no_devices"
        return ans
    for i in range(count):
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
        except Exception as exc:  # noqa: BLE001
            line = f"NVML nvmlDeviceGetHandleByIndex({i}): {exc}"
            ans.messages.append(line)
            ans.notes.append(line)
            continue
        gpu = GPU(index=i, source="nvml")
        gpu.name = _nvml_field(ans, i, "name", lambda: _str(pynvml.nvmlDeviceGetName(handle))) or ""
        cc = _nvml_field(ans, i, "compute capability", lambda: pynvml.nvmlDeviceGetCudaComputeCapability(handle))
        if isinstance(cc, (tuple, list)) and len(cc) == 2 and all(isinstance(x, int) for x in cc):
            gpu.compute_capability = f"{cc[0]}.{cc[1]}"
        mem = _nvml_field(ans, i, "memory", lambda: pynvml.nvmlDeviceGetMemoryInfo(handle))
        total = getattr(mem, "total", None)
        if isinstance(total, int) and not isinstance(total, bool):
            gpu.memory_total_mib = total // (1024 * 1024)
        pci = _nvml_field(ans, i, "PCI info", lambda: pynvml.nvmlDeviceGetPciInfo(handle))
        gpu.bus_id = _str(getattr(pci, "busId", None)) or _str(getattr(pci, "busIdLegacy", None)) or ""
        gpu.uuid = _nvml_field(ans, i, "UUID", lambda: _str(pynvml.nvmlDeviceGetUUID(handle))) or ""
        gpu.serial = _nvml_field(ans, i, None, lambda: _str(pynvml.nvmlDeviceGetSerial(handle))) or ""
        ans.gpus.append(gpu)
    if not ans.gpus:
        ans.status = "failed"
    elif ans.driver_version is None:
        ans.status = "failed"
    return ans


def _nvml_field(ans: _NvmlAnswer, index: int, what: Optional[str], fn: Any) -> Any:
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - one unsupported field never loses the GPU
        if what is not None:
            ans.notes.append(f"GPU {index} {what}: {exc}")
        return None


_KERNEL_INTERFACES = ("/dev/nvidiactl", "/dev/nvidia0", "/proc/driver/nvidia", "/sys/module/nvidia", "/dev/dxg")


def _has_kernel_interface(ctx: ProbeContext) -> bool:
    return any(ctx.root.exists(p) for p in _KERNEL_INTERFACES)


NVML_MARKER = "@@ENVDOCTOR-NVML@@ "


def nvml_child() -> None:
    """The NVML query as a child process (``python -m envdoctor.probes.nvidia``): one marked JSON line on stdout. A
    library that crashes (a segfault inside libnvidia-ml) then ends only the child, never envdoctor."""
    import json

    ans = _query_nvml()
    data = {k: getattr(ans, k) for k in ("status", "kind", "driver_version", "cuda_version", "messages", "notes")}
    data["gpus"] = [dict(vars(g)) for g in ans.gpus]
    sys.stdout.write(NVML_MARKER + json.dumps(data) + "\n")


def _nvml_from_child(res: Any) -> _NvmlAnswer:
    import json

    for line in (res.stdout or "").splitlines():
        if line.startswith(NVML_MARKER):
            try:
                data = json.loads(line[len(NVML_MARKER):])
                gpus = [GPU(**{k: v for k, v in g.items() if k in GPU.__dataclass_fields__})
                        for g in data.get("gpus") or [] if isinstance(g, dict)]
                return _NvmlAnswer(str(data["status"]), data.get("kind"), data.get("driver_version"),
                                   data.get("cuda_version"), gpus, list(data.get("messages") or []),
                                   list(data.get("notes") or []))
            except (ValueError, KeyError, TypeError) as exc:
                line = f"NVML: its answer cannot be read ({type(exc).__name__})"
                return _NvmlAnswer("failed", messages=[line], notes=[line])
    rc = res.returncode
    if isinstance(rc, int) and rc < 0:
        import signal as _sig

        try:
            name = _sig.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        line = f"NVML crashed the query process ({name}): libnvidia-ml failed inside the driver library"
    else:
        line = f"NVML: the query process gave no answer ({res.reason or f'exit {rc}'})"
    tail = [ln for ln in (res.stderr or "").splitlines() if ln.strip()][-1:]
    return _NvmlAnswer("failed", messages=[line], notes=[line] + [t[:200] for t in tail])


# The child: without bindings it answers at once (envdoctor is not even imported); else this module's query. Its
# sys.path starts with the folder envdoctor is imported from here, never the current directory.
_CHILD = ("import sys; sys.path[:] = [{top!r}] + [p for p in sys.path if p not in ('', '.')]\n"
          "import importlib.util\n"
          "if importlib.util.find_spec('pynvml') is None:\n"
          "    print({marker!r} + '{{\"status\": \"missing\", \"notes\": [\"pynvml not importable\"]}}')\n"
          "else:\n"
          "    from envdoctor.probes.nvidia import nvml_child; nvml_child()\n")


def _nvml_layer(ctx: ProbeContext) -> _NvmlAnswer:
    # the query runs in a child of this interpreter: a crash in the driver's library, or a GPU that fell off the
    # bus and hangs nvmlInit, costs at most the timeout and ends only the child
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    code = _CHILD.format(top=top, marker=NVML_MARKER)
    res = ctx.runner.run([sys.executable, "-c", code], timeout=max(0.1, float(ctx.timeout)))
    if res.status == "timeout":
        line = f"NVML: no answer within {ctx.timeout:g} s (a GPU may have fallen off the bus)"
        return _NvmlAnswer("timeout", messages=[line], notes=[line])
    return _nvml_from_child(res)


# -- layer 2 and 4: files -------------------------------------------------------------------


@dataclass
class _Files:
    module_loaded: bool = False  # /sys/module/nvidia exists
    module_version: Optional[str] = None
    proc_dir: bool = False  # /proc/driver/nvidia exists
    proc: Optional[ProcDriverVersion] = None
    proc_gpus: List[ProcGpuInfo] = field(default_factory=list)
    nvml_libs: List[str] = field(default_factory=list)
    smi_files: List[str] = field(default_factory=list)
    kernel_modules: List[str] = field(default_factory=list)
    wsl: bool = False
    wsl_libcuda: Optional[str] = None
    linux_driver_in_wsl: List[str] = field(default_factory=list)  # the signals found
    evidence: List[Evidence] = field(default_factory=list)

    @property
    def module_present(self) -> bool:
        return self.proc is not None or self.proc_dir or self.module_loaded

    @property
    def install_traces(self) -> List[str]:
        return self.nvml_libs + self.smi_files + self.kernel_modules


def _links_into_wsl(ctx: ProbeContext, abs_path: str) -> bool:
    """Does this path (or the chain of links it starts) lead into /usr/lib/wsl?"""
    cur = abs_path
    for _ in range(16):
        if cur == "/usr/lib/wsl" or cur.startswith("/usr/lib/wsl/"):
            return True
        local = ctx.root.path(cur)
        if not os.path.islink(local):
            return False
        try:
            target = os.readlink(local)
        except OSError:
            return False
        cur = target if target.startswith("/") else posixpath.normpath(posixpath.join(posixpath.dirname(cur), target))
    return False


def _files_layer(ctx: ProbeContext) -> _Files:
    root = ctx.root
    f = _Files()
    f.module_loaded = root.is_dir("/sys/module/nvidia")
    mod_text = root.read_text("/sys/module/nvidia/version")
    f.module_version = parsed(f.evidence, "file:/sys/module/nvidia/version", parse_module_version, mod_text)
    if mod_text:
        f.evidence.append(Evidence("file:/sys/module/nvidia/version", _excerpt(mod_text)))
    f.proc_dir = root.is_dir("/proc/driver/nvidia")
    proc_text = root.read_text("/proc/driver/nvidia/version")
    f.proc = parsed(f.evidence, "file:/proc/driver/nvidia/version", parse_proc_version, proc_text)
    if proc_text:
        f.evidence.append(Evidence("file:/proc/driver/nvidia/version", _excerpt(proc_text)))
    for gpu_dir in root.glob("/proc/driver/nvidia/gpus/*"):
        text = root.read_text(gpu_dir + "/information")
        info = parsed(f.evidence, f"file:{gpu_dir}/information", parse_gpu_information, text)
        if info is None:
            continue
        if info.bus_location is None:
            info.bus_location = posixpath.basename(gpu_dir)
        f.proc_gpus.append(info)
        f.evidence.append(Evidence(f"file:{gpu_dir}/information", _excerpt(text)))
    f.proc_gpus.sort(key=lambda g: normalize_bus_id(g.bus_location))

    for d in LINUX_LIB_DIRS + (WSL_LIB_DIR,):
        f.nvml_libs.extend(root.glob_in(d, ("libnvidia-ml.so*",)))  # glob's answer, cheaper
    for p in ("/usr/bin/nvidia-smi", "/bin/nvidia-smi", WSL_LIB_DIR + "/nvidia-smi"):
        if root.exists(p):
            f.smi_files.append(p)
    for pattern in KERNEL_MODULE_GLOBS:
        f.kernel_modules.extend(root.glob(pattern))

    kernel = root.read_text("/proc/version") or ""
    f.wsl = bool(re.search(r"microsoft|wsl", kernel, re.IGNORECASE)) or root.is_dir("/usr/lib/wsl")
    libcuda = root.glob(WSL_LIB_DIR + "/libcuda.so*")
    if libcuda:
        f.wsl_libcuda = libcuda[0]
        f.evidence.append(Evidence(f"file:{WSL_LIB_DIR}/libcuda.so*", "\n".join(libcuda)))
    if f.wsl:
        if proc_text is not None:
            f.linux_driver_in_wsl.append("/proc/driver/nvidia/version")
        for d in LINUX_LIB_DIRS:
            for p in root.glob_in(d, ("libcuda.so*",)):
                if not _links_into_wsl(ctx, p):
                    f.linux_driver_in_wsl.append(p)
        if root.exists("/usr/bin/nvidia-smi") and not _links_into_wsl(ctx, "/usr/bin/nvidia-smi"):
            f.linux_driver_in_wsl.append("/usr/bin/nvidia-smi")
        if f.linux_driver_in_wsl:
            f.evidence.append(Evidence("wsl:linux-driver", "\n".join(f.linux_driver_in_wsl)))
    return f


# -- layer 3: nvidia-smi --------------------------------------------------------------------


@dataclass
class _SmiAnswer:
    status: str = "not_run"  # ok | missing | failed | timeout | garbage | not_run
    exe: Optional[str] = None
    banner: Optional[SmiBanner] = None
    query: List[SmiQueryGpu] = field(default_factory=list)
    failure: Optional[SmiFailure] = None
    cut: str = ""  # why an answer was dropped: killed at the output cap (the probe then reports it could not answer)
    messages: List[str] = field(default_factory=list)
    evidence: List[Evidence] = field(default_factory=list)


def _find_smi(ctx: ProbeContext) -> Optional[str]:
    runner = ctx.runner
    if runner.which("nvidia-smi"):
        return "nvidia-smi"
    if ctx.root.is_live:  # never execute binaries of an inspected image (--root)
        for cand in WSL_SMI_CANDIDATES:
            local = str(ctx.root.path(cand))
            if runner.which(local):
                return local
    return None


def _smi_layer(ctx: ProbeContext) -> _SmiAnswer:
    ans = _SmiAnswer()
    exe = _find_smi(ctx)
    if exe is None:
        ans.status = "missing"
        return ans
    ans.exe = exe
    runner = ctx.runner
    res = runner.run([exe], timeout=ctx.timeout)
    ans.evidence.append(Evidence(f"cmd:{exe}", _cmd_excerpt(res)))
    if res.status == "timeout":
        ans.status = "timeout"
        ans.messages.append(f"nvidia-smi: no answer within {ctx.timeout:g} s (killed); a GPU may have fallen off the bus")
        return ans
    if res.status in ("missing", "error"):
        ans.status = "failed"
        ans.messages.append(res.reason)
        return ans
    if res.truncated:
        # killed at the output cap: a table that goes on past 1 MiB is no nvidia-smi's, and its first part
        # (a banner with a driver version) is not to be trusted; the probe says it could not answer
        ans.status = "failed"
        ans.cut = f"{res.reason}; its output was not used"
        ans.messages.append(ans.cut)
        return ans
    combined = res.stdout + "\n" + res.stderr
    banner = parsed(ans.evidence, f"cmd:{exe}", parse_banner, res.stdout)
    if banner is not None and res.status == "failed":
        ans.messages.append(res.reason)  # a table with a non-zero exit: keep the table, note the status
    if banner is None:
        failure = parsed(ans.evidence, f"cmd:{exe}", detect_failure, combined)
        if failure is not None:
            ans.failure = failure
            ans.status = "failed"
            ans.messages.extend(failure.lines)
        elif res.status == "failed":
            ans.status = "failed"
            ans.messages.append(res.reason)
        else:
            ans.status = "garbage"
            ans.messages.append("nvidia-smi printed no driver version (unrecognised output)")
        return ans
    ans.banner = banner
    ans.status = "ok"

    for fields in (QUERY_FIELDS, QUERY_FIELDS_NO_CC):
        argv = [exe, "--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits"]
        q = runner.run(argv, timeout=ctx.timeout)
        ans.evidence.append(Evidence("cmd:" + " ".join(argv), _cmd_excerpt(q)))
        if q.status == "timeout":
            ans.messages.append(f"nvidia-smi --query-gpu: no answer within {ctx.timeout:g} s (killed)")
            break
        if q.truncated:
            ans.cut = f"{q.reason}; its output was not used"
            ans.messages.append(ans.cut)
            break
        if q.status == "ok":
            ans.query = parsed(ans.evidence, "cmd:" + " ".join(argv), parse_query_gpus, q.stdout, fields, default=[])
            if not ans.query and banner.gpus:
                ans.messages.append("nvidia-smi --query-gpu: unrecognised output")
            break
        failure = parsed(ans.evidence, "cmd:" + " ".join(argv), detect_failure, q.stdout + "\n" + q.stderr)
        if failure is not None and failure.kind == "invalid_field" and "compute_cap" in fields:
            continue  # drivers < 510 know no compute_cap: ask again without it
        ans.messages.append((failure.message if failure else q.reason) or "nvidia-smi --query-gpu failed")
        break
    return ans


# -- merging --------------------------------------------------------------------------------


def _gpus_from_smi(smi: _SmiAnswer) -> List[GPU]:
    out: List[GPU] = []
    for pos, q in enumerate(smi.query):
        out.append(
            GPU(
                index=q.index if q.index is not None else pos,
                name=q.name or "",
                compute_capability=q.compute_cap,
                memory_total_mib=q.memory_total_mib,
                bus_id=q.bus_id or "",
                uuid=q.uuid or "",
                serial=q.serial or "",
                source="nvidia-smi",
            )
        )
    rows = smi.banner.gpus if smi.banner else []
    if not out:
        for r in rows:
            out.append(GPU(index=r.index, name=r.name, memory_total_mib=r.memory_total_mib, bus_id=r.bus_id, source="nvidia-smi"))
    else:  # the query lists names untruncated; the banner only fills blanks
        _enrich(out, [GPU(index=r.index, name=r.name, memory_total_mib=r.memory_total_mib, bus_id=r.bus_id) for r in rows])
    return out


def _gpus_from_proc(infos: List[ProcGpuInfo]) -> List[GPU]:
    return [
        GPU(index=i, name=g.model or "", bus_id=g.bus_location or "", uuid=g.uuid or "", source="proc")
        for i, g in enumerate(infos)
    ]


def _enrich(primary: List[GPU], other: List[GPU]) -> None:
    by_bus = {normalize_bus_id(g.bus_id): g for g in other if g.bus_id}
    for g in primary:
        o = by_bus.get(normalize_bus_id(g.bus_id)) if g.bus_id else None
        if o is None:
            continue
        if (not g.name or g.name.endswith("...")) and o.name and not o.name.endswith("..."):
            g.name = o.name
        if not g.uuid and o.uuid:
            g.uuid = o.uuid
        if g.compute_capability is None and o.compute_capability:
            g.compute_capability = o.compute_capability
        if g.memory_total_mib is None and o.memory_total_mib is not None:
            g.memory_total_mib = o.memory_total_mib
        if not g.serial and o.serial:
            g.serial = o.serial


def _disagreements(
    nvml: Optional[_NvmlAnswer], files: _Files, smi: _SmiAnswer, layer_gpus: List[Tuple[str, List[GPU]]]
) -> List[str]:
    out: List[str] = []
    claims: List[Tuple[str, str]] = []  # (who, version)
    if nvml is not None and nvml.driver_version:
        claims.append(("NVML", nvml.driver_version))
    if files.proc is not None:
        claims.append(("/proc/driver/nvidia/version", files.proc.version))
    if files.module_version:
        claims.append(("/sys/module/nvidia/version", files.module_version))
    if smi.banner is not None and not files.wsl:  # in WSL nvidia-smi reports the Windows driver
        claims.append(("nvidia-smi", smi.banner.driver_version or ""))
        query_versions = {q.driver_version for q in smi.query if q.driver_version}
        for v in sorted(query_versions):
            if not _same_version(v, smi.banner.driver_version or ""):
                claims.append(("nvidia-smi --query-gpu", v))
    if smi.failure is not None and smi.failure.nvml_library_version:
        claims.append(("nvidia-smi's NVML library", smi.failure.nvml_library_version))
    claims = [(w, v) for w, v in claims if v]
    for i in range(1, len(claims)):
        ref_who, ref = claims[0]
        who, v = claims[i]
        if not _same_version(ref, v):
            out.append(f"{ref_who} says {ref} but {who} says {v}")
    if smi.banner is not None and smi.banner.smi_version and smi.banner.driver_version and not files.wsl:
        if not _same_version(smi.banner.smi_version, smi.banner.driver_version):
            out.append(
                f"nvidia-smi is version {smi.banner.smi_version} but reports driver {smi.banner.driver_version}"
            )
    counts = [(who, len(gs)) for who, gs in layer_gpus]
    for i in range(1, len(counts)):
        if counts[i][1] != counts[0][1]:
            text = f"{counts[0][0]} lists {_plural(counts[0][1], 'GPU')} but {counts[i][0]} lists {_plural(counts[i][1], 'GPU')}"
            # the GPUs only the other layer lists, by their bus ids as that layer writes them: the lost GPU's name
            first = {normalize_bus_id(g.bus_id) for g in layer_gpus[0][1] if g.bus_id}
            only = [g.bus_id for g in layer_gpus[i][1] if g.bus_id and normalize_bus_id(g.bus_id) not in first]
            if first and only and len(only) == counts[i][1] - counts[0][1]:  # the rest matched: these are the gap
                text += f" (not in {counts[0][0]}: {', '.join(only)})"
            out.append(text)
    if nvml is not None and nvml.cuda_version and smi.banner is not None and smi.banner.cuda_version:
        if not _same_version(nvml.cuda_version, smi.banner.cuda_version):
            out.append(f"NVML says CUDA {nvml.cuda_version} but nvidia-smi says CUDA {smi.banner.cuda_version}")
    return out


def _state(nvml: Optional[_NvmlAnswer], files: _Files, smi: _SmiAnswer, user_gpus: List[GPU]) -> Tuple[str, str]:
    """(state, reason)."""
    explicit = set()
    if nvml is not None and nvml.kind:
        explicit.add(nvml.kind)
    if smi.failure is not None:
        explicit.add(smi.failure.kind)
    nvml_ok = nvml is not None and nvml.status == "ok"
    smi_ok = smi.status == "ok"
    if "version_mismatch" in explicit:
        return "version_mismatch", "the driver's user-space libraries and the loaded kernel module differ"
    if (nvml_ok or smi_ok) and user_gpus:
        return "ok", ""
    if "no_devices" in explicit or nvml_ok or smi_ok:
        return "no_devices", "the driver answers but lists no GPU"
    if "module_not_loaded" in explicit:
        if files.module_present or files.wsl:
            return "smi_failed", "nvidia-smi/NVML cannot reach the driver"
        return "module_not_loaded", "the NVIDIA kernel module is not loaded"
    if smi.status in ("failed", "timeout", "garbage") or (nvml is not None and nvml.status == "timeout"):
        return "smi_failed", f"nvidia-smi {smi.status}" if smi.status != "not_run" else "NVML timed out"
    if files.proc is not None and files.proc_gpus:
        return "ok", ""
    if files.module_present:
        return "no_devices", "the kernel module is loaded but lists no GPU"
    nvml_missing = nvml is None or nvml.status == "missing"
    if files.install_traces and not files.wsl:
        return "module_not_loaded", "driver files are installed but no kernel module is loaded"
    if nvml_missing and not files.install_traces and smi.status in ("missing", "not_run") and not files.wsl_libcuda:
        return "not_installed", ""
    if files.wsl and files.wsl_libcuda:
        return "unknown", "WSL GPU libraries found but neither NVML nor nvidia-smi answered"
    return "unknown", "no layer answered"


def probe(ctx: ProbeContext, snap: Snapshot) -> None:
    drv = Driver()
    files = _files_layer(ctx)

    nvml: Optional[_NvmlAnswer] = None
    if ctx.use_nvml and ctx.root.is_live and not _has_kernel_interface(ctx):
        # NVML can only talk to a loaded driver (a /dev/nvidia* node) or WSL's /dev/dxg; without one,
        # importing and initialising it costs time and says nothing the files and nvidia-smi don't.
        drv.evidence.append(Evidence("nvml", "not tried: no " + ", ".join(_KERNEL_INTERFACES)))
    elif ctx.use_nvml and ctx.root.is_live:
        nvml = _nvml_layer(ctx)
        drv.nvml = nvml.status
        drv.evidence.append(Evidence("nvml", _excerpt("\n".join(nvml.notes))))
        drv.messages.extend(nvml.messages)

    smi = _SmiAnswer()
    if nvml is not None and nvml.status == "ok":
        pass  # NVML answered: nvidia-smi (same library) would add nothing but time
    elif nvml is not None and nvml.status == "timeout":
        drv.messages.append("nvidia-smi not run: NVML hung, nvidia-smi would hang the same way")
    else:
        smi = _smi_layer(ctx)
    drv.nvidia_smi = smi.status
    drv.messages.extend(m for m in smi.messages if m not in drv.messages)
    drv.evidence.extend(files.evidence)
    drv.evidence.extend(smi.evidence)

    # driver version: NVML, then the kernel module files, then nvidia-smi
    if nvml is not None and nvml.driver_version:
        drv.version, drv.source = nvml.driver_version, "nvml"
    elif files.proc is not None:
        drv.version, drv.source = files.proc.version, "proc"
    elif smi.banner is not None and smi.banner.driver_version:
        drv.version, drv.source = smi.banner.driver_version, "nvidia-smi"
    elif files.module_version:
        drv.version, drv.source = files.module_version, "sysfs"
    drv.kernel_module_version = files.module_version or (files.proc.version if files.proc else None)
    if nvml is not None and nvml.cuda_version:
        drv.cuda_version = nvml.cuda_version
    elif smi.banner is not None:
        drv.cuda_version = smi.banner.cuda_version

    drv.wsl_libcuda = files.wsl_libcuda
    drv.linux_driver_in_wsl = bool(files.wsl and files.linux_driver_in_wsl)

    # GPUs: NVML, then nvidia-smi, then /proc; blanks filled from the others by bus id
    layer_gpus: List[Tuple[str, List[GPU]]] = []
    if nvml is not None and nvml.gpus:
        layer_gpus.append(("NVML", nvml.gpus))
    smi_gpus = _gpus_from_smi(smi)
    if smi_gpus:
        layer_gpus.append(("nvidia-smi", smi_gpus))
    proc_gpus = _gpus_from_proc(files.proc_gpus)
    if proc_gpus:
        layer_gpus.append(("/proc/driver/nvidia/gpus", proc_gpus))
    gpus: List[GPU] = list(layer_gpus[0][1]) if layer_gpus else []
    for _, other in layer_gpus[1:]:
        _enrich(gpus, other)

    user_gpus = (nvml.gpus if nvml is not None else []) + smi_gpus
    drv.disagreements = _disagreements(nvml, files, smi, layer_gpus)
    if smi.failure is not None and smi.failure.kind == "module_not_loaded" and files.proc is not None:
        drv.disagreements.append(
            f"nvidia-smi cannot reach the driver but /proc/driver/nvidia/version shows module {files.proc.version} loaded"
        )
    state, reason = _state(nvml, files, smi, user_gpus)
    drv.state = state

    snap.driver = drv
    snap.gpus = gpus
    if state == "unknown":
        raise ProbeUnknown(reason)
    if smi.cut:
        raise ProbeUnknown(smi.cut)  # what the other layers found is kept; the record says what is missing
