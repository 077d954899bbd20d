"""ED620-ED622: GPU memory held by other processes, allocator settings, frameworks that each preallocate."""
from __future__ import annotations

from typing import Dict, List, Optional

from packaging.version import Version

from envdoctor.facts.versions import parse_version
from envdoctor.rules._runtime_data import alloc_keys
from envdoctor.rules.base import EvidenceItem, Finding, Rule, rule
from envdoctor.context import Context

HELD_FRACTION = 0.5  # a process holding more than half of a GPU's memory


def _age(s) -> str:
    if s is None:
        return "age unknown"
    s = int(s)
    return f"running {s // 86400} d {s % 86400 // 3600} h" if s >= 86400 else f"running {s // 3600} h {s % 3600 // 60} min"


@rule(
    id="ED620", name="gpu-memory-held", title="Another process holds most of a GPU's memory",
    severity="warning", area="gpu",
    rationale="""
"CUDA out of memory" on an idle machine usually has one answer: a leftover process (a notebook kernel
that still holds its tensors, a crashed training's orphaned data-loader worker, another user's job)
keeps the memory. The driver lists compute processes per GPU (NVML / nvidia-smi --query-compute-apps);
psutil names them. A process of another PID namespace (a container) shows as "[Not Found]".
""",
    example="GPU 0: 130004 of 143771 MiB held by pid 1328667 /usr/local/bin/python3.10, running 3 d: ED620.",
    references=["https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html",
                "https://pytorch.org/docs/stable/notes/cuda.html#memory-management"],
)
def gpu_memory_held(ctx: Context, r: Rule) -> List[Finding]:
    totals: Dict[int, Optional[int]] = {g.index: g.total_mib for g in ctx.snap.memory.gpus if g.total_mib}
    for g in ctx.snap.gpus:
        totals.setdefault(g.index, g.memory_total_mib)
    out = []
    for p in ctx.snap.memory.processes:
        total = totals.get(p.gpu_index) if p.gpu_index is not None else None
        if not p.used_mib or not total or p.used_mib < HELD_FRACTION * total:
            continue
        who = p.cmdline or p.name or "a process envdoctor cannot see (another PID namespace?)"
        user = f", user {p.user}" if p.user else ""
        out.append(r.finding(
            f"GPU {p.gpu_index}: {p.used_mib} of {total} MiB held by pid {p.pid} ({who}{user}, {_age(p.age_s)}).",
            subject=f"GPU {p.gpu_index}", evidence=[EvidenceItem("process", f"pid {p.pid}: {p.name}", p.source)],
            fix=[f"if it is a leftover: $ kill {p.pid}", "a notebook: restart or shut down its kernel",
                 "another user's job: pick a free GPU with CUDA_VISIBLE_DEVICES"]))
    return out


@rule(
    id="ED621", name="allocator-settings", title="Allocator settings: PYTORCH_CUDA_ALLOC_CONF and preallocation",
    severity="error", area="environment",
    rationale="""
torch parses PYTORCH_CUDA_ALLOC_CONF at the first CUDA allocation: an option it does not know (a typo,
or a key newer than the installed torch, like expandable_segments before 2.1) is not ignored but a hard
error there ("RuntimeError: Unrecognized CachingAllocator option: expandable_segments"), after `import
torch` succeeded. The keys each torch knows are data (matrices/runtime_env.toml). The other settings that
change memory behaviour are shown as info: XLA_PYTHON_CLIENT_PREALLOCATE / MEM_FRACTION / ALLOCATOR (jax)
and TF_FORCE_GPU_ALLOW_GROWTH (TensorFlow).
""",
    example="torch 2.0.1 with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: ED621 error (2.1+ only).",
    references=["https://pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf",
                "https://docs.jax.dev/en/latest/gpu_memory_allocation.html",
                "https://www.tensorflow.org/guide/gpu#limiting_gpu_memory_growth"],
)
def allocator_settings(ctx: Context, r: Rule) -> List[Finding]:
    from envdoctor.parsers.breadth import parse_alloc_conf

    env = dict(ctx.snap.memory.allocator_env)
    out = []
    conf = env.get("PYTORCH_CUDA_ALLOC_CONF")
    torch = ctx.framework("torch")
    if conf is not None:
        items, problems = parse_alloc_conf(conf)
        known = alloc_keys()
        tv = parse_version(torch.version) if torch else None
        bad = list(problems)
        for key, _ in items:
            row = known.get(key)
            if row is None:
                bad.append(f"'{key}' is not an option torch knows (known: {', '.join(sorted(known))})")
            elif row.get("since") and torch is not None and tv is not None and tv.release < Version(row["since"]).release:
                bad.append(f"'{key}' needs torch >= {row['since']}, this is torch {torch.version}")
        ev = [EvidenceItem("PYTORCH_CUDA_ALLOC_CONF", conf, "env:PYTORCH_CUDA_ALLOC_CONF")]
        if bad and torch is not None and torch.build in ("cuda", "rocm"):
            out.append(r.finding("PYTORCH_CUDA_ALLOC_CONF will stop torch at its first CUDA allocation "
                                 "(RuntimeError: Unrecognized CachingAllocator option): " + "; ".join(bad) + ".",
                                 subject=f"torch {torch.version}", evidence=ev,
                                 fix=["remove or correct the option: $ export PYTORCH_CUDA_ALLOC_CONF=<key:value,...>"]))
        elif bad:
            out.append(r.finding("PYTORCH_CUDA_ALLOC_CONF has problems torch would refuse: " + "; ".join(bad) + ".",
                                 severity="warning", evidence=ev, fix=["correct or unset PYTORCH_CUDA_ALLOC_CONF"]))
        else:
            out.append(r.finding(f"PYTORCH_CUDA_ALLOC_CONF={conf}: every option is known to torch.", severity="info", evidence=ev))
    others = {k: v for k, v in env.items() if k != "PYTORCH_CUDA_ALLOC_CONF"}
    if others:
        frac = others.get("XLA_PYTHON_CLIENT_MEM_FRACTION")
        bad_frac = frac is not None and not _fraction(frac)
        msg = "Memory settings: " + ", ".join(f"{k}={v}" for k, v in sorted(others.items())) + "."
        if bad_frac:
            msg += f" XLA_PYTHON_CLIENT_MEM_FRACTION={frac} is not a number between 0 and 1."
        out.append(r.finding(msg, severity="warning" if bad_frac else "info",
                             evidence=[EvidenceItem(k, v, f"env:{k}") for k, v in sorted(others.items())]))
    return out


def _fraction(text: str) -> bool:
    try:
        return 0.0 < float(text) <= 1.0
    except ValueError:
        return False


def _true(v) -> bool:
    return str(v).strip().lower() in ("1", "true", "yes")


@rule(
    id="ED622", name="frameworks-preallocate", title="Several installed frameworks will each preallocate the same GPU",
    severity="warning", area="environment",
    rationale="""
jax preallocates 75% of each visible GPU's memory when its backend starts (XLA_PYTHON_CLIENT_PREALLOCATE
default true, MEM_FRACTION 0.75), and TensorFlow maps nearly all of it unless memory growth is on
(TF_FORCE_GPU_ALLOW_GROWTH=true). Used in one process (a notebook importing both, or torch next to
either), the second framework finds the GPU full and fails with out-of-memory or cuDNN/cuBLAS handle
errors.
""",
    example="jax[cuda12] and tensorflow GPU builds installed, neither setting made: ED622.",
    references=["https://docs.jax.dev/en/latest/gpu_memory_allocation.html",
                "https://www.tensorflow.org/guide/gpu#limiting_gpu_memory_growth"],
)
def frameworks_preallocate(ctx: Context, r: Rule) -> List[Finding]:
    if not ctx.has_nvidia_gpu:
        return []
    env = ctx.snap.memory.allocator_env
    gpu = {fw.name for fw in ctx.frameworks if fw.build == "cuda"}
    grabbers = []
    if "jax" in gpu and not (env.get("XLA_PYTHON_CLIENT_PREALLOCATE", "").lower() in ("false", "0")
                              or env.get("XLA_PYTHON_CLIENT_ALLOCATOR", "").lower() == "platform"):
        grabbers.append("jax (75% of each GPU at start; XLA_PYTHON_CLIENT_PREALLOCATE=false turns it off)")
    if "tensorflow" in gpu and not _true(env.get("TF_FORCE_GPU_ALLOW_GROWTH", "")):
        grabbers.append("tensorflow (nearly all; TF_FORCE_GPU_ALLOW_GROWTH=true grows on demand)")
    if len(grabbers) + (1 if "torch" in gpu and grabbers else 0) < 2:
        return []
    also = " torch's caching allocator then finds little left." if "torch" in gpu else ""
    return [r.finding("In one process these will each take the GPU's memory: " + "; ".join(grabbers) + "." + also,
                      fix=["$ export XLA_PYTHON_CLIENT_PREALLOCATE=false", "$ export TF_FORCE_GPU_ALLOW_GROWTH=true"])]
