"""All probes, and the runner that fills a snapshot from them.

Each probe fills its own part of the snapshot; a later stage may read what an earlier one found (cudnn and loader
look into the toolkits and the Python environment found before). A probe that fails is recorded in
`snapshot.probes` with its reason and never stops others; only BadInput (something the user named, like
`--python`, is unusable) ends the run.

Concurrency: the commands the first probes run (the Python helper, the compilers' --version, ldconfig -p) are
started before any probe (:func:`start_commands`), as processes of their own; the probes that wait on the world
outside (the driver through NVML or nvidia-smi, rocm-smi, other interpreters) run in threads of their own; the rest
run one after another in the calling thread meanwhile. They are CPU-bound Python: in threads they would only take
turns for the GIL, and every file they stat or read hands it over (a warm check ~8 ms faster so).
"""
from __future__ import annotations

import os
import threading
import time
from typing import Dict, List, Optional, Sequence, Tuple, Union

from envdoctor import __version__
from envdoctor.errors import BadInput
from envdoctor.probes.base import LD_SO_CACHE, ProbeContext, ProbeFn, ProbePartial, ProbeSkipped, ProbeUnknown
from envdoctor.snapshot import ProbeStatus, Snapshot
from envdoctor.subproc import discard_started, kill_all


WAITS = True  # a stage entry's third item: the probe waits on the world outside (a thread of its own)
Entry = Union[Tuple[str, ProbeFn], Tuple[str, ProbeFn, bool]]


def _stages() -> List[List[Entry]]:
    from envdoctor.probes import binaries, cudnn, loader, nvidia, platform, pyenv, rocm, toolkits
    from envdoctor.probes import accelerators, buildenv, host, installers, kernels, memory

    # host needs nothing an earlier probe finds, so its four compiler commands run in the first stage; the
    # helper's, theirs and ldconfig's were started before (start_commands), so python, host and loader collect them.
    return [
        [
            ("python", pyenv.probe),
            ("host", host.probe),
            ("toolkits", toolkits.probe),
            ("nvidia", nvidia.probe, WAITS),  # NVML (a driver call that may take a second) or nvidia-smi
            ("platform", platform.probe),
            ("rocm", rocm.probe, WAITS),  # rocm-smi, rocminfo
        ],
        [
            ("cudnn", cudnn.probe),
            ("loader", loader.probe),
            ("binaries", binaries.probe),
            ("kernels", kernels.probe, WAITS),  # each Jupyter kernel's interpreter (--kernels)
            ("memory", memory.probe, WAITS),  # nvidia-smi's memory queries
            ("buildenv", buildenv.probe),
            ("installers", installers.probe),
            ("accelerators", accelerators.probe),
        ],
    ]


def _run_one(name: str, fn: ProbeFn, ctx: ProbeContext, snap: Snapshot) -> ProbeStatus:
    start = time.monotonic()
    try:
        fn(ctx, snap)
        status = ProbeStatus(name, "ok")
    except ProbeSkipped as exc:
        status = ProbeStatus(name, "skipped", str(exc))
    except ProbePartial as exc:
        status = ProbeStatus(name, "partial", str(exc))
    except ProbeUnknown as exc:
        status = ProbeStatus(name, "unknown", str(exc))
    except BadInput:
        raise  # input the user named explicitly (e.g. --python) is unusable: the command fails with exit 2
    except Exception as exc:  # noqa: BLE001 - one failing probe never sinks the report
        status = ProbeStatus(name, "error", f"{type(exc).__name__}: {exc}")
    status.duration_ms = round((time.monotonic() - start) * 1000, 1)
    return status


def prefetch(python_path: Optional[str], root_dir: Optional[str], snapshot_file: Optional[str], timeout: float) -> None:
    """Start now the commands the probes of a live run will run first (start_commands), so that they work while
    the caller imports the rules and loads the data; the probes then collect them (subproc.Runner.start). Takes
    obtain_snapshot's arguments and builds the same context it will; nothing for --snapshot or --root. Never
    raises."""
    if snapshot_file or root_dir:
        return
    start_commands(ProbeContext(env=dict(os.environ), timeout=timeout, target_python=python_path))


def start_commands(ctx: ProbeContext) -> None:
    """Start the Python helper (unless the walk runs in this process or its answer is kept), the compilers'
    --version and ldconfig -p (unless kept: envdoctor.cache), to be collected by the probes (Runner.start;
    one already started is not started twice). Never raises: whatever goes wrong here is found again, and reported,
    by the probe itself; a command no probe collects is killed when they end."""
    if not ctx.root.is_live:
        return
    from envdoctor.probes import host, pyenv

    for start in (pyenv.prefetch, host.prefetch,
                  lambda c: c.runner.start_fixed(["ldconfig", "-p"], timeout=c.timeout, reads=LD_SO_CACHE)):
        try:
            start(ctx)
        except Exception:  # noqa: BLE001 - the probe says it properly, later
            pass


def _run_stage(stage: Sequence[Entry], ctx: ProbeContext, snap: Snapshot) -> List[ProbeStatus]:
    """The stage's statuses, in its order: its waiting probes each in a thread (started first), the others here
    meanwhile, in order. A BadInput a probe raises is raised once all have ended, the first in order; Ctrl-C in this
    thread ends the stage at once (run_probes kills the commands the threads wait for)."""
    done: Dict[int, ProbeStatus] = {}
    errors: Dict[int, BaseException] = {}

    def in_thread(i: int) -> None:
        try:
            done[i] = _run_one(stage[i][0], stage[i][1], ctx, snap)
        except BaseException as exc:  # noqa: BLE001 - raised below, in the stage's order
            errors[i] = exc

    waiting = [i for i, entry in enumerate(stage) if len(entry) > 2 and entry[2]]
    threads = [threading.Thread(target=in_thread, args=(i,), name=f"envdoctor-probe-{stage[i][0]}") for i in waiting]
    for t in threads:
        t.start()
    for i in range(len(stage)):
        if i not in waiting:
            try:
                done[i] = _run_one(stage[i][0], stage[i][1], ctx, snap)
            except BadInput as exc:
                errors[i] = exc
    for t in threads:
        t.join()
    for i in sorted(errors):
        raise errors[i]
    return [done[i] for i in range(len(stage))]


def run_probes(ctx: ProbeContext, stages: Sequence[Sequence[Entry]] | None = None) -> Snapshot:
    snap = Snapshot(
        envdoctor_version=__version__,
        # datetime.now(timezone.utc).replace(microsecond=0).isoformat(), without importing datetime (~2.5 ms)
        created=time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),
        root=str(ctx.root.base),
    )
    statuses: List[ProbeStatus] = []
    if stages is None:
        start_commands(ctx)
    for stage in stages if stages is not None else _stages():
        try:
            statuses.extend(_run_stage(stage, ctx, snap))
            snap.probes = list(statuses)  # a later stage can tell a skipped earlier probe from a failed one
        except KeyboardInterrupt:
            kill_all()  # the probes' commands run in their own sessions: end them now, not at their timeouts
            raise
    discard_started()  # prefetched commands no probe asked for (another --python, a changed PATH)
    if ctx.root.unreadable:  # a FIFO or device where a system file should be: said, never read (fsroot)
        statuses.append(ProbeStatus("files", "unknown", "not read: " + "; ".join(
            f"{path} ({why})" for path, why in sorted(ctx.root.unreadable.items()))))
    snap.probes = statuses
    return snap


__all__ = ["ProbeContext", "ProbePartial", "ProbeSkipped", "ProbeUnknown", "WAITS", "prefetch", "run_probes", "start_commands"]
