"""All probes, and the runner that fills a snapshot from them.

Probes of one stage run in parallel threads (each fills its own part of the
snapshot); a later stage may read what an earlier one found (cudnn and loader
look into the toolkits and the Python environment found before). A probe that
fails is recorded in `snapshot.probes` with its reason and never stops others;
only BadInput (something the user named, like `--python`, is unusable) ends the run.
"""
from __future__ import annotations

import datetime
import os
import time
from typing import List, Optional, Sequence, Tuple

from envdoctor import __version__
from envdoctor.errors import BadInput
from envdoctor.probes.base import ProbeContext, ProbeFn, ProbeSkipped, ProbeUnknown, parallel_map
from envdoctor.snapshot import ProbeStatus, Snapshot
from envdoctor.subproc import discard_started, kill_all


def _stages() -> List[List[Tuple[str, ProbeFn]]]:
    from envdoctor.probes import binaries, cudnn, loader, nvidia, platform, pyenv, rocm, toolkits
    from envdoctor.probes import accelerators, buildenv, host, installers, kernels, memory

    # Probes that start commands come first in their stage, so their waits overlap the others' CPU work;
    # host needs nothing an earlier probe finds, so its four compiler commands run in the first stage.
    return [
        [
            ("python", pyenv.probe),
            ("host", host.probe),
            ("toolkits", toolkits.probe),
            ("nvidia", nvidia.probe),
            ("platform", platform.probe),
            ("rocm", rocm.probe),
        ],
        [
            ("cudnn", cudnn.probe),
            ("loader", loader.probe),
            ("binaries", binaries.probe),
            ("kernels", kernels.probe),
            ("memory", memory.probe),
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
    except ProbeUnknown as exc:
        status = ProbeStatus(name, "unknown", str(exc))
    except BadInput:
        raise  # input the user named explicitly (e.g. --python) is unusable: the command fails with exit 2
    except Exception as exc:  # noqa: BLE001 - one failing probe never sinks the report
        status = ProbeStatus(name, "error", f"{type(exc).__name__}: {exc}")
    status.duration_ms = round((time.monotonic() - start) * 1000, 1)
    return status


def prefetch(python_path: Optional[str], root_dir: Optional[str], snapshot_file: Optional[str], timeout: float) -> None:
    """Start now the commands the probes of a live run will run first (the Python helper for --python, the
    compilers' --version, ldconfig -p), so that they work while the caller imports the rules and loads the
    data; the probes then collect them (subproc.Runner.start). Takes obtain_snapshot's arguments and builds
    the same context it will; nothing for --snapshot or --root. Never raises: whatever goes wrong here is
    found again, and reported, by the probe itself; a command no probe collects is killed when they end."""
    if snapshot_file or root_dir:
        return
    from envdoctor.probes import host, pyenv

    ctx = ProbeContext(env=dict(os.environ), timeout=timeout, target_python=python_path)
    for start in (pyenv.prefetch, host.prefetch, lambda c: c.runner.start(["ldconfig", "-p"], timeout=c.timeout)):
        try:
            start(ctx)
        except Exception:  # noqa: BLE001 - the probe says it properly, later
            pass


def run_probes(ctx: ProbeContext, stages: Sequence[Sequence[Tuple[str, ProbeFn]]] | None = None) -> Snapshot:
    snap = Snapshot(
        envdoctor_version=__version__,
        created=datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat(),
        root=str(ctx.root.base),
    )
    statuses: List[ProbeStatus] = []
    for stage in stages if stages is not None else _stages():
        try:
            statuses.extend(parallel_map(lambda probe: _run_one(probe[0], probe[1], ctx, snap), stage))
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


__all__ = ["ProbeContext", "ProbeSkipped", "ProbeUnknown", "prefetch", "run_probes"]
