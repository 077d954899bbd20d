"""Probing in a forked child (envdoctor/probefork.py): the same reports with and without the fork, on fake
machines and on the real framework interpreter; every way the child can fail gives the in-process result; BadInput
crosses over as the same one-line error; signals, SIGKILL and an early exit leave no child and no command behind.

The fake commands log their parent's PID: with the fork they are the child's, without it envdoctor's own, so each
test knows which path really ran."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import List, Tuple

import pytest

from envdoctor import cache, doctor, probefork, subproc
from envdoctor.errors import BadInput
from envdoctor.probes import binaries
from envdoctor.snapshot import Snapshot

from .cli_run import one_line_error, run
from .fakes import FIX, default_signals, make_exe, process_gone, wait_until, write

REPO = Path(__file__).resolve().parents[1]
NVCC = FIX / "cuda" / "nvcc_12.5.txt"  # real `nvcc -V` of CUDA 12.5
SMI = FIX / "nvidia" / "smi_535.247.01_a10g.txt"  # a real nvidia-smi table
OS_RELEASE = FIX / "platform" / "os-release-debian12"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the probing child is Linux only")


def _tools(tmp_path: Path, nvcc_first: str = "") -> Path:
    """Fake nvcc and nvidia-smi first on PATH, printing real outputs and logging their parent's PID to ppid.log;
    `nvcc_first`: shell run by the first nvcc only (the marker file `first` says it ran)."""
    bindir, log, first = tmp_path / "bin", tmp_path / "ppid.log", tmp_path / "first"
    make_exe(bindir / "nvcc", "\n".join([
        f'echo "$PPID nvcc $*" >> "{log}"',
        f'if [ ! -e "{first}" ]; then touch "{first}"; {nvcc_first or ":"}; fi',
        f'case "$1" in --version|-V) cat "{NVCC}";; *) exit 1;; esac']))
    make_exe(bindir / "nvidia-smi", f'echo "$PPID nvidia-smi $*" >> "{log}"\ncat "{SMI}"')
    return bindir


def _env(tmp_path: Path, bindir: Path, **extra: str) -> dict:
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}", PYTHONPATH=str(REPO),
               ENVDOCTOR_CACHE_DIR=str(tmp_path / "cache"), **extra)
    env.pop("ENVDOCTOR_NO_FORK", None)
    return env


def _run(args, env, cwd) -> Tuple[int, subprocess.CompletedProcess]:
    """(envdoctor's PID, the finished run) of `python -m envdoctor ARGS`."""
    proc = subprocess.Popen([sys.executable, "-m", "envdoctor", *args], env=env, cwd=str(cwd), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate(timeout=180)
    return proc.pid, subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _parents(tmp_path: Path, of: str = "") -> List[int]:
    """The parent PIDs the fake commands (`of` only: that one) logged since the last call."""
    log = tmp_path / "ppid.log"
    lines = [line.split() for line in (log.read_text().splitlines() if log.exists() else [])]
    log.unlink(missing_ok=True)
    return [int(line[0]) for line in lines if not of or line[1] == of]


def _steady(data):
    """A report or snapshot without what changes from run to run: timestamps and durations."""
    if isinstance(data, dict):
        return {k: _steady(v) for k, v in data.items() if k not in ("created", "duration_ms")}
    if isinstance(data, list):
        return [_steady(v) for v in data]
    return data


def _both(tmp_path: Path, args, env) -> Tuple[dict, dict]:
    """The JSON output of ARGS with the fork and without it (ENVDOCTOR_NO_FORK=1), each checked to have taken its
    path: the fake commands' parent is the child, or envdoctor itself. A first run fills the caches (the binaries
    probe's answers per file are part of the snapshot: `from_cache`)."""
    _run(args, env, tmp_path)
    _parents(tmp_path)
    outputs = []
    for no_fork in (False, True):
        pid, done = _run(args, dict(env, ENVDOCTOR_NO_FORK="1") if no_fork else env, tmp_path)
        assert done.returncode in (0, 1), done.stderr
        parents = set(_parents(tmp_path))
        assert parents, "no fake command ran"
        assert parents == {pid} if no_fork else pid not in parents and len(parents) == 1, (no_fork, pid, parents)
        outputs.append(json.loads(done.stdout))
    return outputs[0], outputs[1]


# --------------------------------------------------------------------------- the same reports


@pytest.fixture
def machine(tmp_path):
    """A fake machine: nvcc and nvidia-smi on PATH, a fake venv whose python is this interpreter, an image root."""
    bindir = _tools(tmp_path)
    venv_python = tmp_path / "venv" / "bin" / "python"
    venv_python.parent.mkdir(parents=True)
    venv_python.symlink_to(sys.executable)
    write(tmp_path / "venv" / "pyvenv.cfg", f"home = {Path(sys.executable).parent}\n")
    root = tmp_path / "root"
    write(root / "etc" / "os-release", OS_RELEASE.read_text())
    (tmp_path / "first").touch()  # no first-run action
    # a first run keeps no answer about files changed within the racy window: let the fake venv age past it, so
    # that the first run really fills the caches on a fast machine too
    time.sleep(cache.RACY_S + 0.1)
    return tmp_path, _env(tmp_path, bindir), venv_python, root


@pytest.mark.parametrize("case", ["check", "check --python", "check --root", "probe", "probe --python"])
def test_report_is_the_same_with_and_without_the_fork(machine, case):
    tmp, env, venv_python, root = machine
    command, _, option = case.partition(" ")
    args = [command, "--format", "json"] + {"": [], "--python": ["--python", str(venv_python)],
                                            "--root": ["--root", str(root)]}[option]
    forked, in_process = _both(tmp, args, env)
    assert _steady(forked) == _steady(in_process)
    snap = forked.get("snapshot", forked)
    assert [p["name"] for p in snap["probes"]] == [p["name"] for p in in_process.get("snapshot", in_process)["probes"]]


@pytest.mark.skipif(not os.environ.get("ENVDOCTOR_TEST_FW_PYTHON"), reason="needs ENVDOCTOR_TEST_FW_PYTHON")
@pytest.mark.parametrize("command", ["check", "probe"])
def test_framework_interpreter_report_is_the_same_with_and_without_the_fork(tmp_path, command):
    fw = os.environ["ENVDOCTOR_TEST_FW_PYTHON"]
    # both probe afresh: a kept answer (envdoctor.cache) says so in its evidence, and the second run would get one
    env = dict(_env(tmp_path, _tools(tmp_path)), ENVDOCTOR_NO_CACHE="1")
    (tmp_path / "first").touch()
    forked, in_process = _both(tmp_path, [command, "--python", fw, "--format", "json"], env)
    assert _steady(forked) == _steady(in_process)
    frameworks = {f["name"] for f in forked.get("snapshot", forked)["python"]["frameworks"]}
    assert {"torch", "tensorflow", "jax"} <= frameworks, frameworks


# --------------------------------------------------------------------------- the child fails: the in-process result


def test_a_child_killed_mid_run_gives_the_in_process_report(machine):
    tmp, env, venv_python, _ = machine
    args = ["check", "--python", str(venv_python), "--format", "json"]
    _run(args, dict(env, ENVDOCTOR_NO_FORK="1"), tmp)  # fills the caches
    _parents(tmp)
    pid, plain = _run(args, dict(env, ENVDOCTOR_NO_FORK="1"), tmp)
    assert set(_parents(tmp)) == {pid}
    (tmp / "first").unlink()
    _tools(tmp, nvcc_first="kill -KILL $PPID")  # the first nvcc kills whoever started it: the child
    pid, done = _run(args, env, tmp)
    assert done.returncode == plain.returncode, done.stderr
    parents = _parents(tmp)
    assert parents[0] != pid and parents[-1] == pid, parents  # the child ran (and died), then envdoctor probed
    assert process_gone(parents[0])
    assert _steady(json.loads(done.stdout)) == _steady(json.loads(plain.stdout))


def _spy_probe_here(monkeypatch, tmp_path, child_result=None):
    """doctor.probe_here logging the PID it runs in (the child's log lines survive it: a file); in the child it
    returns `child_result()` instead when given."""
    log, me, real = tmp_path / "probed.log", os.getpid(), doctor.probe_here

    def spy(*args, **kwargs):
        with open(log, "a") as fh:
            fh.write(f"{os.getpid()}\n")
        if child_result is not None and os.getpid() != me:
            return child_result()
        return real(*args, **kwargs)

    monkeypatch.setattr(doctor, "probe_here", spy)
    return lambda: [int(x) for x in log.read_text().split()] if log.exists() else []


def _pending_child() -> probefork.Child:
    assert probefork._PENDING is not None, "prefetch forked no child"
    return probefork._PENDING[1]


def _reaped(child: probefork.Child) -> bool:
    """Reaped (not even a zombie left). One that delivered its answer is reaped when it is done or at exit: that
    exit's end_all() runs first."""
    if child.delivered:
        probefork.end_all()
    return child.returncode is not None and not os.path.exists(f"/proc/{child.pid}")


@pytest.mark.parametrize("change", ["--python", "--timeout", "--kernels", "environment", "working directory"])
def test_other_arguments_or_environment_probe_in_process(tmp_path, monkeypatch, change):
    monkeypatch.delenv("ENVDOCTOR_NO_FORK", raising=False)
    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(tmp_path / "cache"))
    probed = _spy_probe_here(monkeypatch, tmp_path)
    other = tmp_path / "venv" / "bin" / "python"
    other.parent.mkdir(parents=True)
    other.symlink_to(sys.executable)
    doctor.prefetch(sys.executable, None, None, 10.0)
    child = _pending_child()
    args = {"python_path": sys.executable, "root_dir": None, "snapshot_file": None, "timeout": 10.0, "kernels": False}
    if change == "--python":
        args["python_path"] = str(other)
    elif change == "--timeout":
        args["timeout"] = 11.0
    elif change == "--kernels":
        args["kernels"] = True
    elif change == "environment":
        monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda"))
    else:
        monkeypatch.chdir(tmp_path)
    snap = doctor.obtain_snapshot(**args)
    assert os.getpid() in probed()  # probed here
    assert _reaped(child) and probefork._PENDING is None and not probefork._CHILDREN
    assert isinstance(snap, Snapshot) and snap.python.executable == str(other if change == "--python" else sys.executable)


def test_the_same_arguments_take_the_childs_snapshot(tmp_path, monkeypatch):
    monkeypatch.delenv("ENVDOCTOR_NO_FORK", raising=False)
    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(tmp_path / "cache"))
    probed = _spy_probe_here(monkeypatch, tmp_path)
    doctor.prefetch(sys.executable, None, None, 10.0)
    child = _pending_child()
    snap = doctor.obtain_snapshot(sys.executable, None, None, 10.0)
    assert probed() == [child.pid] and child.delivered and _reaped(child)
    assert isinstance(snap, Snapshot) and snap.python.version == "%d.%d.%d" % sys.version_info[:3]


@pytest.mark.parametrize("what", ["not a snapshot", "an exception", "unpicklable"])
def test_bad_data_or_a_failed_child_probes_in_process(tmp_path, monkeypatch, what):
    monkeypatch.delenv("ENVDOCTOR_NO_FORK", raising=False)
    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(tmp_path / "cache"))

    def child_result():
        if what == "an exception":
            raise RuntimeError("the child failed")
        return 42 if what == "not a snapshot" else Snapshot(envdoctor_version=lambda: None)  # type: ignore[arg-type]

    probed = _spy_probe_here(monkeypatch, tmp_path, child_result)
    doctor.prefetch(None, None, None, 10.0)
    child = _pending_child()
    snap = doctor.obtain_snapshot(None, None, None, 10.0)
    assert probed() == [child.pid, os.getpid()], probed()
    assert child.delivered == (what == "not a snapshot") and _reaped(child)
    assert child.delivered or child.returncode == 1
    assert isinstance(snap, Snapshot) and [p.name for p in snap.probes][:2] == ["python", "host"]


def test_a_stuck_child_is_ended_with_its_command_and_the_probes_run_in_process(tmp_path, monkeypatch):
    bindir = _tools(tmp_path, nvcc_first=f'echo $$ > "{tmp_path}/slow.pid"; exec sleep 120')
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ENVDOCTOR_NO_FORK", raising=False)
    monkeypatch.setattr(probefork, "stuck_after", lambda timeout: 1.5)
    doctor.prefetch(None, None, None, 60.0)
    child = _pending_child()
    assert wait_until((tmp_path / "slow.pid").exists, 60)
    snap = doctor.obtain_snapshot(None, None, None, 60.0)
    slow = int((tmp_path / "slow.pid").read_text())
    assert _reaped(child) and child.returncode != 0
    assert wait_until(lambda: process_gone(slow), 10), "the stuck child's command outlived it"
    parents = _parents(tmp_path)
    assert child.pid in parents and os.getpid() in parents  # the child started nvcc; then this process probed
    assert any(t.path == str(tmp_path) and t.version.startswith("12.5") for t in snap.toolkits), snap.toolkits


def test_a_childs_answer_comes_whole_however_long(monkeypatch):
    """The answer is framed by its length: one larger than a pipe's buffer comes whole; a child that fails before
    answering gives None; both are reaped."""
    monkeypatch.delenv("ENVDOCTOR_NO_FORK", raising=False)
    big = bytes(range(256)) * 1024  # 256 KiB
    child = probefork.fork(lambda: big, 30.0)
    assert child is not None and child.result() == big and child.delivered and _reaped(child)

    def fail() -> bytes:
        raise RuntimeError("no answer")

    child = probefork.fork(fail, 30.0)
    assert child is not None and child.result() is None and not child.delivered
    assert child.returncode == 1 and _reaped(child)


def test_the_collectors_objects_are_frozen_while_a_child_lives_and_thawed_after(monkeypatch):
    """gc.freeze() before the fork (fewer copied pages), gc.unfreeze() once the child answered or was ended; a
    process that froze objects itself keeps them frozen (nothing of its is thawed)."""
    import gc

    monkeypatch.delenv("ENVDOCTOR_NO_FORK", raising=False)
    assert gc.get_freeze_count() == 0
    for ending in ("answer", "end"):
        child = probefork.fork(lambda: b"ok", 30.0)
        assert child is not None and gc.get_freeze_count() > 0
        if ending == "answer":
            assert child.result() == b"ok"
        else:
            child.end()
        assert _reaped(child) and gc.get_freeze_count() == 0
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        child = probefork.fork(lambda: b"ok", 30.0)
        assert child is not None and child.result() == b"ok" and _reaped(child)
        assert 0 < gc.get_freeze_count() <= frozen  # not thawed (a frozen object may still be freed by refcount)
    finally:
        gc.unfreeze()


def test_stuck_after_exceeds_the_probes_own_bound():
    for timeout in (0.1, 5.0, 60.0):
        assert probefork.stuck_after(timeout) > 2 * max(30.0, binaries.TIME_BOUND_FACTOR * timeout)


# --------------------------------------------------------------------------- BadInput crosses over


@pytest.mark.parametrize("target", ["missing", "not python"])
def test_bad_input_from_the_child_is_the_same_one_line_error(tmp_path, target):
    env = _env(tmp_path, _tools(tmp_path))
    python = tmp_path / "not-python"
    if target == "not python":
        make_exe(python, f'echo "$PPID python" >> "{tmp_path / "ppid.log"}"\necho "hello"')
    lines = []
    for no_fork in (False, True):
        pid, done = _run(["check", "--python", str(python)], dict(env, ENVDOCTOR_NO_FORK="1") if no_fork else env,
                         tmp_path)
        lines.append(one_line_error(done))
        runs = _parents(tmp_path, of="python")
        if target == "not python":  # run once, by the child (or by envdoctor itself without the fork)
            assert len(runs) == 1 and (runs[0] == pid) == no_fork, (no_fork, pid, runs)
    assert lines[0] == lines[1] and str(python) in lines[0]


def test_bad_input_in_process_is_the_same_exception(tmp_path, monkeypatch):
    monkeypatch.delenv("ENVDOCTOR_NO_FORK", raising=False)
    doctor.prefetch(str(tmp_path / "missing"), None, None, 5.0)
    child = _pending_child()
    with pytest.raises(BadInput) as forked:
        doctor.obtain_snapshot(str(tmp_path / "missing"), None, None, 5.0)
    assert child.delivered and _reaped(child)
    with pytest.raises(BadInput) as here:
        doctor.probe_here(str(tmp_path / "missing"), None, 5.0)
    assert str(forked.value) == str(here.value) and forked.value.exit_code == here.value.exit_code == 2


# --------------------------------------------------------------------------- when not to fork


def test_another_thread_means_no_fork_and_the_first_command_prefetch(tmp_path, monkeypatch):
    monkeypatch.delenv("ENVDOCTOR_NO_FORK", raising=False)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert not probefork.enabled()
        doctor.prefetch(sys.executable, None, None, 10.0)
        assert probefork._PENDING is None and subproc._STARTED  # the helper and compilers started here
    finally:
        stop.set()
        other.join()
        subproc.discard_started()
    monkeypatch.setenv("ENVDOCTOR_NO_FORK", "1")
    assert not probefork.enabled() and not probefork.start(None, None, 5.0)
    monkeypatch.delenv("ENVDOCTOR_NO_FORK")
    assert probefork.enabled() == sys.platform.startswith("linux")
    doctor.prefetch(None, None, str(tmp_path / "snap.json"), 5.0)  # --snapshot never forks
    assert probefork._PENDING is None


def test_one_cpu_means_no_fork(monkeypatch):
    monkeypatch.delenv("ENVDOCTOR_NO_FORK", raising=False)
    assert probefork.enabled()
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})  # taskset -c 0
    assert not probefork.enabled() and not probefork.start(None, None, 5.0)


def test_a_second_prefetch_for_the_same_keeps_its_child(monkeypatch):
    """An early prefetch (right after the command line) and the command's own: one child."""
    monkeypatch.delenv("ENVDOCTOR_NO_FORK", raising=False)
    doctor.prefetch(sys.executable, None, None, 10.0)
    first = _pending_child()
    doctor.prefetch(sys.executable, None, None, 10.0)
    assert _pending_child() is first and first.returncode is None
    doctor.prefetch(None, None, None, 10.0)  # another --python: the first child is ended, a new one probes
    second = _pending_child()
    assert second is not first and _reaped(first)
    probefork.discard()
    assert _reaped(second)


def test_an_uncollected_child_is_ended_and_reaped(monkeypatch):
    monkeypatch.delenv("ENVDOCTOR_NO_FORK", raising=False)
    doctor.prefetch(None, None, None, 10.0)
    child = _pending_child()
    assert probefork.end_all() == 1  # what runs at exit and from subproc.shutdown
    assert _reaped(child)
    probefork.discard()
    assert probefork._PENDING is None and not probefork._CHILDREN


def test_the_child_flushes_no_buffered_output_and_runs_no_exit_handler(machine):
    """Output buffered before the fork, and the atexit handlers, are this process's alone: once each."""
    tmp, env, _, _ = machine
    marks = tmp / "atexit.log"
    prelude = (f"import atexit, os, sys\nsys.stdout.write('BUFFERED-BEFORE-THE-FORK\\n')\n"
               f"open({str(tmp / 'pid')!r}, 'w').write(str(os.getpid()))\n"
               f"atexit.register(lambda: open({str(marks)!r}, 'a').write('exit\\n'))\n")
    done = run("check", "--format", "json", prelude=prelude, env=env, cwd=str(tmp))
    assert done.returncode in (0, 1), done.stderr
    assert done.stdout.count("BUFFERED-BEFORE-THE-FORK") == 1 and marks.read_text() == "exit\n"
    parents = set(_parents(tmp))
    assert len(parents) == 1 and int((tmp / "pid").read_text()) not in parents  # probed by the child
    assert done.stdout.count('"findings"') == 1


def test_the_modules_imported_before_the_fork_are_ones_both_sides_import(machine):
    """probefork.SHARED: each is imported by the probes (an in-process `probe`) and by judging (`check --snapshot`),
    neither of which had it at the start; so importing it once before the fork only saves the second import."""
    tmp, env, _, _ = machine
    record = ("import atexit, json, os, sys\nfirst = set(sys.modules)\n"
              "atexit.register(lambda: open(os.environ['MODULES_OUT'], 'w').write(json.dumps(sorted(set(sys.modules)"
              " - first))))\n")
    snap = tmp / "snap.json"
    got = {}
    for name, args, extra in (("probes", ["probe", "--format", "json", "-o", str(snap)], {"ENVDOCTOR_NO_FORK": "1"}),
                              ("judging", ["check", "--snapshot", str(snap), "--format", "json"], {})):
        out = tmp / f"{name}.json"
        done = run(*args, prelude=record, env=dict(env, MODULES_OUT=str(out), **extra), cwd=str(tmp))
        assert done.returncode in (0, 1), done.stderr
        got[name] = set(json.loads(out.read_text()))
    for name in ("probes", "judging"):
        assert not set(probefork.SHARED) - got[name], (name, sorted(set(probefork.SHARED) - got[name]))


# --------------------------------------------------------------------------- signals, SIGKILL, an early exit


def _hanging_smi(tmp_path: Path) -> Tuple[Path, dict]:
    """A fake nvidia-smi that notes its PID and its parent's, then hangs (a GPU fallen off the bus)."""
    info = tmp_path / "smi.pids"
    make_exe(tmp_path / "bin" / "nvidia-smi", f'echo "$$ $PPID" > "{info}.tmp"; mv "{info}.tmp" "{info}"; exec sleep 300')
    return info, _env(tmp_path, tmp_path / "bin")


def _start(tmp_path: Path, env: dict, *args: str, **popen) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "envdoctor", *args], env=env, cwd=str(tmp_path), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=default_signals, **popen)


def _smi_and_child(proc: subprocess.Popen, info: Path) -> Tuple[int, int]:
    if not wait_until(info.exists, 120):
        proc.kill()
        pytest.fail("the fake nvidia-smi never started: " + proc.communicate()[1])
    smi, parent = (int(x) for x in info.read_text().split())
    assert parent != proc.pid, "nvidia-smi was not started by a forked child"
    return smi, parent


def _cleanup(*pids: int) -> None:
    for pid in pids:
        if not process_gone(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGINT, 130)])
def test_a_signal_to_envdoctor_ends_the_child_and_its_commands(tmp_path, sig, code):
    info, env = _hanging_smi(tmp_path)
    proc = _start(tmp_path, env, "check", "--timeout", "300")
    smi, child = _smi_and_child(proc, info)
    proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=60)
        assert wait_until(lambda: process_gone(smi) and process_gone(child), 10), "the child or its command lived on"
    finally:
        _cleanup(smi, child)
    assert proc.returncode == code, err
    assert len([ln for ln in err.splitlines() if ln.strip()]) == 1 and "Traceback" not in err, err


def test_ctrl_c_reaches_both_and_ends_both(tmp_path):
    """A terminal's Ctrl-C goes to the whole process group: envdoctor and its child both see SIGINT."""
    info, env = _hanging_smi(tmp_path)
    proc = _start(tmp_path, env, "check", "--timeout", "300", start_new_session=True)
    smi, child = _smi_and_child(proc, info)
    os.killpg(proc.pid, signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=60)
        assert wait_until(lambda: process_gone(smi) and process_gone(child), 10), "the child or its command lived on"
    finally:
        _cleanup(smi, child)
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err


def test_sigkill_of_envdoctor_ends_the_child_even_without_the_watchdog(tmp_path):
    """SIGKILL cannot be handled: the child sees its parent's pipe close and kills its commands itself."""
    info, env = _hanging_smi(tmp_path)
    proc = _start(tmp_path, dict(env, ENVDOCTOR_NO_WATCHDOG="1"), "check", "--timeout", "300")
    smi, child = _smi_and_child(proc, info)
    proc.kill()
    proc.communicate(timeout=60)
    try:
        assert wait_until(lambda: process_gone(smi) and process_gone(child), 10), "the child or its command lived on"
    finally:
        _cleanup(smi, child)


def test_an_early_exit_after_prefetch_leaves_no_child(tmp_path):
    """A usage error after prefetch (a bad --only): the child, started, is ended and reaped at exit."""
    info, env = _hanging_smi(tmp_path)
    pid_file = tmp_path / "child.pid"
    prelude = ("import envdoctor.probefork as pf\n_fork = pf.fork\n"
               "def fork(*a, **k):\n    c = _fork(*a, **k)\n"
               f"    open({str(pid_file)!r}, 'w').write(str(c.pid) if c else '')\n    return c\npf.fork = fork\n")
    done = subprocess.run([sys.executable, "-c", prelude + "import sys\nfrom envdoctor.entry import main\n"
                           "sys.argv[0] = 'envdoctor'\nmain(sys.argv[1:])", "check", "--timeout", "300", "--only",
                           "NO-SUCH-RULE"], env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "NO-SUCH-RULE" in done.stderr, done.stderr
    child = int(pid_file.read_text())
    smi = int(info.read_text().split()[0]) if info.exists() else None
    try:
        assert process_gone(child) and (smi is None or wait_until(lambda: process_gone(smi), 10))
    finally:
        _cleanup(child, *([smi] if smi else []))
