"""Executing an onboarding :class:`~envdoctor.onboard.plan.Plan`, with a state file for resuming.

Every subprocess (the venv / conda creation, the install, the smoke programs) starts through
envdoctor.subproc.Runner, with its output appended to the log file in the environment.  After each step
the state file (``<env>/.envdoctor-onboard.json``) is replaced atomically: the step's status, the hash of
its inputs and its result.  A rerun skips a finished step whose inputs did not change.
"""
from __future__ import annotations

import copy
import datetime
import errno
import json
import os
import re
import shutil
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from envdoctor import __version__, outfile
from envdoctor.doctor import build_report, obtain_snapshot
from envdoctor.emit import write_stdout
from envdoctor.errors import BadInput, EnvdoctorError
from envdoctor.fsroot import Root
from envdoctor.infile import read_text as read_input
from envdoctor.infile import safe_json_or_none
from envdoctor.knowledge import load_matrices
from envdoctor.knowledge.load import default_cache_dir
from envdoctor.lock.render import Meta, render, render_clash
from envdoctor.lock.resolve import resolve
from envdoctor.onboard import plan as P
from envdoctor.onboard import report as R
from envdoctor.progress import Status
from envdoctor.redact import redact_output
from envdoctor.smoke import SmokeRun
from envdoctor.smoke import run_smoke  # a module-level name, so tests can replace the smoke run with a fake one
from envdoctor.smoke.render import Progress as SmokeProgress
from envdoctor.smoke.render import render_text
from envdoctor.smoke.runner import target_snapshot
from envdoctor.snapshot_io import write_atomic
from envdoctor.subproc import CmdResult, Runner

MARK = {"ok": "✓", "failed": "✗", "interrupted": "✗", "skipped": "↷", "running": "…", "stopped": "!"}


class StepFailed(EnvdoctorError):
    """A step failed: exit 1, naming the step and the log file."""

    exit_code = 1


@dataclass
class Options:
    wishes: List[P.FrameworkWish]
    env_dir: Optional[str] = None
    conda: Optional[str] = None
    yes: bool = False
    dry_run: bool = False
    emit_script: Optional[str] = None
    force: bool = False
    cpu: bool = False
    installer: str = "auto"
    python: Optional[str] = None  # the base interpreter: a path, "3.12", or None (the one running envdoctor)
    companions: Optional[str] = None
    snapshot_file: Optional[str] = None
    timeout: float = 5.0  # each probe command
    quiet: bool = False
    rerun: str = "envdoctor onboard"  # the command line, for "rerun ..." messages


def _now() -> str:
    return datetime.datetime.now(tz=datetime.timezone.utc).replace(microsecond=0).isoformat()


# --------------------------------------------------------------------------- progress


def ask(question: str) -> bool:
    """A yes/no question on stderr, answered on stdin (no by default); the CLI passes click's prompt instead."""
    sys.stderr.write(f"{question} [y/N]: ")
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


class Progress:
    """One line per step on stderr: ``[5/7] install  ✓ 84.2 s``."""

    def __init__(self, quiet: bool = False, stream: Any = None) -> None:
        self.quiet = quiet
        self.stream = stream
        # while a step runs, a status line under its lines on a terminal (the seconds it has taken so far)
        self.live: Optional[Status] = None

    def echo(self, text: str) -> None:
        if self.quiet:
            return
        if self.live is not None:
            self.live.echo(text)
            return
        stream = self.stream if self.stream is not None else sys.stderr
        stream.write(text + "\n")
        stream.flush()

    def step(self, name: str, status: str, text: str = "", seconds: Optional[float] = None) -> None:
        n = P.STEPS.index(name) + 1
        tail = f"  ({seconds:.1f} s)" if seconds is not None and status in ("ok", "failed") else ""
        if self.live is not None:
            self.live.close()
            self.live = None
        self.echo(f"[{n}/{len(P.STEPS)}] {name:<8} {MARK.get(status, '?')} {text}".rstrip() + tail)
        if status == "running" and not self.quiet:
            self.live = Status(f"[{n}/{len(P.STEPS)}] {name}",
                               stream=self.stream if self.stream is not None else sys.stderr).__enter__()

    def close(self) -> None:
        if self.live is not None:
            self.live.close()
            self.live = None


# --------------------------------------------------------------------------- the state file


class State:
    """``<env>/.envdoctor-onboard.json``: which steps finished, with the hash of their inputs and their result."""

    def __init__(self, data: Optional[Dict[str, Any]] = None) -> None:
        self.data = data or {"schema": P.SCHEMA, "created": _now(), "steps": {}}
        self.path: Optional[str] = None

    @staticmethod
    def read(path: str) -> Optional["State"]:
        """The state at path; None when there is none or it is not onboard's."""
        try:
            data = safe_json_or_none(read_input(path))  # bounded, a regular file only
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("schema") != P.SCHEMA or not isinstance(data.get("steps"), dict):
            return None
        st = State(data)
        st.path = path
        return st

    def step(self, name: str) -> Dict[str, Any]:
        return self.data["steps"].get(name) or {}

    def done(self, name: str, inputs: Optional[Dict[str, Any]]) -> bool:
        s = self.step(name)
        return s.get("status") == "ok" and inputs is not None and s.get("inputs") == P.inputs_hash(inputs)

    def record(self, name: str, status: str, inputs: Optional[Dict[str, Any]] = None, result: Any = None,
               duration_s: Optional[float] = None, detail: str = "") -> None:
        prev = self.step(name)
        runs = int(prev.get("runs") or 0)
        if status == "running" or prev.get("status") != "running":
            runs += 1  # a new run of the step (one that was "running" is finishing now)
        entry: Dict[str, Any] = {"status": status, "inputs": P.inputs_hash(inputs) if inputs is not None else None,
                 "finished" if status != "running" else "started": _now(), "runs": runs}
        if duration_s is not None:
            entry["duration_s"] = round(duration_s, 2)
        if detail:
            entry["detail"] = detail
        if result is not None:
            entry["result"] = result
        self.data["steps"][name] = entry
        self.save()

    def save(self) -> None:
        if not self.path:
            return  # a conda environment's prefix is not known yet: kept in memory until it is
        self.data["updated"] = _now()
        write_atomic(self.path, json.dumps(self.data, indent=2, ensure_ascii=False))


# --------------------------------------------------------------------------- the log


class Log:
    """The log file in the environment; until the environment exists (conda) lines are kept in memory."""

    def __init__(self) -> None:
        self.path: Optional[str] = None
        self.pending: List[str] = []
        self.lock = threading.Lock()

    def attach(self, path: str) -> None:
        self.path = path
        with self.lock:
            pending, self.pending = self.pending, []
        for line in pending:
            self.write(line)

    def write(self, text: str) -> None:
        with self.lock:
            if self.path is None:
                self.pending.append(text)
                return
            try:
                with open(self.path, "a", encoding="utf-8") as fh:
                    fh.write(text if text.endswith("\n") else text + "\n")
            except OSError:
                pass

    def flush_to(self, fallback: str) -> str:
        """Where the log is: its file, or (nothing to attach it to) a fallback file written now."""
        if self.path is None:
            self.attach(fallback)
        return self.path or fallback


# --------------------------------------------------------------------------- running commands


def run_logged(runner: Runner, log: Log, argv: Sequence[str], timeout: float,
               on_line: Optional[Callable[[str], None]] = None) -> CmdResult:
    """Run argv through the Runner, its stdout appended to the log line by line; Ctrl-C kills it (and its
    process group) before the KeyboardInterrupt goes on."""
    log.write(f"\n=== {_now()} $ {P._q(argv)}   (timeout {timeout:g} s)")

    def line(text: str) -> None:
        log.write(text)
        if on_line is not None:
            on_line(text)

    cancel = threading.Event()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="onboard") as pool:
        fut = pool.submit(runner.run, list(argv), timeout=timeout, on_stdout_line=line, cancel=cancel)
        try:
            res = fut.result()
        except BaseException:
            cancel.set()
            try:
                fut.result(timeout=30)
            except BaseException:  # noqa: BLE001 - the interrupt is what matters
                pass
            log.write(f"=== {_now()} interrupted: the command was killed")
            raise
    if res.stderr.strip():
        log.write("--- stderr ---\n" + res.stderr.rstrip("\n"))
    log.write(f"=== {_now()} {res.status}" + (f": {res.reason}" if res.reason else "") + f" ({res.duration_s:.1f} s)")
    return res


def why_failed(res: CmdResult) -> str:
    if res.status == "failed" and res.returncode is not None and res.returncode < 0:
        try:
            name = signal.Signals(-res.returncode).name
        except ValueError:
            name = f"signal {-res.returncode}"
        return f"{os.path.basename(str(res.argv[0]))} was killed ({name})"
    if res.status == "failed":
        last = [ln.strip() for ln in (res.stderr or res.stdout).splitlines() if ln.strip()]
        err = [ln for ln in last if ln.startswith("ERROR") or "error" in ln.lower()]
        tail = (err or last)[-1][:300] if (err or last) else ""
        return f"{os.path.basename(str(res.argv[0]))} exited with status {res.returncode}" + (f": {tail}" if tail else "")
    return res.reason or res.status


# --------------------------------------------------------------------------- the machine


def scan_pci(root: Any) -> List[str]:
    """NVIDIA display controllers listed in sysfs (works without any driver)."""
    devices = []
    for path in root.glob("/sys/bus/pci/devices/*"):
        devices.append((os.path.basename(path), root.read_text(path + "/vendor", 64), root.read_text(path + "/class", 64)))
    return P.nvidia_pci_devices(devices)


def base_python(runner: Runner, wanted: Optional[str]) -> P.BasePython:
    if not wanted:
        exe = sys.executable
    elif re.match(r"^\d+\.\d+$", wanted.strip()):
        exe = runner.which(f"python{wanted.strip()}") or ""
        if not exe:
            raise BadInput(f"--python {wanted}: no python{wanted.strip()} on PATH")
    else:
        exe = wanted
    res = runner.run([exe, "-I", "-c", P.BASE_PYTHON_QUERY], timeout=P.TIMEOUT_QUERY)
    found = P.parse_base_python(res.stdout) if res.ok else None
    if found is None:
        raise BadInput(f"--python {wanted or exe}: not a working Python interpreter ({res.reason or 'no version printed'})")
    # The interpreter as named (a venv is built from exactly that one), as an absolute path.
    path = runner.which(exe) or exe
    found.executable = os.path.abspath(path)
    return found


def conda_prefix(runner: Runner, tool_path: str, name: str) -> Optional[str]:
    res = runner.run([tool_path, "env", "list", "--json"], timeout=P.TIMEOUT_QUERY)
    if not res.ok:
        raise BadInput(f"cannot list the conda environments: {res.reason}")
    try:
        envs = json.loads(res.stdout).get("envs") or []
    except (ValueError, AttributeError):
        raise BadInput(f"`{os.path.basename(tool_path)} env list --json` did not print JSON") from None
    for prefix in envs:
        if isinstance(prefix, str) and os.path.basename(prefix.rstrip("/")) == name:
            return prefix
    return None


# --------------------------------------------------------------------------- the environment on disk


def _looks_like_env(path: str) -> bool:
    return any(os.path.exists(os.path.join(path, x)) for x in ("pyvenv.cfg", "conda-meta", os.path.join("bin", "python")))


def existing_env(target: P.Target, force: bool) -> str:
    """What is at the target now: ``new`` (nothing, or an empty folder), ``ours`` (a state file: resume) or
    ``replace`` (--force over an environment).  Refuses (BadInput, exit 2) anything else."""
    path = target.path
    if not path or not os.path.lexists(path):
        return "new"
    where = f"conda environment {target.name} ({path})" if target.kind == "conda" else path
    if not os.path.isdir(path):
        raise BadInput(f"{where} exists and is not a directory; choose another --env-dir")
    if not os.listdir(path):
        return "new"
    ours = State.read(os.path.join(path, P.STATE_FILE)) is not None
    if ours and not force:
        return "ours"
    if not force:
        raise BadInput(f"{where} already exists and was not made by envdoctor onboard; refusing to touch it "
                       "(pass --force to replace it, or choose another " + ("--conda NAME" if target.kind == "conda"
                                                                            else "--env-dir") + ")")
    if not ours and not _looks_like_env(path):
        raise BadInput(f"{where} is not a Python environment (no pyvenv.cfg, conda-meta or bin/python); "
                       "envdoctor never replaces it, even with --force")
    if target.kind == "venv" and os.path.lexists(path + P.BACKUP_SUFFIX):
        raise BadInput(f"{path + P.BACKUP_SUFFIX} exists (a previous environment kept by --force); remove it first")
    return "replace"


# --------------------------------------------------------------------------- one run at a time

LOCK_SUFFIX = ".envdoctor-onboard.lock"


def lock_path(target: P.Target) -> str:
    """The lock file of an environment: next to a venv (``DIR/../.NAME.envdoctor-onboard.lock``), so it
    exists before the folder does and is not moved away with it by --force; for a conda environment,
    whose prefix is not known before it is made, in envdoctor's cache folder."""
    if target.kind == "venv":
        parent, name = os.path.split(os.path.abspath(target.path))
        return os.path.join(parent, f".{name}{LOCK_SUFFIX}")
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", target.name) or "_"
    return str(default_cache_dir().parent / "locks" / f"conda-{safe}{LOCK_SUFFIX}")


class EnvLock:
    """An exclusive ``fcntl.flock`` on the environment's lock file, held while onboard may change it.

    A second onboarding of the same environment does not wait: it says who holds the lock in one line
    and exits 2. The kernel drops the lock when the holder ends in any way (SIGKILL included), so a
    stale lock file never blocks a rerun; the file itself is left in place (removing it would race)."""

    def __init__(self, target: P.Target) -> None:
        self.target = target
        self.path = lock_path(target)
        self.fd: Optional[int] = None

    def acquire(self) -> None:
        import fcntl  # Unix only: imported where a lock is taken

        where = self.target.path if self.target.kind == "venv" else f"conda environment {self.target.name}"
        paths = [self.path]
        if self.target.kind == "venv" and os.path.isdir(self.target.path):
            paths.append(os.path.join(self.target.path, LOCK_SUFFIX.lstrip(".")))  # a folder we may not write next to
        last: Optional[OSError] = None
        for path in paths:
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                last = exc
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
                os.close(fd)
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    who = f" (pid {holder})" if holder.isdigit() else ""
                    raise BadInput(f"another envdoctor onboard{who} is working on {where} (lock {path}); "
                                   "wait for it to end, or stop it, then rerun") from None
                raise BadInput(f"cannot lock {path}: {exc.strerror or exc}") from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
            self.fd, self.path = fd, path
            return
        raise BadInput(f"cannot create the lock file {self.path}: {getattr(last, 'strerror', None) or last}")

    def release(self) -> None:
        if self.fd is not None:
            try:
                os.ftruncate(self.fd, 0)
            except OSError:
                pass
            os.close(self.fd)  # closing drops the flock
            self.fd = None


# --------------------------------------------------------------------------- the run


class Onboarding:
    def __init__(self, opts: Options, env: Optional[Mapping[str, str]] = None, out: Any = None,
                 confirm: Optional[Callable[[str], bool]] = None) -> None:
        self.opts = opts
        self.env = dict(env if env is not None else os.environ)
        self.runner = Runner(env=self.env, timeout=P.TIMEOUT_QUERY)
        self.progress = Progress(quiet=opts.quiet)
        self.out = out or write_stdout
        self.confirm = confirm or ask
        self.log = Log()
        self.state = State()
        self.timings: Dict[str, float] = {}
        self.snap: Any = None
        self.report: Any = None
        self.plan: Optional[P.Plan] = None
        self.lock: Any = None
        self.env_lock: Optional[EnvLock] = None
        self.smoke_run: Any = None
        self.backup: Optional[str] = None
        self.step_status: Dict[str, Dict[str, Any]] = {}
        self.todo: List[str] = []
        self.report_paths = ("", "")

    # -- helpers
    def _status(self, name: str, status: str, detail: str = "", seconds: Optional[float] = None) -> None:
        self.step_status[name] = {"status": status, "detail": detail, "seconds": seconds}

    def _fail(self, name: str, why: str) -> StepFailed:
        log = self.log.path or "(no log: nothing was run)"
        return StepFailed(f"onboarding stopped at step '{name}' ({P.STEP_TITLES[name]}): {why}; what existed before is "
                          f"untouched{'' if not self.backup else f' (the previous environment is at {self.backup})'}. "
                          f"Log: {log}. Rerun the same command to continue from there.")

    # -- the steps that always run
    def probe(self) -> None:
        t0 = time.monotonic()
        self.progress.step("probe", "running", "the driver, GPUs, platform" if not self.opts.snapshot_file
                           else f"reading {self.opts.snapshot_file}")
        self.snap = obtain_snapshot(None, None, self.opts.snapshot_file, self.opts.timeout)
        self.pci: List[str] = []
        if not self.opts.snapshot_file:
            self.pci = scan_pci(Root("/"))
        self.gpu = P.gpu_facts(self.snap, self.pci)
        p = self.snap.platform
        d = self.snap.driver
        text = (f"{p.distro_name or p.system or 'unknown system'} {p.machine}".strip()
                + f"; NVIDIA driver: {d.version or d.state.replace('_', ' ')}; "
                + (f"{self.gpu.why}" if self.gpu.present else "no NVIDIA GPU"))
        self.timings["probe"] = time.monotonic() - t0
        self.progress.step("probe", "ok", text, self.timings["probe"])
        self._status("probe", "ok", text, self.timings["probe"])

    def check(self) -> None:
        t0 = time.monotonic()
        self.report = build_report(self.snap)
        e, w = self.report.count("error"), self.report.count("warning")
        text = f"{e} error{'s' if e != 1 else ''}, {w} warning{'s' if w != 1 else ''}"
        if e:
            text += ": " + "; ".join(f"{f.id} {f.title}" for f in self.report.findings if f.severity == "error")[:200]
        self.timings["check"] = time.monotonic() - t0
        self.progress.step("check", "ok", text, self.timings["check"])
        self._status("check", "ok", text, self.timings["check"])

    def driver_gate(self) -> Optional[P.DriverStop]:
        stop = P.driver_stop(self.snap, self.report.findings, self.gpu)
        if stop is not None and self.opts.cpu:
            self.progress.echo(f"  note: {stop.reason}; --cpu: onboarding a CPU-only environment anyway")
            return None
        return stop

    def lock_step(self, target: P.Target, base: P.BasePython) -> None:
        t0 = time.monotonic()
        m = load_matrices()
        cpu = self.opts.cpu or not self.gpu.present
        where = f"snapshot {self.opts.snapshot_file}" if self.opts.snapshot_file else "this machine"
        c = P.lock_constraints(self.snap, m, self.opts.wishes, base.xy, cpu, self.opts.companions, where)
        result = resolve(c, m)
        if not result.ok:
            self._status("lock", "failed", "no combination fits")
            self.progress.step("lock", "failed", "no combination of builds fits this machine")
            raise StepFailed("onboarding stopped at step 'lock': " + render_clash(result, "requirements").strip())
        meta = Meta(command=P.lock_command(c, self.opts.wishes, self.opts.companions), envdoctor=__version__,
                    data_collected=m.collected, date=_today(), data_warnings=list(m.warnings),
                    conda_channels=list(m.conda))
        text = render(result, "requirements", meta)
        self.lock = result
        why = ("CPU builds: --cpu" if self.opts.cpu else "CPU builds: no NVIDIA GPU") if cpu else \
            f"for {', '.join(g.display() for g in c.gpus)}, driver {c.driver}"
        picks = [{"framework": p.framework, "version": p.version, "build": p.build, "kind": p.kind, "label": p.label,
                  "requirement": p.requirement, "cuda": p.cuda} for p in result.picks]
        self.plan = P.Plan(target=target, base=base, wishes=list(self.opts.wishes), cpu=cpu, gpu=self.gpu,
                           require_gpu=not cpu, lock_text=text, lock_summary=result.summary(), lock_picks=picks,
                           frameworks=[p.framework for p in result.picks])
        self.timings["lock"] = time.monotonic() - t0
        detail = f"{result.summary()} ({why})"
        self.progress.step("lock", "ok", detail, self.timings["lock"])
        self._status("lock", "ok", detail, self.timings["lock"])

    # -- the whole run
    def run(self) -> int:
        try:
            return self._run()
        finally:
            self.progress.close()
            if self.env_lock is not None:
                self.env_lock.release()

    def _run(self) -> int:
        o = self.opts
        if o.env_dir and o.conda:
            raise BadInput("--env-dir and --conda exclude each other: a venv or a conda environment")
        which = {t: self.runner.which(t) for t in ("uv", "conda", "mamba")}
        tool, tool_path = P.choose_tool(o.installer, o.conda, which)
        if o.conda:
            if o.installer == "uv":
                raise BadInput("--installer uv makes a venv; it does not apply with --conda")
            target = P.Target(kind="conda", tool=tool, tool_path=tool_path, name=o.conda)
            target.path = conda_prefix(self.runner, tool_path, o.conda) or ""
        else:
            target = P.Target(kind="venv", tool=tool, tool_path=tool_path, path=os.path.abspath(o.env_dir or ".venv"))
        if not (o.dry_run or o.emit_script):  # two runs never change one environment at once
            self.env_lock = EnvLock(target)
            self.env_lock.acquire()
        situation = existing_env(target, o.force)  # before anything is printed: a refusal is one line
        base = base_python(self.runner, o.python)
        self.progress.echo(f"envdoctor onboard: {target.describe()}, Python {base.version} ({base.executable})")

        self.probe()
        self.check()
        stop = self.driver_gate()
        if stop is not None:
            self.progress.step("lock", "stopped", "the NVIDIA driver must be installed or repaired first")
            self.out(stop.render(o.rerun))
            return 1
        self.lock_step(target, base)
        plan = self.plan
        assert plan is not None
        plan.replace_existing = situation == "replace"

        if o.dry_run or o.emit_script:
            header = [f"machine: {self.step_status['probe']['detail']}", f"lock: {plan.lock_summary}",
                      f"environment: {target.describe()}"]
            script = P.render_script(plan, header)
            if o.emit_script:
                write_atomic(o.emit_script, script, force=o.force)
                kind, where = outfile.resolve(o.emit_script, force=True)
                if kind == "file":  # a device or FIFO written through keeps its mode
                    try:
                        os.chmod(where, 0o755 & ~outfile.umask())
                    except OSError:
                        pass
                self.progress.echo(f"envdoctor onboard: wrote {o.emit_script} (nothing else was changed)")
            else:
                self.out(script.rstrip("\n"))
            return 0

        if situation == "ours":
            st = State.read(os.path.join(target.path, P.STATE_FILE))
            assert st is not None
            self.state = st
            self.state.path = os.path.join(target.path, P.STATE_FILE)
            prev = self.state.step("create")
            if prev.get("status") == "ok" and prev.get("inputs") != P.inputs_hash(plan.create_inputs()):
                raise BadInput(f"{target.describe()} was made by an earlier onboarding with another interpreter or "
                               "installer; pass --force to recreate it")
        self.todo = todo = self._todo()
        if todo and not o.yes:
            self._confirm(plan, todo)

        # From here on the machine changes: the environment folder, the state and the log.
        if situation == "replace" and target.kind == "venv":
            self.backup = target.path + P.BACKUP_SUFFIX
            os.rename(target.path, self.backup)
            self.progress.echo(f"  --force: moved the existing environment to {self.backup} (deleted once this succeeds)")
        if situation == "replace" and target.kind == "conda":
            target.path = ""  # `conda create --yes` replaces it: the state and the log move in afterwards
        if target.kind == "venv":
            os.makedirs(target.path, exist_ok=True)
        if target.path:
            self._attach(target)
        self.state.data["target"] = {"kind": target.kind, "tool": target.tool, "path": target.path, "name": target.name,
                                     "base_python": base.executable, "python_version": base.version}
        for name in ("probe", "check", "lock"):
            self.state.record(name, "ok", duration_s=self.timings.get(name), detail=self.step_status[name]["detail"])
        if target.path:
            self._write_lock()

        self.create_step()
        if target.kind == "conda" and self.log.path is None:
            target.path = conda_prefix(self.runner, tool_path, target.name) or ""
            if not target.path:
                raise self._fail("create", f"`{tool} create` succeeded but no environment named {target.name} is listed")
            self._attach(target)
            self.state.save()
            self._write_lock()
        self.install_step()
        smoke_ok = self.smoke_step()
        self.report_step()
        if smoke_ok and self.backup:
            shutil.rmtree(self.backup, ignore_errors=True)
            self.progress.echo(f"  deleted the previous environment {self.backup}")
            self.backup = None
        return self._finish(smoke_ok)

    def _attach(self, target: P.Target) -> None:
        self.state.path = target.file(P.STATE_FILE)
        self.log.attach(target.file(P.LOG_FILE))
        self.state.data["log"] = self.log.path

    def _write_lock(self) -> None:
        assert self.plan is not None
        write_atomic(self.plan.lock_path, self.plan.lock_text)

    def _todo(self) -> List[str]:
        """The steps this run executes: those not finished with the same inputs, and every one after them."""
        assert self.plan is not None
        todo: List[str] = []
        for name in ("create", "install", "smoke"):
            done = self.state.done(name, self.plan.inputs(name))
            if name == "create" and done:
                done = bool(self.plan.target.python) and os.path.exists(self.plan.target.python)
            if todo or not done:
                todo.append(name)
        return todo

    def _confirm(self, plan: P.Plan, todo: Sequence[str]) -> None:
        what = f"{', '.join(todo)} {plan.target.describe()} with {plan.lock_summary}"
        try:
            interactive = sys.stdin.isatty()
        except (AttributeError, ValueError):
            interactive = False
        if not interactive:
            raise BadInput(f"onboarding would {what}: pass --yes to go ahead without a prompt "
                           "(or --dry-run to see the commands first)")
        if not self.confirm(f"envdoctor onboard: {what}. Go ahead?"):
            raise BadInput("onboarding cancelled; nothing was changed")

    def _skip(self, name: str) -> bool:
        if name not in self.todo:
            prev = self.state.step(name)
            self.progress.step(name, "skipped", "done in an earlier run; its inputs did not change")
            self._status(name, "skipped", "done in an earlier run; inputs unchanged", prev.get("duration_s"))
            return True
        return False

    def _command_step(self, name: str, argv: List[str], timeout: float, show: Callable[[str], bool]) -> None:
        assert self.plan is not None
        inputs = self.plan.inputs(name)
        self.progress.step(name, "running", P._q(argv))
        self.state.record(name, "running", inputs)
        t0 = time.monotonic()

        def on_line(text: str) -> None:
            if show(text):
                short = re.sub(r"\s+\(from .*\)$", "", text.strip())
                self.progress.echo(f"          {short[:150]}")

        try:
            res = run_logged(self.runner, self.log, argv, timeout, on_line)
        except (KeyboardInterrupt, SystemExit) as exc:  # Ctrl-C, or SIGTERM / SIGHUP (envdoctor.cli)
            secs = time.monotonic() - t0
            why = "interrupted (Ctrl-C)" if isinstance(exc, KeyboardInterrupt) else "stopped by a signal"
            self.state.record(name, "interrupted", inputs, duration_s=secs, detail=why)
            self.progress.step(name, "interrupted", f"interrupted; rerun the same command to continue (log: {self.log.path})")
            raise
        secs = time.monotonic() - t0
        if not res.ok:
            why = why_failed(res)
            self.state.record(name, "failed", inputs, duration_s=secs, detail=why)
            self._status(name, "failed", why, secs)
            self.progress.step(name, "failed", why, secs)
            if self.log.path is None:
                self.log.flush_to(os.path.abspath(f"envdoctor-onboard-{self.plan.target.name or 'env'}.log"))
            raise self._fail(name, why)
        self.state.record(name, "ok", inputs, duration_s=secs)
        self._status(name, "ok", "", secs)
        self.progress.step(name, "ok", "", secs)

    def create_step(self) -> None:
        assert self.plan is not None
        if self._skip("create"):
            return
        self._command_step("create", P.create_argv(self.plan.target, self.plan.base), P.TIMEOUT_CREATE,
                           lambda line: False)

    def install_step(self) -> None:
        assert self.plan is not None
        if self._skip("install"):
            return

        def show(line: str) -> bool:
            s = line.strip()
            return s.startswith(("Collecting ", "Installing collected", "Successfully installed", "Resolved ",
                                 "Prepared ", "Installed "))

        self._command_step("install", P.install_argv(self.plan.target, self.plan.lock_path), P.TIMEOUT_INSTALL, show)

    def smoke_step(self) -> bool:
        assert self.plan is not None
        plan = self.plan
        if self._skip("smoke"):
            self.smoke_run = SmokeRun.from_dict(self.state.step("smoke").get("result") or {})
            return True
        inputs = plan.inputs("smoke")
        names = ", ".join(plan.frameworks)
        self.progress.step("smoke", "running", f"{names} in {plan.target.python} (timeout {P.TIMEOUT_SMOKE:g} s each"
                           + (", --require-gpu)" if plan.require_gpu else ")"))
        self.state.record("smoke", "running", inputs)
        self.log.write(f"\n=== {_now()} smoke: {P._q(P.smoke_argv(plan.target, plan.frameworks, plan.require_gpu))}")
        on_event = None
        if not self.opts.quiet:
            on_event = SmokeProgress(sys.stderr, live=self.progress.live)
        t0 = time.monotonic()
        try:
            run = run_smoke(None, python=plan.target.python, frameworks=list(plan.frameworks), timeout=P.TIMEOUT_SMOKE,
                            require_gpu=plan.require_gpu, env=self.env, on_event=on_event)
        except KeyboardInterrupt:
            self.state.record("smoke", "interrupted", inputs, duration_s=time.monotonic() - t0, detail="interrupted (Ctrl-C)")
            self.progress.step("smoke", "interrupted", "interrupted; the smoke programs were killed")
            raise
        except EnvdoctorError as exc:
            secs = time.monotonic() - t0
            self.state.record("smoke", "failed", inputs, duration_s=secs, detail=str(exc))
            self.progress.step("smoke", "failed", str(exc), secs)
            raise self._fail("smoke", str(exc)) from None
        secs = time.monotonic() - t0
        self.smoke_run = run
        self.log.write(render_text(run))
        ok = run.exit_code() == 0
        summary = f"{sum(1 for f in run.frameworks if f.status not in ('failed', 'crashed', 'timeout'))} of " \
                  f"{len(run.frameworks)} frameworks passed" + ("" if not run.problems else "; " + "; ".join(run.problems))
        self.state.record("smoke", "ok" if ok else "failed", inputs, result=run.to_dict(), duration_s=secs,
                          detail=summary)
        self._status("smoke", "ok" if ok else "failed", summary, secs)
        self.progress.step("smoke", "ok" if ok else "failed", summary, secs)
        return ok

    def report_step(self) -> None:
        assert self.plan is not None
        t0 = time.monotonic()
        final_snap, final_report = self.snap, self.report
        try:  # the machine with the new environment's Python part: `envdoctor check --python ENV/bin/python`
            py = target_snapshot(self.plan.target.python, self.env)
            final_snap = copy.deepcopy(self.snap)
            final_snap.python = py.python
            final_report = build_report(final_snap)
        except Exception as exc:  # noqa: BLE001 - the report is still worth writing with the machine's facts
            self.log.write(f"=== report: the new environment could not be probed: {exc}")
        steps = []
        for name in P.STEPS[:-1]:
            s = self.step_status.get(name) or {"status": "not_run", "detail": "", "seconds": None}
            steps.append({"name": name, "title": P.STEP_TITLES[name], **s})
        ctx = R.context(plan=self.plan, snap=final_snap, report=final_report, smoke=self.smoke_run, steps=steps,
                        log_path=self.log.path or "", state_path=self.state.path or "",
                        rerun=self.opts.rerun, initial_findings=self.report.findings)
        md_path, html_path = self.plan.target.file(P.REPORT_MD), self.plan.target.file(P.REPORT_HTML)
        write_atomic(md_path, redact_output(R.render_markdown(ctx), final_snap))
        write_atomic(html_path, redact_output(R.render_html(ctx), final_snap, html=True))
        secs = time.monotonic() - t0
        self.state.record("report", "ok", duration_s=secs, detail=html_path, result={"markdown": md_path, "html": html_path})
        self.progress.step("report", "ok", html_path, secs)
        self.report_paths = (md_path, html_path)

    def _finish(self, smoke_ok: bool) -> int:
        assert self.plan is not None
        t = self.plan.target
        md, html = self.report_paths
        if smoke_ok:
            activate = f"source {t.path}/bin/activate" if t.kind == "venv" else f"conda activate {t.name}"
            self.out(f"envdoctor onboard: ready: {t.describe()} with {self.plan.lock_summary}\n"
                     f"  activate it: {activate}\n  report: {html}\n          {md}")
            return 0
        self.out(f"envdoctor onboard: the environment is installed but the smoke test failed (step 'smoke'); "
                 f"see {html} and the log {self.log.path}")
        if self.backup:
            self.out(f"  the previous environment is kept at {self.backup}")
        return 1


def _today() -> str:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch and epoch.strip().isdigit():
        return datetime.datetime.fromtimestamp(int(epoch), tz=datetime.timezone.utc).date().isoformat()
    return datetime.datetime.now(tz=datetime.timezone.utc).date().isoformat()
