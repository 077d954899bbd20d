"""Spawn the smoke programs (one process per framework, in parallel) and collect their reports.

Each program runs as `python -c <programs/_common.py + programs/<spec.smoke_program>> CONFIG` in the
target interpreter through envdoctor.subproc.Runner (streaming mode), with a hard timeout per
framework. Its stdout carries one JSON line per step; `assemble` turns those lines plus how the
process ended (exit status, signal, timeout, stderr tail) into a FrameworkResult, so a crash
mid-way keeps the steps before it and names the step it died in.
"""
from __future__ import annotations

import json
import os
import re
import signal as _signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from envdoctor.errors import BadInput, EnvdoctorError
from envdoctor.frameworks import registry
from envdoctor.smoke.results import BAD, DEFAULT_TIMEOUT, RANK, FrameworkResult, SmokeRun, StepResult
from envdoctor.subproc import CmdResult, Runner

PROGRAMS = Path(__file__).with_name("programs")
MARKER = "@@ENVDOCTOR-SMOKE@@ "
COMPUTE_STEPS = ("matmul", "conv", "mixed_precision", "compile")
MULTI_GPU_STEPS = ("each_gpu", "allreduce")  # a matmul on every visible GPU; with two or more, an all-reduce
MULTI_GPU = ("torch", "tensorflow", "jax")
TAIL_LINES = 15
# Seconds a program may take to exit once every step ran, counted from its last step and on top of
# the steps' budget. Measured on 2 shared cores, torch / tensorflow / jax in parallel: 0.6-4.5 s from
# the last step to the exit (3 runs); a program still exiting this long after its last step really
# hangs in its exit (its stacks are dumped before the kill).
SHUTDOWN_GRACE = 60.0
DUMP_SIGNAL = "SIGUSR1"  # asks a program for a stack dump (faulthandler) just before it is killed
DUMP_WAIT = 0.5  # seconds the dump gets before the kill

# stderr lines worth keeping whatever happened: they often say why a GPU is not used
NOTE_NEEDLES = (
    "Could not load dynamic library", "Cannot dlopen", "cannot open shared object file", "failed call to cuInit",
    "CUDA_ERROR", "CUDNN_STATUS", "cudaError", "no kernel image", "driver version is insufficient",
    "libdevice", "ptxas", "out of memory", "Fatal Python error", "terminate called", "Illegal instruction",
)

EventFn = Callable[[str, Dict[str, Any]], None]


def plan(framework: str, bench: bool = False) -> List[Tuple[str, str]]:
    """The (step, device) pairs a framework's program runs, in order."""
    steps: List[Tuple[str, str]] = [("import", ""), ("devices", "")]
    if framework == "onnxruntime":  # one InferenceSession per provider list: CPU, then CUDA first
        return steps + [("session", "cpu"), ("session", "gpu")]
    if framework != "cupy":  # cupy has no CPU path
        steps += [(s, "cpu") for s in COMPUTE_STEPS]
    steps += [(s, "gpu") for s in COMPUTE_STEPS]
    if framework in MULTI_GPU:
        steps += [(s, "gpu") for s in MULTI_GPU_STEPS]
    if bench:
        if framework != "cupy":
            steps.append(("bench_matmul", "cpu"))
        steps += [("bench_matmul", "gpu"), ("bench_h2d", "gpu")]
    return steps


def smoke_frameworks() -> Tuple[str, ...]:
    """The frameworks with a smoke program, in the registry's order (smoke.results.FRAMEWORKS, which must stay
    import-light for the smoke CLI's choices, is held equal to this by a test)."""
    return tuple(n for n, s in registry.SPECS.items() if s.smoke_program)


def program_source(framework: str) -> str:
    """_common.py followed by the program the framework's spec names (its ``smoke_program``)."""
    spec = registry.find(framework)
    if spec is None or not spec.smoke_program:
        raise BadInput(f"{framework}: no smoke program (frameworks with one: {', '.join(smoke_frameworks())})")
    common = (PROGRAMS / "_common.py").read_text(encoding="utf-8")
    own = (PROGRAMS / spec.smoke_program).read_text(encoding="utf-8")
    return common + "\n\n" + own


def child_env(env: Mapping[str, str]) -> Dict[str, str]:
    out = {str(k): str(v) for k, v in dict(env).items()}
    out.pop("PYTHONINSPECT", None)  # would keep the interpreter waiting at a prompt
    out["PYTHONUNBUFFERED"] = "1"
    return out


def _signal_name(num: int) -> str:
    try:
        return _signal.Signals(num).name
    except (ValueError, AttributeError):
        return f"signal {num}"


def _tail(text: str, n: int = TAIL_LINES) -> List[str]:
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    return [ln[:400] for ln in lines[-n:]]


def _excerpt(text: str) -> List[str]:
    """What stderr says about a crash or a hang: the lines before faulthandler's dump, the dump's
    first lines (the innermost frames come first) -- or, without a dump, the last lines."""
    lines = [ln.rstrip() for ln in text.splitlines()]
    for i, ln in enumerate(lines):
        if ln.startswith("Fatal Python error") or re.match(r"Timeout \(\d+:\d\d:\d\d", ln) \
                or re.match(r"(Current thread|Thread) 0x[0-9a-f]+ \(most recent call first\):", ln):
            before = [x[:400] for x in lines[:i] if x.strip()][-4:]
            dump = [x[:400] for x in lines[i:] if x.strip()]
            return before + dump[:14]
    return _tail(text, 8)


def _notes(text: str) -> List[str]:
    out: List[str] = []
    for ln in text.splitlines():
        if any(n in ln for n in NOTE_NEEDLES):
            ln = ln.strip()[:400]
            if ln not in out:
                out.append(ln)
        if len(out) >= 10:
            break
    return out


def assemble(framework: str, steps: Sequence[Tuple[str, str]], events: Sequence[Dict[str, Any]], res: CmdResult,
             timeout: float, require_gpu: bool = False, started: Optional[float] = None,
             shutdown_grace: float = SHUTDOWN_GRACE) -> FrameworkResult:
    """A FrameworkResult from the program's events and how its process ended (pure; no process).

    timeout is the steps' budget; a program that ran every step and was then killed hung while
    exiting for longer than shutdown_grace."""
    ended: Dict[Tuple[str, str], Dict[str, Any]] = {}
    begun: Dict[Tuple[str, str], float] = {}
    hello = done = False
    done_t: Optional[float] = None
    for ev in events:
        kind = ev.get("event")
        key = (str(ev.get("step", "")), str(ev.get("device") or ""))
        if kind == "end":
            ended[key] = ev
        elif kind == "begin":
            begun[key] = float(ev.get("_t") or 0.0)
        elif kind == "hello":
            hello = True
        elif kind == "done":
            done = True
            done_t = ev.get("_t")
    fr = FrameworkResult(name=framework, returncode=res.returncode, duration_ms=round(res.duration_s * 1000.0, 1),
                         stderr_tail=_tail(res.stderr), notes=_notes(res.stderr))
    rc = res.returncode
    if res.status == "timeout":
        kind, fr.outcome = "timeout", f"timeout after {timeout:g} s (killed)"
        if "cancelled" in res.reason:
            fr.outcome = "cancelled (killed)"
        elif done:
            fr.outcome = f"still exiting {shutdown_grace:g} s after its last step (killed)"
    elif rc is not None and rc < 0:
        fr.signal = -rc
        kind, fr.outcome = "crashed", f"crashed (signal {-rc}, {_signal_name(-rc)})"
    elif res.status in ("missing", "error"):
        kind, fr.outcome = "error", res.reason or res.status
    elif rc:
        kind, fr.outcome = "exit", f"exit status {rc}"
    else:
        kind, fr.outcome = "ok", "exit 0"
    tail = "\n".join(_excerpt(res.stderr))
    end_t = (started + res.duration_s) if started is not None else None
    interrupted: Optional[StepResult] = None
    for name, device in steps:
        got = ended.get((name, device))
        if got is not None:
            step = StepResult.from_dict(got)
            step.step, step.device = name, device
        elif interrupted is None:
            step = StepResult(step=name, device=device)
            if end_t is not None and (name, device) in begun and begun[(name, device)]:
                step.duration_ms = round(max(0.0, end_t - begun[(name, device)]) * 1000.0, 1)
            if kind == "timeout":
                step.status = "timeout"
                step.detail = f"no answer within {timeout:g} s; the process was killed" if "cancelled" not in res.reason \
                    else "cancelled; the process was killed"
            elif kind == "crashed" or (kind == "exit" and hello):
                step.status = "crashed"
                step.detail = fr.outcome if hello else f"{fr.outcome} before the smoke program started"
            elif kind == "error":
                step.status = "failed"
                step.detail = f"cannot run the smoke program: {res.reason}"
            elif not hello:
                step.status = "failed"
                step.detail = f"the interpreter could not run the smoke program ({fr.outcome})"
            else:
                step.status = "failed"
                step.detail = f"the smoke program stopped before this step ({fr.outcome})"
            if tail and kind != "error":
                step.detail += "\n" + tail
            interrupted = step
        else:
            step = StepResult(step=name, device=device, status="skipped",
                              detail=f"not run: the process {_verb(interrupted.status)} during {interrupted.label}")
        if require_gpu and device == "gpu" and step.status == "not_available" and step.code == "no_gpu":
            step.status = "failed"
            step.detail = "a GPU is required (--require-gpu) but there is none: " + step.detail
        fr.steps.append(step)
    if done and kind != "ok":
        how = {"timeout": f"hung while exiting: it was killed {shutdown_grace:g} s after its last step",
               "exit": f"ended with {fr.outcome} while exiting"}.get(kind, f"{fr.outcome} while exiting")
        if "cancelled" in res.reason:
            how = "was cancelled while exiting"
        shutdown = StepResult(step="shutdown", status="timeout" if kind == "timeout" else "crashed",
                              detail=f"every step ran, then the process {how}" + ("\n" + tail if tail else ""))
        if end_t is not None and done_t:
            shutdown.duration_ms = round(max(0.0, end_t - float(done_t)) * 1000.0, 1)
        fr.steps.append(shutdown)
    counted = [s.status for s in fr.steps if s.status in BAD or s.status == "ok"]
    fr.status = max(counted, key=lambda s: RANK[s], default="ok")
    return fr


def _verb(status: str) -> str:
    return {"crashed": "crashed", "timeout": "was killed (timeout)", "failed": "stopped"}.get(status, "stopped")


def run_framework(python: str, framework: str, *, timeout: float = DEFAULT_TIMEOUT, bench: bool = False,
                  require_gpu: bool = False, env: Optional[Mapping[str, str]] = None,
                  on_event: Optional[EventFn] = None, cancel: Optional[threading.Event] = None,
                  shutdown_grace: float = SHUTDOWN_GRACE) -> FrameworkResult:
    """Run one framework's program in `python` and collect its result.

    The steps get `timeout` seconds from the start; once the program says every step ran, its exit
    gets `shutdown_grace` seconds more (so a run whose steps end near the budget is not taken for
    a hang at exit). Before a hung program is killed it is asked for a stack dump."""
    steps = plan(framework, bench)
    config = {"framework": framework, "steps": [list(s) for s in steps], "timeout": timeout,
              "shutdown_grace": shutdown_grace, "dump_signal": DUMP_SIGNAL}
    events: List[Dict[str, Any]] = []
    lock = threading.Lock()
    seen: Dict[str, Any] = {"pid": None, "done": None}

    def on_line(line: str) -> None:
        at = line.find(MARKER)
        if at < 0:
            return
        try:
            ev = json.loads(line[at + len(MARKER):])
        except ValueError:
            return
        if not isinstance(ev, dict):
            return
        ev["_t"] = time.monotonic()
        with lock:
            events.append(ev)
            if ev.get("event") == "hello" and isinstance(ev.get("pid"), int):
                seen["pid"] = ev["pid"]
            elif ev.get("event") == "done":
                seen["done"] = ev["_t"]
        if on_event is not None:
            on_event(framework, ev)

    runner = Runner(env=dict(env if env is not None else os.environ), timeout=timeout)
    started = time.monotonic()
    stop, finished = threading.Event(), threading.Event()
    why: List[str] = []

    def watch() -> None:
        while not finished.wait(0.05):
            with lock:
                pid, done_at = seen["pid"], seen["done"]
            now = time.monotonic()
            if cancel is not None and cancel.is_set():
                why.append("cancel")
            elif done_at is None and now >= started + timeout:
                why.append("budget")
            elif done_at is not None and now >= done_at + shutdown_grace:
                why.append("shutdown")
            else:
                continue
            if why[0] != "cancel" and pid:
                _ask_for_dump(pid)
                finished.wait(DUMP_WAIT)
            stop.set()
            return

    watcher = threading.Thread(target=watch, name=f"smoke-watch-{framework}", daemon=True)
    watcher.start()
    try:
        # the Runner's own limit is only a backstop: the watcher kills first
        res = runner.run([python, "-c", program_source(framework), json.dumps(config)],
                         timeout=timeout + shutdown_grace + 10 * DUMP_WAIT + 5, env=child_env(runner.env),
                         on_stdout_line=on_line, cancel=stop)
    finally:
        finished.set()
        watcher.join()
    if res.status == "timeout" and why and why[0] != "cancel":
        res = replace(res, reason=f"{python}: no answer within {timeout:g} s (killed)" if why[0] == "budget"
                      else f"{python}: still exiting {shutdown_grace:g} s after its last step (killed)")
    with lock:
        got = list(events)
    fr = assemble(framework, steps, got, res, timeout, require_gpu, started, shutdown_grace)
    if on_event is not None:
        on_event(framework, {"event": "finished", "result": fr})
    return fr


def _ask_for_dump(pid: int) -> None:
    """Ask the program (its faulthandler) to write every thread's stack to stderr."""
    num = getattr(_signal, DUMP_SIGNAL, None)
    if num is None:
        return
    try:
        if os.getpgid(pid) == os.getpgrp():
            return  # not a program of ours (each runs in its own session)
        os.kill(pid, num)
    except OSError:
        pass


def target_snapshot(python: Optional[str], env: Optional[Mapping[str, str]] = None, probe_timeout: float = 20.0):
    """A snapshot holding only the target Python environment (the python-env probe), as `check` finds it; its
    helper gets `probe_timeout` seconds."""
    from envdoctor.fsroot import Root
    from envdoctor.probes import pyenv
    from envdoctor.probes.base import ProbeContext, ProbeUnknown
    from envdoctor.snapshot import Snapshot

    ctx = ProbeContext(root=Root("/"), env=dict(env if env is not None else os.environ), timeout=probe_timeout,
                       target_python=python)
    snap = Snapshot()
    try:
        pyenv.probe(ctx, snap)  # a --python that is not a working interpreter raises BadInput
    except ProbeUnknown as exc:
        raise EnvdoctorError(f"cannot inspect the Python environment: {exc}") from None
    return snap


def installed_frameworks(snapshot) -> Dict[str, Any]:
    known = smoke_frameworks()
    out: Dict[str, Any] = {}
    for fw in snapshot.python.frameworks:
        if fw.name in known and fw.name not in out:
            out[fw.name] = fw
    return out


def run_smoke(snapshot=None, python: Optional[str] = None, frameworks: Optional[Sequence[str]] = None,
              timeout: float = DEFAULT_TIMEOUT, bench: bool = False, require_gpu: bool = False,
              env: Optional[Mapping[str, str]] = None, on_event: Optional[EventFn] = None,
              cancel: Optional[threading.Event] = None, shutdown_grace: float = SHUTDOWN_GRACE) -> SmokeRun:
    """Smoke-test the frameworks of a Python environment.

    snapshot: a probed snapshot (its python part tells the interpreter and what is installed);
      None probes the environment of `python` (or the active venv/conda env, or this interpreter).
    frameworks: names to test (each is run even if the probe did not see it installed: the import
      step then says what is wrong); None tests every torch / tensorflow / jax / cupy installed.
    timeout: seconds each framework's program may take for its steps (hard: the process group is
      killed); its exit then gets SHUTDOWN_GRACE seconds more.
    """
    known = smoke_frameworks()
    for name in frameworks or ():
        if name not in known:
            raise BadInput(f"unknown framework {name!r} (choose from {', '.join(known)})")
    if snapshot is None:
        snapshot = target_snapshot(python, env)
    interpreter = snapshot.python.executable or python or ""
    if not interpreter:
        raise BadInput("no Python interpreter to run the smoke test in (give --python PATH)")
    if os.sep in interpreter and not os.path.exists(interpreter):
        raise BadInput(f"{interpreter}: no such interpreter on this machine (a smoke test needs a live environment)")
    installed = installed_frameworks(snapshot)
    wanted = [n for n in known if n in (frameworks or installed)]
    run = SmokeRun(python=interpreter, python_version=snapshot.python.version, timeout=timeout, bench=bench,
                   require_gpu=require_gpu)
    start = time.monotonic()
    if not wanted:
        if require_gpu:
            run.problems.append(f"a GPU is required (--require-gpu) but no GPU framework "
                                f"({', '.join(known)}) is installed in {interpreter}")
        return run
    cancel = cancel or threading.Event()
    with ThreadPoolExecutor(max_workers=len(wanted), thread_name_prefix="smoke") as pool:
        futures = [pool.submit(run_framework, interpreter, name, timeout=timeout, bench=bench,
                               require_gpu=require_gpu, env=env, on_event=on_event, cancel=cancel,
                               shutdown_grace=shutdown_grace)
                   for name in wanted]
        try:
            results = [f.result() for f in futures]
        except BaseException:  # Ctrl-C: kill every program now instead of waiting for their timeouts
            cancel.set()
            raise
    for fr in results:
        fw = installed.get(fr.name)
        if fw is not None:
            fr.version, fr.distribution = fw.version, fw.distribution
            fr.build = fw.build + (f" {fw.cuda_version}" if fw.cuda_version else "") + \
                (f" {fw.rocm_version}" if fw.rocm_version else "")
        else:
            fr.distribution = ""
    run.frameworks = results
    run.duration_ms = round((time.monotonic() - start) * 1000.0, 1)
    return run
