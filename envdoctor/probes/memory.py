"""GPU memory in use, the processes holding it, and the allocator settings of the environment.

NVML first (nvmlDeviceGetMemoryInfo, nvmlDeviceGetComputeRunningProcesses), bounded by the probe
timeout in a thread like the nvidia probe's NVML layer; nvidia-smi's --query-gpu / --query-compute-apps
CSV as the fallback. psutil (imported only when there are processes) names each process: its command
line (secret-looking arguments masked here, the rest redacted like every output), user and age.
A process of another PID namespace (a container) is listed with what the driver says about it.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Dict, List, Optional

from envdoctor.parsers.breadth import parse_compute_apps, parse_gpu_memory
from envdoctor.probes._parsed import parsed
from envdoctor.probes.base import ProbeContext, ProbeSkipped
from envdoctor.snapshot import Evidence, GpuMemoryUse, GpuProcess, Snapshot

ALLOCATOR_VARS = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF", "PYTORCH_NO_CUDA_MEMORY_CACHING",
                  "XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_ALLOCATOR",
                  "TF_FORCE_GPU_ALLOW_GROWTH", "TF_GPU_ALLOCATOR")
MAX_PROCESSES = 256
MIB = 1024 * 1024


def _nvml_query() -> Optional[Dict[str, Any]]:
    try:
        import pynvml  # untyped: pyproject ignores its missing stubs
    except Exception:  # noqa: BLE001 - no bindings: the nvidia-smi fallback answers
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001
        return None
    try:
        gpus, procs = [], []
        for i in range(int(pynvml.nvmlDeviceGetCount())):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            try:
                uuid = pynvml.nvmlDeviceGetUUID(h)
                uuid = uuid.decode() if isinstance(uuid, bytes) else str(uuid)
            except Exception:  # noqa: BLE001
                uuid = ""
            mem = pynvml.nvmlDeviceGetMemoryInfo(h)
            gpus.append(GpuMemoryUse(i, uuid, int(mem.used) // MIB, int(mem.total) // MIB))
            for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h) or []:
                used = getattr(p, "usedGpuMemory", None)
                procs.append(GpuProcess(pid=int(p.pid), gpu_index=i, gpu_uuid=uuid, source="nvml",
                                        used_mib=int(used) // MIB if isinstance(used, int) and used >= 0 else None))
        return {"gpus": gpus, "processes": procs}
    except Exception:  # noqa: BLE001 - any NVML failure: fall back to nvidia-smi
        return None
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass


def _nvml_bounded(timeout: float) -> Optional[Dict[str, Any]]:
    box: Dict[str, Any] = {}
    t = threading.Thread(target=lambda: box.setdefault("a", _nvml_query()), name="envdoctor-nvml-mem", daemon=True)
    t.start()
    t.join(max(0.1, timeout))
    return box.get("a")


def _smi(ctx: ProbeContext, snap: Snapshot) -> bool:
    from envdoctor.probes.nvidia import _find_smi

    exe = _find_smi(ctx)
    if exe is None:
        return False
    answered = False
    for query, parse, kind in (("--query-gpu=index,uuid,memory.used,memory.total,utilization.gpu", parse_gpu_memory, "gpus"),
                               ("--query-compute-apps=gpu_uuid,pid,process_name,used_memory", parse_compute_apps, "procs")):
        argv = [exe, query, "--format=csv"]
        res = ctx.runner.run(argv, timeout=ctx.timeout)
        source = "cmd:nvidia-smi " + query + " --format=csv"
        snap.memory.evidence.append(Evidence(source, (res.stdout or res.reason)[:600]))
        if res.status != "ok":
            continue
        rows = parsed(snap.memory.evidence, source, parse, res.stdout, default=[])
        if kind == "gpus":
            snap.memory.gpus = [GpuMemoryUse(r["index"], r["uuid"], r["used_mib"], r["total_mib"]) for r in rows]
            answered = answered or bool(rows)
        else:
            by_uuid = {g.uuid: g.index for g in snap.memory.gpus if g.uuid}
            snap.memory.processes = [GpuProcess(pid=r["pid"], gpu_uuid=r["gpu_uuid"], name=r["name"],
                                                used_mib=r["used_mib"], gpu_index=by_uuid.get(r["gpu_uuid"]),
                                                source="nvidia-smi") for r in rows]
            answered = True
    return answered


def _mask_args(argv: List[str]) -> str:
    from envdoctor.redact import REDACTED, is_secret_name  # its patterns compile at import: only with GPU processes

    out, hide_next = [], False
    for a in argv[:64]:
        if hide_next:
            out.append(REDACTED)
            hide_next = False
            continue
        opt, eq, _ = a.partition("=")
        if opt.startswith("-") and is_secret_name(opt.lstrip("-").replace("-", "_")):
            out.append(f"{opt}={REDACTED}" if eq else a)
            hide_next = not eq
        else:
            out.append(a)
    return " ".join(out)[:400]


def name_processes(procs: List[GpuProcess], now: Optional[float] = None) -> None:
    """Fill cmdline, user and age from psutil (a process that is gone or of another namespace keeps the driver's name)."""
    if not procs:
        return
    import psutil  # a declared dependency, imported only when some process holds GPU memory

    now = time.time() if now is None else now
    for p in procs:
        try:
            proc = psutil.Process(p.pid)
            with proc.oneshot():
                p.cmdline = _mask_args(proc.cmdline())
                p.user = proc.username()
                p.age_s = round(max(0.0, now - proc.create_time()), 1)
                if not p.name:
                    p.name = proc.name()
        except Exception:  # noqa: BLE001 - gone, no permission, or another PID namespace
            continue


def probe(ctx: ProbeContext, snap: Snapshot) -> None:
    snap.memory.allocator_env = {k: ctx.env[k] for k in ALLOCATOR_VARS if ctx.env.get(k) is not None}
    if not ctx.root.is_live:
        raise ProbeSkipped("GPU memory of an image root is not probed")
    if snap.driver.state not in ("ok", "unknown") and not snap.gpus:
        return
    answer = _nvml_bounded(ctx.timeout) if ctx.use_nvml else None
    if answer is not None:
        snap.memory.gpus, snap.memory.processes = answer["gpus"], answer["processes"]
        snap.memory.evidence.append(Evidence("nvml", f"{len(answer['gpus'])} GPUs, {len(answer['processes'])} compute processes"))
    elif not _smi(ctx, snap):
        return
    snap.memory.processes = snap.memory.processes[:MAX_PROCESSES]
    name_processes(snap.memory.processes)
