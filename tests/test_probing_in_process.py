"""Probing runs in envdoctor's own process, through the real CLI: the probes' first commands start early
(envdoctor.doctor.prefetch) and the probes collect them, so each command runs once, started by envdoctor itself;
however a run ends (Ctrl-C to its process group, a usage error found after the prefetch, a command past its timeout,
a --python that is not Python) the error is one line and no command it started is left running.

The fake commands log their parent's PID, so each test knows who started them and how often."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import List, Tuple

import pytest

from .cli_run import one_line_error, run
from .fakes import FIX, default_signals, make_exe, process_gone, wait_until

REPO = Path(__file__).resolve().parents[1]
NVCC = FIX / "cuda" / "nvcc_12.5.txt"  # real `nvcc -V` of CUDA 12.5
SMI = FIX / "nvidia" / "smi_535.247.01_a10g.txt"  # a real nvidia-smi table
GCC = FIX / "breadth" / "gcc_12.2.0_version.txt"  # real `gcc --version`

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX signals, process groups and /bin/sh fakes")


def _tools(tmp_path: Path, nvcc: str = "") -> Path:
    """Fake nvcc, nvidia-smi, gcc and a python (this interpreter behind a shell script) first on PATH, each logging
    "PARENT-PID NAME ARGS" to ppid.log; `nvcc`: shell nvcc runs before it answers."""
    bindir, log = tmp_path / "bin", tmp_path / "ppid.log"
    make_exe(bindir / "nvcc", "\n".join([
        f'echo "$PPID nvcc $*" >> "{log}"', nvcc or ":",
        f'case "$1" in --version|-V) cat "{NVCC}";; *) exit 1;; esac']))
    make_exe(bindir / "nvidia-smi", f'echo "$PPID nvidia-smi $*" >> "{log}"\ncat "{SMI}"')
    make_exe(bindir / "gcc", f'echo "$PPID gcc $*" >> "{log}"\ncat "{GCC}"')
    make_exe(bindir / "python", f'echo "$PPID python" >> "{log}"\nexec "{sys.executable}" "$@"')
    return bindir


def _env(tmp_path: Path, bindir: Path, **extra: str) -> dict:
    return dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}", PYTHONPATH=str(REPO),
                ENVDOCTOR_CACHE_DIR=str(tmp_path / "cache"), ENVDOCTOR_NO_CACHE="1", **extra)


def _logged(tmp_path: Path) -> List[Tuple[int, str]]:
    """(parent PID, name and arguments) of every fake command run since the last call."""
    log = tmp_path / "ppid.log"
    lines = log.read_text().splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    return [(int(pid), rest) for pid, _, rest in (line.partition(" ") for line in lines)]


def _start(tmp_path: Path, env: dict, *args: str, **popen) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "envdoctor", *args], env=env, cwd=str(tmp_path), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=default_signals, **popen)


def _cleanup(*pids: int) -> None:
    for pid in pids:
        if not process_gone(pid):
            os.kill(pid, signal.SIGKILL)


# A prelude that writes the PID of every command envdoctor starts to $STARTED_LOG as it starts it (Runner._spawn:
# the one place a command starts), so a test knows each one, even one killed before it could say anything itself.
_RECORD_STARTS = """import os
from envdoctor import subproc
_spawn = subproc.Runner._spawn
def _recorded(self, argv, env, with_stdin):
    started = _spawn(self, argv, env, with_stdin)
    if not isinstance(started, subproc.CmdResult):
        with open(os.environ["STARTED_LOG"], "a") as fh:
            fh.write("%d %s\\n" % (started[0].pid, os.path.basename(argv[0])))
    return started
subproc.Runner._spawn = _recorded
"""


def _started(log: Path) -> List[Tuple[int, str]]:
    lines = log.read_text().splitlines() if log.exists() else []
    return [(int(pid), name) for pid, _, name in (line.partition(" ") for line in lines)]


# --------------------------------------------------------------------------- each command once, by envdoctor


@pytest.mark.parametrize("args", [["check"], ["check", "--python", "PYTHON"], ["probe", "--python", "PYTHON"]])
def test_each_command_runs_once_started_by_envdoctor_itself(tmp_path, args):
    """The commands prefetch starts (the Python helper, the compilers' --version) are collected by the probes, not
    run again: a run runs every fake command as often as one whose prefetch is turned off, and envdoctor itself
    is the parent of each."""
    bindir = _tools(tmp_path)
    env = _env(tmp_path, bindir)
    args = [str(bindir / "python") if a == "PYTHON" else a for a in args] + ["--format", "json"]
    no_prefetch = "import envdoctor.doctor as d\nd.prefetch = lambda *a, **k: None\n"
    counts = []
    for prelude in ("import envdoctor.doctor as d\n", no_prefetch):  # the same door, prefetch on and off
        done = run(*args, prelude=prelude, env=env, cwd=str(tmp_path))
        assert done.returncode in (0, 1), done.stderr
        json.loads(done.stdout)
        counts.append(sorted(what for _, what in _logged(tmp_path)))
    assert counts[0] == counts[1], counts
    assert any(what == "gcc --version" for what in counts[0]), counts[0]  # a prefetched command ran, once
    assert counts[0].count("gcc --version") == 1
    if "--python" in args:
        assert counts[0].count("python") == counts[1].count("python") >= 1


def test_a_check_runs_its_commands_as_its_own_children(tmp_path):
    """No process between envdoctor and its commands: each fake command's parent is envdoctor's PID."""
    bindir = _tools(tmp_path)
    proc = _start(tmp_path, _env(tmp_path, bindir), "check", "--python", str(bindir / "python"), "--format", "json")
    out, err = proc.communicate(timeout=180)
    assert proc.returncode in (0, 1), err
    json.loads(out)
    logged = _logged(tmp_path)
    names = {what.split()[0] for _, what in logged}
    assert {"nvcc", "nvidia-smi", "gcc", "python"} <= names, logged
    assert {pid for pid, _ in logged} == {proc.pid}, (proc.pid, logged)


# --------------------------------------------------------------------------- Ctrl-C, an early exit, a timeout


def _hanging_smi(tmp_path: Path) -> Tuple[Path, dict]:
    """A fake nvidia-smi that notes its PID and its parent's, then hangs (a GPU fallen off the bus)."""
    info = tmp_path / "smi.pids"
    make_exe(tmp_path / "bin" / "nvidia-smi", f'echo "$$ $PPID" > "{info}.tmp"; mv "{info}.tmp" "{info}"; exec sleep 300')
    return info, _env(tmp_path, tmp_path / "bin")


def test_ctrl_c_to_the_process_group_ends_envdoctor_and_its_command(tmp_path):
    """A terminal's Ctrl-C goes to envdoctor's process group; its commands run in sessions of their own and never
    see it: envdoctor kills them, says one line and exits 130."""
    info, env = _hanging_smi(tmp_path)
    proc = _start(tmp_path, env, "check", "--timeout", "300", start_new_session=True)
    if not wait_until(info.exists, 120):
        proc.kill()
        pytest.fail("the fake nvidia-smi never started: " + proc.communicate()[1])
    smi, parent = (int(x) for x in info.read_text().split())
    assert parent == proc.pid
    os.killpg(proc.pid, signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=60)
        assert wait_until(lambda: process_gone(smi), 10), "nvidia-smi outlived envdoctor"
    finally:
        _cleanup(smi)
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err
    assert len([ln for ln in err.splitlines() if ln.strip()]) == 1, err


def test_a_usage_error_after_the_prefetch_leaves_no_command_running(tmp_path):
    """A bad --only is found once the prefetched commands started (the rules are selected after the prefetch): the
    run fails in one line and every command it started, hanging ones included, is gone by the time it exited."""
    bindir = tmp_path / "bin"
    make_exe(bindir / "gcc", "exec sleep 300")  # prefetched (`gcc --version`), and it never answers
    log = tmp_path / "started.log"
    env = _env(tmp_path, bindir, STARTED_LOG=str(log), ENVDOCTOR_NO_WATCHDOG="1")  # envdoctor's own exit, alone
    done = run("check", "--timeout", "300", "--only", "NO-SUCH-RULE", prelude=_RECORD_STARTS, env=env,
               cwd=str(tmp_path))
    assert "NO-SUCH-RULE" in one_line_error(done)
    started = _started(log)
    try:
        assert "gcc" in {name for _, name in started}, started  # the prefetch ran before the usage error
        assert all(process_gone(pid) for pid, _ in started), [(p, n) for p, n in started if not process_gone(p)]
    finally:
        _cleanup(*(pid for pid, _ in started))


def test_a_command_past_its_timeout_is_killed_and_the_report_still_comes(tmp_path):
    """A hanging nvcc is killed at --timeout, each time it is asked; the run ends within a few timeouts with its
    report, which says so, and no nvcc is left running."""
    pid_file = tmp_path / "nvcc.pids"
    bindir = _tools(tmp_path, nvcc=f'echo $$ >> "{pid_file}"; exec sleep 300')
    started = time.monotonic()
    proc = _start(tmp_path, _env(tmp_path, bindir), "probe", "--timeout", "2", "--format", "json")
    out, err = proc.communicate(timeout=180)
    took = time.monotonic() - started
    assert proc.returncode == 0, err
    snap = json.loads(out)
    hung = [int(x) for x in pid_file.read_text().split()]
    try:
        assert hung and all(process_gone(pid) for pid in hung), "a timed-out nvcc is still running"
    finally:
        _cleanup(*hung)
    assert took < 60, took
    fake = [t for t in snap["toolkits"] if t["nvcc"] == str(bindir / "nvcc")]
    assert fake and fake[0]["version"] is None, snap["toolkits"]
    said = [e["excerpt"] for e in fake[0]["evidence"]]
    assert any(x.startswith("timeout:") and "no answer within 2 s (killed)" in x for x in said), said


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("target", ["missing", "not python"])
def test_a_python_that_is_not_python_is_one_line_naming_it(tmp_path, target):
    """`--python X` where X is missing or answers like no Python: exit 2, one line naming X; a not-Python X is run
    once (the prefetched helper is the one the probe collects), by envdoctor itself."""
    env = _env(tmp_path, _tools(tmp_path))
    python = tmp_path / "not-python"
    if target == "not python":
        make_exe(python, f'echo "$PPID not-python" >> "{tmp_path / "ppid.log"}"\necho "hello"')
    proc = _start(tmp_path, env, "check", "--python", str(python))
    out, err = proc.communicate(timeout=180)
    line = one_line_error(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    assert str(python) in line, line
    runs = [pid for pid, what in _logged(tmp_path) if what == "not-python"]
    assert runs == ([proc.pid] if target == "not python" else []), (proc.pid, runs)
