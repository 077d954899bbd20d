"""What bug reports ask for besides the GPU stack (as `python -m torch.utils.collect_env` does): the CPU
model and the instruction-set flags framework builds assume (AVX/AVX2/FMA; AVX-512), and the gcc / clang /
cmake / ninja versions extension builds use. The four version commands run in parallel, each bounded."""
from __future__ import annotations

from envdoctor.parsers.breadth import parse_cpuinfo, parse_tool_version
from envdoctor.probes._parsed import parsed
from envdoctor.probes.base import ProbeContext, parallel_map
from envdoctor.snapshot import Evidence, Snapshot

TOOLS = ("gcc", "clang", "cmake", "ninja")


def prefetch(ctx: ProbeContext) -> None:
    """Start the compilers' --version now (Runner.start): probe() collects them."""
    if ctx.root.is_live:
        for tool in TOOLS:
            if ctx.runner.which(tool):
                ctx.runner.start_fixed([tool, "--version"], timeout=ctx.timeout)


def probe(ctx: ProbeContext, snap: Snapshot) -> None:
    h = snap.host
    text = ctx.root.read_text("/proc/cpuinfo", 1024 * 1024) if ctx.root.exists("/proc/cpuinfo") else None
    if text:
        h.cpu_model, h.cpu_flags = parsed(h.evidence, "file:/proc/cpuinfo", parse_cpuinfo, text, default=("", []))
        h.evidence.append(Evidence("file:/proc/cpuinfo", f"model name: {h.cpu_model}; flags: {' '.join(h.cpu_flags)}"))
    if not ctx.root.is_live:
        return  # never execute an inspected image's compilers
    runner = ctx.runner
    found = [t for t in TOOLS if runner.which(t)]
    if not found:
        return
    kept = {t: runner.kept([t, "--version"]) for t in found}  # cached answers first: no thread for them
    todo = [t for t in found if kept[t] is None]
    ran = dict(zip(todo, parallel_map(lambda t: runner.run_fixed([t, "--version"], timeout=ctx.timeout), todo)))
    for tool in found:
        res = kept[tool] or ran[tool]
        if res.status != "ok":
            h.evidence.append(Evidence(f"cmd:{tool} --version", res.reason[:200]))
            continue
        version = parsed(h.evidence, f"cmd:{tool} --version", parse_tool_version, tool, res.stdout)
        h.evidence.append(Evidence(f"cmd:{tool} --version", res.stdout.strip().splitlines()[0][:200] if res.stdout.strip() else ""))
        if version:
            h.compilers[tool] = version
